"""Who is calling: role sessions the sandbox hands to the code it runs (Lambda functions), and their policies.

A session is a real moto STS AssumeRole of the function's execution role, so requests carry the role's own
credentials as on AWS. Requests signed with such a session's key are judged, and so are those of any other session
of a role assumed through moto's STS (a node's instance role, as the node simulator assumes it to bootstrap a
node); the harness, the node simulator's own calls and the CLI keep calling with the sandbox's admin key.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from dataclasses import dataclass
from typing import Any

from clm_sandbox.iam.policy import Policy

_lock = threading.Lock()
_principals: dict[str, Principal] = {}
SESSION_KEY_PREFIX = "ASIA"  # AWS's (and moto's) temporary credentials
# The sandbox has no AWS Organizations: every account counts as a member of this one organization, so that
# aws:PrincipalOrgID conditions (a cross-account trust policy's usual guard) are judged, not refused.
ORGANIZATION_ID = "o-sandbox0000"


@dataclass(frozen=True)
class Principal:
    """An enforced role session: the role, the session (e.g. the function's name) and the account."""

    role_arn: str
    session_name: str
    account: str
    partition: str = "aws"

    @property
    def arn(self) -> str:
        """The session's ARN, as AWS names it in an AccessDenied message."""
        role_name = self.role_arn.rsplit("/", 1)[-1]
        return f"arn:{self.partition}:sts::{self.account}:assumed-role/{role_name}/{self.session_name}"

    def keys(self, region: str) -> dict[str, str]:
        """The global condition keys of the session's requests to ``region``, as AWS fills them for a role session."""
        return {
            "aws:principalarn": self.role_arn,  # the role's ARN, not the session's
            "aws:principalaccount": self.account,
            "aws:principaltype": "AssumedRole",
            "aws:principalorgid": ORGANIZATION_ID,
            "aws:requestedregion": region,
            # AWS SDKs always call over TLS; the sandbox's plain-HTTP endpoint stands in for AWS's HTTPS one.
            "aws:securetransport": "true",
        }


def role_session(role_arn: str, session_name: str, region: str) -> dict[str, str]:
    """Credentials (as environment variables) of a session of ``role_arn``; requests signed with them are judged
    against the role's policies. Reuses a live session of the same role and name."""
    from moto.sts.models import sts_backends
    from moto.utilities.utils import get_partition

    account = role_arn.split(":")[4]
    partition = get_partition(region)
    backend = sts_backends[account][partition]
    with _lock:
        for assumed in backend.assumed_roles:
            known = _principals.get(assumed.access_key_id)
            if known and known.role_arn == role_arn and known.session_name == session_name:
                return _environment(assumed)
        assumed = backend.assume_role(
            region_name=region,
            role_session_name=session_name[:64],
            role_arn=role_arn,
            policy=None,
            duration=43200,
            external_id=None,
        )
        _principals[assumed.access_key_id] = Principal(role_arn, session_name, account, partition)
        return _environment(assumed)


def principal(access_key_id: str) -> Principal | None:
    """The enforced session signing with ``access_key_id``, if any: one handed out here, or another session of a
    role assumed through moto's STS (their keys start with ASIA)."""
    known = _principals.get(access_key_id)
    if known is None and access_key_id.startswith(SESSION_KEY_PREFIX):
        known = _assumed(access_key_id)
    return known


def _assumed(access_key_id: str) -> Principal | None:
    from moto.sts.models import sts_backends

    for account in list(sts_backends):
        for backend in list(sts_backends[account].values()):
            assumed = backend.get_assumed_role_from_access_key(access_key_id)
            if assumed is not None:
                role_account, partition = assumed.role_arn.split(":")[4], assumed.role_arn.split(":")[1]
                found = Principal(assumed.role_arn, assumed.session_name, role_account, partition)
                with _lock:
                    return _principals.setdefault(access_key_id, found)
    return None


def role_policies(role_arn: str, partition: str = "aws") -> tuple[list[Policy], Policy | None]:
    """The role's identity policies (inline and attached managed ones) and its permissions boundary, from moto's
    IAM; a role that does not exist has none (every call is denied, as AWS would refuse the session)."""
    backend, role = _role(role_arn, partition)
    if role is None:
        return [], None
    identity = [Policy(f"{role.name}/{name}", _document(text)) for name, text in role.policies.items()]
    identity += [Policy(policy.name, _managed_document(policy)) for policy in role.managed_policies.values()]
    boundary = None
    if role.permissions_boundary_arn:
        try:
            managed = backend.get_policy(role.permissions_boundary_arn)
        except Exception:  # a boundary that does not exist allows nothing
            boundary = Policy(role.permissions_boundary_arn, {"Statement": []})
        else:
            boundary = Policy(managed.name, _managed_document(managed))
    return identity, boundary


def trust_policy(role_arn: str, partition: str = "aws") -> Policy | None:
    """The role's trust policy (AssumeRolePolicyDocument) from moto's IAM of its account; None if no such role."""
    _, role = _role(role_arn, partition)
    if role is None:
        return None
    return Policy(f"{role.name} (trust policy)", _document(role.assume_role_policy_document))


def _role(role_arn: str, partition: str) -> tuple[Any, Any]:
    """moto's IAM backend of the role's account, and the role (None if it does not exist)."""
    from moto.iam.models import NotFoundException, iam_backends

    backend = iam_backends[role_arn.split(":")[4]][partition]
    try:
        return backend, backend.get_role_by_arn(role_arn)
    except NotFoundException:
        return backend, None


def _environment(assumed: Any) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": assumed.access_key_id,
        "AWS_SECRET_ACCESS_KEY": assumed.secret_access_key,
        "AWS_SESSION_TOKEN": assumed.session_token,
    }


def _managed_document(policy: Any) -> dict[str, Any]:
    version = next(v for v in policy.versions if v.is_default)
    return _document(version.document)


def _document(text: str | dict[str, Any]) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(urllib.parse.unquote(text))
