"""CLM's etcd stack (provisioner/clusterpy.go createOrUpdateEtcdStack), rendered when the deployment manages it.

Only for `zalando-aws` clusters (CLM's clusterpy provisioner) whose configuration has `cluster/etcd/stack.yaml`
(from the main source). As CLM: the cluster's values copied (before the cluster stack: no `ClusterStackOutputs`),
`etcd/files.yaml` rendered into an archive whose `encrypted` entries are KMS-encrypted with the key behind
`alias/etcd-cluster`, stored at `<local id>/etcd/<sha512 of the rendered files.yaml>.userdata` in the node-files
bucket (`values.S3GeneratedFilesPath`), then `etcd/stack.yaml` rendered with those values. The stack itself
(its name, tags and policy) is clm.stacks.etcd's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from botocore.exceptions import ClientError

from clm.errors import RenderError
from clm.render.account_lookups import ETCD_KEY_ALIAS
from clm.render.node_files import OUTPUTS_VALUE, FilesStore, archive_key, parse_files

ETCD_DIR = "cluster/etcd/"
ETCD_STACK = ETCD_DIR + "stack.yaml"
ETCD_FILES = ETCD_DIR + "files.yaml"
ETCD_PROVIDER = "zalando-aws"  # CLM's clusterpy provisioner alone creates the etcd stack
FILES_PATH = "S3GeneratedFilesPath"


def has_etcd_stack(provider: str, files: Mapping[str, bytes]) -> bool:
    """Whether a cluster of `provider` gets the etcd stack from a configuration with `files`."""
    return provider == ETCD_PROVIDER and ETCD_STACK in files


def etcd_values(
    render: Callable[[str, dict[str, Any]], str],
    files: Mapping[str, bytes],
    context: dict[str, Any],
    store: FilesStore,
    local_id: str,
) -> dict[str, Any]:
    """The values etcd/stack.yaml sees: the cluster's (a copy, without the cluster stack's outputs) and, when
    etcd/files.yaml exists, `S3GeneratedFilesPath` of its archive, stored by `store` with the etcd key (KMS
    Encrypt names it by its alias, as the run function's grant does: kms:RequestAlias)."""
    values = {key: value for key, value in context["values"].items() if key != OUTPUTS_VALUE}
    if ETCD_FILES in files:
        rendered = render(ETCD_FILES, {**context, "values": values})
        parsed = parse_files(rendered, ETCD_FILES, context["cluster"].id)
        try:
            values[FILES_PATH] = store(archive_key(local_id, "etcd", rendered), parsed, lambda: ETCD_KEY_ALIAS)
        except ClientError as exc:  # no key behind the alias, access denied: named, never a file's contents
            reason = f"cannot store the etcd files' archive (KMS key {ETCD_KEY_ALIAS}, S3): {exc}"
            raise RenderError(reason, ETCD_FILES, None, context["cluster"].id) from None
    return values
