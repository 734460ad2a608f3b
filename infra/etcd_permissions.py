"""What CLM's etcd stack adds to the functions' permissions, only when the deployment manages it
(`clm:manageEtcdStack`; clm.render.etcd, clm.stacks.etcd).

The run function encrypts the etcd files' secret entries with the key behind `alias/etcd-cluster` (named by that
alias only: kms:RequestAlias) and uploads their archive to the node-files bucket (already granted for node pools'
archives). The stacks function reads and sets the etcd stack's policy, on the stacks named `etcd-cluster-*` only (CLM's
`etcd-cluster-etcd`, or the config item `etcd_stack_name`, which must start so: clm.stacks.etcd), and sets it only
while the stack carries `clm:managed-by` (as every change CLM makes to a stack); creating and updating it go through
the grants every CLM stack has. Both grants are cluster-side (infra.cluster_permissions).
"""

from __future__ import annotations

from aws_cdk import Stack

from infra.grantee import Grantee
from infra.tags import ETCD_KEY_ALIAS, MANAGED_BY_TAG

MANAGE_ETCD_ENV = "CLM_MANAGE_ETCD_STACK"  # clm.workflow.run_steps.MANAGE_ETCD_ENV
ETCD_STACK_PREFIX = "etcd-cluster-"  # clm.stacks.etcd.ETCD_STACK_PREFIX (CLM's etcd-cluster-etcd, etcd_stack_name)


def grant_etcd_encrypt(run: Grantee) -> None:
    """The run function's Encrypt with CLM's etcd key, named by its alias only."""
    run.allow(
        ["kms:Encrypt"],
        [Stack.of(run).format_arn(service="kms", resource="key", resource_name="*")],
        {"StringEquals": {"kms:RequestAlias": ETCD_KEY_ALIAS}},
        reason="CLM's etcd key is named by its alias only (kms:RequestAlias)",
    )


def grant_etcd_stack_policy(stacks: Grantee) -> None:
    """The stacks function's reading and setting of the etcd stack's policy (setting only while CLM owns it)."""
    etcd = Stack.of(stacks).format_arn(
        service="cloudformation", resource="stack", resource_name=f"{ETCD_STACK_PREFIX}*/*"
    )
    stacks.allow(["cloudformation:GetStackPolicy"], [etcd], reason="CLM's etcd stack keeps CLM's stack policy")
    stacks.allow(
        ["cloudformation:SetStackPolicy"],
        [etcd],
        {"Null": {f"aws:ResourceTag/{MANAGED_BY_TAG}": "false"}},
        reason=f"CLM's etcd stack, only while tagged {MANAGED_BY_TAG}",
    )
