"""Synthesize the CDK app in a child process, as the CDK CLI runs it (`python3 app.py` with CDK_OUTDIR and
CDK_CONTEXT_JSON, cdk.json's context merged under the caller's), and read the cloud assembly it writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
CDK_JSON = ROOT / "cdk.json"
# Assets stay where they are (the layer is ~150 MB): the assembly names their source paths instead of copies.
NO_STAGING = {"aws:cdk:disable-asset-staging": True}


class SynthError(RuntimeError):
    """The app failed to synthesize (the message carries the app's own error output)."""


@dataclass(frozen=True)
class Assembly:
    """One stack of a synthesized cloud assembly: its template and asset manifest."""

    directory: Path
    stack: str
    template: dict[str, Any]
    assets: dict[str, Any]
    bootstrap_version: int

    def file_assets(self) -> dict[str, dict[str, Any]]:
        """The asset manifest's file assets, by asset id."""
        return self.assets.get("files", {})


def synthesize(outdir: Path, stack: str, context: dict[str, Any] | None = None, timeout: float = 600) -> Assembly:
    """Run the app into `outdir` with cdk.json's context, `context` over it, and asset staging off."""
    merged = {**_cdk_json_context(), **(context or {}), **NO_STAGING}
    env = {
        **os.environ,
        "CDK_OUTDIR": str(outdir),
        "CDK_CONTEXT_JSON": json.dumps(merged),
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
    }
    result = subprocess.run(
        [sys.executable, str(APP)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise SynthError(f"{APP}: synthesis failed (exit {result.returncode}):\n{result.stderr.strip()[-4000:]}")
    return read_assembly(outdir, stack)


def read_assembly(outdir: Path, stack: str) -> Assembly:
    """The template and asset manifest of `stack` in the cloud assembly at `outdir`."""
    manifest = _json(outdir / "manifest.json")
    artifact = manifest.get("artifacts", {}).get(stack)
    if not artifact or artifact.get("type") != "aws:cloudformation:stack":
        raise SynthError(f"{outdir}: the cloud assembly has no stack {stack}")
    properties = artifact.get("properties", {})
    return Assembly(
        directory=outdir,
        stack=stack,
        template=_json(outdir / properties["templateFile"]),
        assets=_json(outdir / f"{stack}.assets.json"),
        bootstrap_version=int(properties.get("requiresBootstrapStackVersion", 6)),
    )


def _cdk_json_context() -> dict[str, Any]:
    return _json(CDK_JSON).get("context", {})


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SynthError(f"{path}: cannot read ({exc})") from None
