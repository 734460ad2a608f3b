"""Typed errors of the CLM core. Each names its culprit: cluster, file, line or field."""

from __future__ import annotations


def _located(message: str, *places: str | None) -> str:
    """`place: place: message`, leaving out the places not known."""
    return ": ".join([*(p for p in places if p), message])


class ClmError(Exception):
    """Base of every error CLM raises on purpose; `asl_name` is the Step Functions error name."""

    asl_name = "ClmError"


class ValidationError(ClmError):
    """Invalid registry data: a cluster or node pool field breaks a rule."""

    asl_name = "ValidationError"

    def __init__(self, problems: list[str], cluster_id: str | None = None, source: str | None = None):
        self.problems = problems
        self.cluster_id = cluster_id
        self.source = source
        super().__init__(_located("; ".join(problems), source, cluster_id and f"cluster {cluster_id}"))


class RegistryError(ClmError):
    """A registry operation failed: missing cluster, duplicate id, or a lost conditional write."""

    asl_name = "RegistryError"


class ClusterNotFound(RegistryError):
    """The cluster id is not in the registry."""

    asl_name = "ClusterNotFound"

    def __init__(self, cluster_id: str):
        self.cluster_id = cluster_id
        super().__init__(f"cluster {cluster_id} is not in the registry")


class LockHeld(RegistryError):
    """Another, still running execution holds the cluster's lock."""

    asl_name = "LockHeld"

    def __init__(self, cluster_id: str, holder: str):
        self.cluster_id = cluster_id
        self.holder = holder
        super().__init__(f"cluster {cluster_id} is locked by running execution {holder}")


class ConfigSourceError(ClmError):
    """The configuration source could not be read."""

    asl_name = "ConfigSourceError"


class RolloutPolicyError(ClmError):
    """An invalid rollout policy (cluster/rollout.yaml); names the file and, when known, the line."""

    asl_name = "RolloutPolicyError"

    def __init__(self, message: str, file: str, line: int | None = None):
        self.file = file
        self.line = line
        self.message = message
        super().__init__(_located(message, file + (f":{line}" if line else "")))


class RenderError(ClmError):
    """A template or rendered document is invalid; names the file and line when known."""

    asl_name = "RenderError"

    def __init__(self, message: str, file: str | None = None, line: int | None = None, cluster_id: str | None = None):
        self.file = file
        self.line = line
        self.cluster_id = cluster_id
        self.message = message
        position = file and file + (f":{line}" if line else "")
        super().__init__(_located(message, cluster_id and f"cluster {cluster_id}", position))
