"""moto's IAM lists its roles, instance profiles and groups as live views of its dicts, and looks one up by name by
iterating them: a thread creating one (CloudFormation making a cluster's node role or instance profile) while
another looks one up (another cluster's stack at the same time) failed that stack with "dictionary changed size
during iteration" (test_fleet_health_gate's six clusters provisioned at once). AWS's IAM has no such race: these
lists are copies."""

from __future__ import annotations

from clm_sandbox.patches._patching import replace

LISTS = {"get_roles": "roles", "get_instance_profiles": "instance_profiles", "list_groups": "groups"}


def install() -> None:
    """List copies, taken at once under the GIL (idempotent)."""
    from moto.iam.models import IAMBackend

    for method, attribute in LISTS.items():
        replace(IAMBackend, method, lambda self, attribute=attribute: list(getattr(self, attribute).values()))
