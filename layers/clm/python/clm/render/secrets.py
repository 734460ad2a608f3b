"""KMS-encrypted config items, decrypted at render as Zalando CLM does (pkg/decrypter/decrypter.go, kms.go).

A cluster config item `aws:kms:<base64 ciphertext>` is decrypted with KMS Decrypt (the ciphertext names its key);
the plaintext is the item's value for the templates. Any other value is plain text. Here, unlike CLM, only keys
the deployment names may decrypt (CDK context `clm:decryptKeyArns`, granted to the run function alone), and every
ciphertext is bound to its item by an encryption context (:func:`encryption_context`: the cluster and the item's
name for a registry item, the item's name for one of config-defaults.yaml), so that one cluster's ciphertext
pasted into another's item does not decrypt; `clm encrypt` makes them, `clm registry reencrypt` binds Zalando's
(made without context). A refusal is a RenderError naming the cluster and the item. Plaintexts never leave the
renderer except inside the rendered documents: the stored rendering keeps the items' ciphertext
(clm.render.renderer.RenderedCluster.at_rest) and error messages are scrubbed of them (clm.scrub).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from clm.errors import RenderError

if TYPE_CHECKING:
    from clm.model import Cluster
    from clm.render.manifests import Manifest
    from clm.render.renderer import RenderedCluster
    from clm.scrub import Scrubber

KMS_PREFIX = "aws:kms:"  # pkg/decrypter/kms.go AWSKMSSecretPrefix
DECRYPT_KEYS_ENV = "CLM_DECRYPT_KEY_ARNS"  # the run function's keys, comma-separated (infra.permissions)
CONTEXT_KEY = "clm:decryptKeyArns"
CLUSTER_KEY, ITEM_KEY = "clm:cluster-id", "clm:config-item"  # the encryption context's keys
EVERY_CLUSTER = "*"  # the cluster of a config-defaults.yaml item's context (no cluster id is "*")


class Decrypter(Protocol):
    """Decrypts the ciphertext (base64, prefix removed) of one config item of `cluster_id`, bound to `context` (see
    :func:`encryption_context`); RenderError when it cannot."""

    def __call__(self, cluster_id: str, item: str, ciphertext: str, context: Mapping[str, str]) -> str: ...


def encryption_context(cluster_id: str | None, item: str) -> dict[str, str]:
    """The encryption context of config item `item` of cluster `cluster_id` (from the registry) or, with None, of
    config-defaults.yaml (an item for every cluster reading the configuration)."""
    return {CLUSTER_KEY: cluster_id or EVERY_CLUSTER, ITEM_KEY: item}


def encrypt_command(context: Mapping[str, str]) -> str:
    """The `clm encrypt` command line that makes a ciphertext bound to `context`."""
    cluster, item = context[CLUSTER_KEY], context[ITEM_KEY]
    return f"clm encrypt --defaults {item}" if cluster == EVERY_CLUSTER else f"clm encrypt {cluster} {item}"


def is_encrypted(value: str) -> bool:
    """Whether a config item's value is KMS ciphertext for CLM."""
    return value.startswith(KMS_PREFIX)


def decrypt_items(
    items: Mapping[str, str], decrypt: Decrypter | None, cluster: Cluster
) -> tuple[dict[str, str], dict[str, str]]:
    """`items` (of `cluster`, defaults filled in) with encrypted values decrypted, and the encrypted ones as they were
    (name -> ciphertext); those the registry's cluster has are its own, the others come from config-defaults.yaml."""
    clear, encrypted = dict(items), {}
    for name, value in items.items():
        if not is_encrypted(value):
            continue
        if decrypt is None:
            raise RenderError(
                f"config item {name} is encrypted ({KMS_PREFIX}...), and this renderer has no KMS decrypter",
                cluster_id=cluster.id,
            )
        context = encryption_context(cluster.id if name in cluster.config_items else None, name)
        clear[name] = decrypt(cluster.id, name, value[len(KMS_PREFIX) :], context)
        encrypted[name] = value
    return clear, encrypted


class KmsDecrypter:
    """Decrypts with KMS; `keys` (key ARNs) are the only keys allowed, None allows what the caller's IAM allows.

    `kms` is a factory of the KMS client, called on the first encrypted item only.
    """

    def __init__(self, kms: Callable[[], Any], keys: Collection[str] | None):
        self._kms = kms
        self.keys = None if keys is None else frozenset(keys)

    def __call__(self, cluster_id: str, item: str, ciphertext: str, context: Mapping[str, str]) -> str:
        """The plaintext of one item (Go's `string(resp.Plaintext)`: UTF-8 text)."""

        def refuse(reason: str) -> RenderError:
            message = f"config item {item}: cannot decrypt its {KMS_PREFIX} value: {reason}"
            return RenderError(message, None, None, cluster_id)

        if self.keys is not None and not self.keys:
            raise refuse(f"this deployment names no KMS keys for config items (CDK context {CONTEXT_KEY})")
        try:
            blob = base64.b64decode(ciphertext, validate=True)
        except binascii.Error:
            raise refuse("the text after the prefix is not base64") from None
        from botocore.exceptions import ClientError

        try:
            response = self._kms().decrypt(CiphertextBlob=blob, EncryptionContext=dict(context))
        except ClientError as exc:
            error = exc.response.get("Error", {})
            said = ": ".join(part for part in (error.get("Code"), error.get("Message")) if part)
            if error.get("Code") == "InvalidCiphertextException":
                raise refuse(f"KMS refused ({said}): {unbound(context)}") from None
            raise refuse(f"KMS refused ({said}); allowed keys: {self._allowed()}") from None
        if self.keys is not None and response.get("KeyId") not in self.keys:
            raise refuse(f"its key {response.get('KeyId')} is not one this deployment names ({self._allowed()})")
        try:
            return response["Plaintext"].decode()
        except UnicodeDecodeError:
            raise refuse("the plaintext is not UTF-8 text") from None

    def _allowed(self) -> str:
        return "any the caller may use" if self.keys is None else ", ".join(sorted(self.keys)) or "none"


def seal(rendered: RenderedCluster, scrub: Scrubber) -> RenderedCluster:
    """`rendered` with its warnings scrubbed and each object's nodes holding decrypted items recorded (clm.sealed),
    for the steps that apply them; as it is when no item was decrypted."""
    if not scrub:
        return rendered
    from clm.sealed import sealed_paths

    def sealed(manifests: list[Manifest]) -> list[Manifest]:
        return [dataclasses.replace(m, sealed=sealed_paths(m.body, scrub)) for m in manifests]

    return dataclasses.replace(
        rendered,
        components=[dataclasses.replace(c, manifests=sealed(c.manifests)) for c in rendered.components],
        node_pool_manifests={pool: sealed(items) for pool, items in rendered.node_pool_manifests.items()},
        warnings=[scrub(warning) for warning in rendered.warnings],
    )


def keys_from_env(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The key ARNs the deployment names (empty when it names none)."""
    return tuple(arn for arn in environ.get(DECRYPT_KEYS_ENV, "").split(",") if arn)


def unbound(context: Mapping[str, str]) -> str:
    """Why KMS finds a ciphertext invalid for an item, and the way out."""
    bound = ", ".join(f"{key}={value}" for key, value in context.items())
    return (
        f"it is not bound to this item (encryption context {bound}): a ciphertext made for another cluster or item "
        f"is refused; make this item's with `{encrypt_command(context)}`, or bind one made without context "
        "(Zalando CLM's) with `clm registry reencrypt` (docs/migrating-from-zalando-clm.md)"
    )
