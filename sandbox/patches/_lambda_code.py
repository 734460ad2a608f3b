"""A moto Lambda function's code zip and its layers, unpacked once into a content-addressed cache."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clm_sandbox.controlplane import cache_root


class FunctionCodeError(RuntimeError):
    """The function's code cannot be run without Docker (no zip, an image, a missing layer)."""


@dataclass(frozen=True)
class FunctionCode:
    """Where a function's code lives on disk: its root (``/var/task``) and its layers' import paths."""

    root: Path
    layer_paths: tuple[Path, ...]

    @property
    def import_paths(self) -> list[Path]:
        """sys.path entries in Lambda's order: the function first, then layers (the last layer wins)."""
        return [self.root, *self.layer_paths]


def unpack(function: Any) -> FunctionCode:
    """Unpack a moto ``LambdaFunction``'s zip and its layers (cached by content hash)."""
    name = function.function_name
    if function.package_type != "Zip" or not function.code_bytes:
        raise FunctionCodeError(f"Lambda function {name}: only zip packages with code can run in the sandbox")
    root = _unpacked(function.code_bytes, f"Lambda function {name}")
    return FunctionCode(root=root, layer_paths=tuple(_layer_paths(function)))


def _layer_paths(function: Any) -> list[Path]:
    from moto.awslambda.utils import get_backend

    backend = get_backend(function.account_id, function.region)
    paths: list[Path] = []
    for layer in reversed(function.layers):
        version = backend.layers_versions_by_arn(layer["Arn"])
        if version is None or not version.code_bytes:
            raise FunctionCodeError(f"Lambda function {function.function_name}: layer {layer['Arn']} has no code")
        root = _unpacked(version.code_bytes, f"layer {layer['Arn']}")
        site = root / "python" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
        paths += [root / "python", site]
    return paths


def _unpacked(zip_bytes: bytes, what: str) -> Path:
    target = cache_root() / "lambda-code" / hashlib.sha256(zip_bytes).hexdigest()
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=".unpack-"))
    try:
        with zipfile.ZipFile(io.BytesIO(zip_bytes)) as archive:
            archive.extractall(staging)
    except zipfile.BadZipFile as exc:
        shutil.rmtree(staging)
        raise FunctionCodeError(f"{what}: code is not a zip file ({exc})") from exc
    try:
        os.rename(staging, target)
    except OSError:  # another process unpacked the same content first
        shutil.rmtree(staging)
    return target
