"""`make demo`'s program runs end to end on a moto server and renders every example cluster."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.integration
def test_demo_runs_end_to_end():
    result = subprocess.run([sys.executable, "-m", "clm_sandbox.demo"], capture_output=True, text=True,
                            timeout=300, cwd=ROOT, check=False)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "demo finished" in result.stdout
    for local_id in ("kube-1", "kube-2"):
        folder = ROOT / ".demo" / "rendered" / local_id
        assert (folder / "cluster-stack.yaml").exists()
        assert (folder / "version.txt").read_text().count("#") == 1
