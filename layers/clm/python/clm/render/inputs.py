"""What a rendering may ask beyond the configuration tree and the registry: KMS, EC2, ACM, and where node files go.

Each input is optional; without one, only the templates that need it fail (naming what is missing), so that a
configuration renders offline (tests, `clm migrate` checks) as far as it can.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.render.account_lookups import AccountLookups
    from clm.render.lookups import Ec2Lookups
    from clm.render.node_files import FilesStore
    from clm.render.secrets import Decrypter


@dataclass(frozen=True)
class RenderInputs:
    """`decrypt` decrypts `aws:kms:` config items (clm.render.secrets.KmsDecrypter); `lookups` answers what templates
    ask EC2 (clm.render.lookups: amiID, instance types, the network; without it node pools have no
    `values.InstanceInfo`); `account` answers ACM and KMS (clm.render.account_lookups: the load balancer certificate,
    the etcd key); `files_store` stores node pools' bootstrap archives (clm.render.node_files; without it only their
    paths are computed); `etcd_store` stores the etcd files' archive when the deployment manages CLM's etcd stack
    (clm.render.etcd; without it no etcd stack is rendered); `list_clusters` lists the registry's clusters, for the
    cluster methods that read the others of its account (clm.render.account_clusters; called only if one is read)."""

    decrypt: Decrypter | None = None
    lookups: Ec2Lookups | None = None
    account: AccountLookups | None = None
    files_store: FilesStore | None = None
    etcd_store: FilesStore | None = None
    list_clusters: Callable[[], list[Cluster]] | None = None

    @classmethod
    def from_aws(
        cls,
        client: Callable[[str], Any],
        keys: Collection[str] | None,
        decrypt_client: Callable[[str], Any] | None = None,
    ) -> RenderInputs:
        """KMS, EC2, ACM through `client(service)` (each client made on first use only); `keys` are the KMS keys
        config items may be encrypted with (None: whatever the caller's IAM allows), decrypted through
        `decrypt_client` (default: `client`; the hub's, when `client` is a cluster's target's)."""
        from clm.render.account_lookups import AccountLookups
        from clm.render.lookups import Ec2Lookups
        from clm.render.secrets import KmsDecrypter

        decrypting = decrypt_client or client
        return cls(
            decrypt=KmsDecrypter(lambda: decrypting("kms"), keys),
            lookups=Ec2Lookups(lambda: client("ec2")),
            account=AccountLookups(lambda: client("acm"), lambda: client("kms")),
        )
