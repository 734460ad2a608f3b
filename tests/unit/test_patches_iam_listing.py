"""moto's IAM lookups by name iterate copies: a role or instance profile created while another thread looks one up
(two clusters' stacks at once) no longer fails the lookup with "dictionary changed size during iteration", as it
failed a fleet's provision in the suite."""

from __future__ import annotations

import json

import boto3
import pytest
from moto.iam.models import IAMBackend, iam_backends

from clm_sandbox.patches import iam_listing
from clm_sandbox.patches._patching import original

TRUST = json.dumps({"Version": "2012-10-17", "Statement": []})


def test_a_role_created_during_a_listing_does_not_fail_it(aws: boto3.Session) -> None:
    iam = aws.client("iam")
    iam.create_role(RoleName="first", AssumeRolePolicyDocument=TRUST)
    backend = iam_backends["123456789012"]["global"]
    iam_listing.install()
    with pytest.raises(RuntimeError, match="dictionary changed size during iteration"):  # moto's own
        for _ in original(IAMBackend, "get_roles")(backend):
            iam.create_role(RoleName="during-moto", AssumeRolePolicyDocument=TRUST)
    iam_listing.install()
    for name in ("roles", "instance_profiles"):
        for index, _ in enumerate(getattr(backend, f"get_{name}")()):
            iam.create_role(RoleName=f"during-{name}-{index}", AssumeRolePolicyDocument=TRUST)
            iam.create_instance_profile(InstanceProfileName=f"during-{name}-{index}")
    assert backend.get_role("during-roles-0").name == "during-roles-0"
    assert {group.name for group in backend.list_groups()} == set()
