"""`make demo`'s program, end to end as a user runs it: sandbox up, CLM deployed, kube-1 provisioned, a new AMI
rolled over every node with 0 PDB violations, the summary printed and the timeline written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.integration
def test_demo_provisions_and_rolls_the_example_cluster() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clm_sandbox.demo", "--wait-scale", "0.2"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    output = result.stdout
    assert result.returncode == 0, output[-4000:] + result.stderr[-2000:]
    assert "demo finished" in output
    assert "[default-worker] SUCCEEDED" in output and "3/3 nodes replaced" in output
    assert re.search(r"nodes replaced\s+│ 3 ", output), output[-3000:]
    assert re.search(r"PDB violations \(Ready web pods < 2\)\s+│ 0 \(lowest [23],", output), output[-3000:]
    assert '"level"' not in output  # the Lambdas' logs go to .demo/sandbox.log, not the terminal
    timeline = (ROOT / ".demo" / "roll-timeline.html").read_text()
    assert timeline.count("<title>drain:") == 3 and timeline.count("<title>boot:") == 3
