"""CLM's etcd stack (provisioner/clusterpy.go createOrUpdateEtcdStack), rendered when the deployment manages it.

Only for `zalando-aws` clusters (CLM's clusterpy provisioner) whose configuration has `cluster/etcd/stack.yaml`
(from the main source). As CLM: the cluster's values copied (before the cluster stack: no `ClusterStackOutputs`)
with `etcd_instance_type_info` (the config item `etcd_instance_type`'s InstanceInfo),
`etcd/files.yaml` rendered into an archive whose `encrypted` entries are KMS-encrypted with the key behind
`alias/etcd-cluster`, stored at `<local id>/etcd/<sha512 of the rendered files.yaml>.userdata` in the node-files
bucket (`values.S3GeneratedFilesPath`), then `etcd/stack.yaml` rendered with those values. The stack itself
(its name, tags and policy) is clm.stacks.etcd's.

Not provided: CLM's `populateEncryptedEtcdValues` (provisioner/legacy_etcd.go), Taupage-era values
`etcd_client_server_cert`, `etcd_client_server_key`, `etcd_client_ca_cert` and `etcd_scalyr_key` KMS-encrypted for
the launch template (re-using the ciphertext of the running one so that a run does not roll etcd). A template that
reads them fails, naming them, at its line; kubernetes-on-aws left Taupage and reads the config items in
etcd/files.yaml (`encrypted: true`), as this module supports.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from clm.errors import RenderError
from clm.render.account_lookups import ETCD_KEY_ALIAS
from clm.render.node_files import OUTPUTS_VALUE, FilesStore, archive_key, parse_files

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.render.lookups import Ec2Lookups

ETCD_DIR = "cluster/etcd/"
ETCD_STACK = ETCD_DIR + "stack.yaml"
ETCD_FILES = ETCD_DIR + "files.yaml"
ETCD_PROVIDER = "zalando-aws"  # CLM's clusterpy provisioner alone creates the etcd stack
FILES_PATH = "S3GeneratedFilesPath"
INSTANCE_TYPE_ITEM, INSTANCE_INFO = "etcd_instance_type", "etcd_instance_type_info"
TAUPAGE_VALUES = ("etcd_client_server_cert", "etcd_client_server_key", "etcd_client_ca_cert", "etcd_scalyr_key")
TAUPAGE_REASON = (
    "values.{name} is CLM's Taupage-era encrypted etcd value (populateEncryptedEtcdValues), which CLM here does "
    "not provide: read cluster.config_items.{name} in cluster/etcd/files.yaml (encrypted: true), as "
    "kubernetes-on-aws does since it left Taupage"
)


def has_etcd_stack(provider: str, files: Mapping[str, bytes]) -> bool:
    """Whether a cluster of `provider` gets the etcd stack from a configuration with `files`."""
    return provider == ETCD_PROVIDER and ETCD_STACK in files


def instance_values(lookups: Ec2Lookups | None, cluster: Cluster) -> dict[str, Any]:
    """`etcd_instance_type_info`: the info of the config item `etcd_instance_type` (CLM's InstanceInfo), described
    when a template reads it; without lookups or the item, reading it fails with the reason."""
    from clm.render.lookups import LazyInstanceInfo
    from clm.render.network_values import Unavailable

    name = cluster.config_items.get(INSTANCE_TYPE_ITEM)
    if lookups is None or not name:
        reason = "no EC2 lookups in this rendering" if lookups is None else f"no config item {INSTANCE_TYPE_ITEM}"
        return {INSTANCE_INFO: Unavailable(f"cannot compute values.{INSTANCE_INFO}: {reason}")}
    return {INSTANCE_INFO: LazyInstanceInfo(lookups, f"{INSTANCE_TYPE_ITEM} {name!r}", [str(name)], ())}


def etcd_values(
    render: Callable[[str, dict[str, Any]], str],
    files: Mapping[str, bytes],
    context: dict[str, Any],
    store: FilesStore,
    local_id: str,
) -> dict[str, Any]:
    """The values etcd/stack.yaml sees: the cluster's (a copy, without the cluster stack's outputs) and, when
    etcd/files.yaml exists, `S3GeneratedFilesPath` of its archive, stored by `store` with the etcd key (KMS
    Encrypt names it by its alias, as the run function's grant does: kms:RequestAlias); CLM's Taupage-era values
    fail with the reason when read (see the module's docstring)."""
    from clm.render.network_values import Unavailable
    from clm.stacks.etcd import etcd_stack_name

    try:
        etcd_stack_name(context["cluster"].config_items)  # a bad name fails the render, before any AWS call
    except ValueError as exc:
        raise RenderError(str(exc), cluster_id=context["cluster"].id) from None
    values = {key: value for key, value in context["values"].items() if key != OUTPUTS_VALUE}
    values.update({name: Unavailable(TAUPAGE_REASON.format(name=name)) for name in TAUPAGE_VALUES})
    if ETCD_FILES in files:
        rendered = render(ETCD_FILES, {**context, "values": values})
        parsed = parse_files(rendered, ETCD_FILES, context["cluster"].id)
        try:
            values[FILES_PATH] = store(archive_key(local_id, "etcd", rendered), parsed, lambda: ETCD_KEY_ALIAS)
        except ClientError as exc:  # no key behind the alias, access denied: named, never a file's contents
            reason = f"cannot store the etcd files' archive (KMS key {ETCD_KEY_ALIAS}, S3): {exc}"
            raise RenderError(reason, ETCD_FILES, None, context["cluster"].id) from None
    return values
