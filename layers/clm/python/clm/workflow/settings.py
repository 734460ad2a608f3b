"""The deployment's settings, from the environment variables the CDK app gives every function."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from clm.errors import ClmError


class SettingsError(ClmError):
    """A required environment variable is missing."""

    asl_name = "SettingsError"


@dataclass(frozen=True)
class Settings:
    """Where the registry, the configuration and the stored renderings live."""

    registry_table: str
    config_source: str
    artefact_bucket: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Settings:
        """Read CLM_REGISTRY_TABLE, CLM_CONFIG_SOURCE and CLM_ARTEFACT_BUCKET."""
        names = {
            "registry_table": "CLM_REGISTRY_TABLE",
            "config_source": "CLM_CONFIG_SOURCE",
            "artefact_bucket": "CLM_ARTEFACT_BUCKET",
        }
        missing = [name for name in names.values() if not environ.get(name)]
        if missing:
            raise SettingsError(f"environment variable(s) not set: {', '.join(missing)}")
        return cls(**{field: environ[name] for field, name in names.items()})
