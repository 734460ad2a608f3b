"""KMS-encrypted config items, decrypted at render as Zalando CLM does (pkg/decrypter/decrypter.go, kms.go).

A cluster config item `aws:kms:<base64 ciphertext>` is decrypted with KMS Decrypt (the ciphertext names its key);
the plaintext is the item's value for the templates. Any other value is plain text. Here, unlike CLM, only keys
the deployment names may decrypt (CDK context `clm:decryptKeyArns`, granted to the run function alone), and a
refusal is a RenderError naming the cluster and the item. Plaintexts never leave the renderer except inside the
rendered documents: the stored rendering keeps the items' ciphertext (clm.render.renderer.RenderedCluster.at_rest)
and error messages are scrubbed of them (:func:`scrub`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

from clm.errors import RenderError

KMS_PREFIX = "aws:kms:"  # pkg/decrypter/kms.go AWSKMSSecretPrefix
DECRYPT_KEYS_ENV = "CLM_DECRYPT_KEY_ARNS"  # the run function's keys, comma-separated (infra.permissions)
CONTEXT_KEY = "clm:decryptKeyArns"


class Decrypter(Protocol):
    """Decrypts the ciphertext (base64, prefix removed) of one config item; RenderError when it cannot."""

    def __call__(self, cluster_id: str, item: str, ciphertext: str) -> str: ...


def is_encrypted(value: str) -> bool:
    """Whether a config item's value is KMS ciphertext for CLM."""
    return value.startswith(KMS_PREFIX)


def decrypt_items(
    items: Mapping[str, str], decrypt: Decrypter | None, cluster_id: str
) -> tuple[dict[str, str], dict[str, str]]:
    """`items` with encrypted values decrypted, and the encrypted ones as they were (name -> ciphertext)."""
    clear, encrypted = dict(items), {}
    for name, value in items.items():
        if not is_encrypted(value):
            continue
        if decrypt is None:
            raise RenderError(
                f"config item {name} is encrypted ({KMS_PREFIX}...), and this renderer has no KMS decrypter",
                cluster_id=cluster_id,
            )
        clear[name] = decrypt(cluster_id, name, value[len(KMS_PREFIX) :])
        encrypted[name] = value
    return clear, encrypted


class KmsDecrypter:
    """Decrypts with KMS; `keys` (key ARNs) are the only keys allowed, None allows what the caller's IAM allows.

    `kms` is a factory of the KMS client, called on the first encrypted item only.
    """

    def __init__(self, kms: Callable[[], Any], keys: Collection[str] | None):
        self._kms = kms
        self.keys = None if keys is None else frozenset(keys)

    def __call__(self, cluster_id: str, item: str, ciphertext: str) -> str:
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
            response = self._kms().decrypt(CiphertextBlob=blob)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            said = ": ".join(part for part in (error.get("Code"), error.get("Message")) if part)
            raise refuse(f"KMS refused ({said}); allowed keys: {self._allowed()}") from None
        if self.keys is not None and response.get("KeyId") not in self.keys:
            raise refuse(f"its key {response.get('KeyId')} is not one this deployment names ({self._allowed()})")
        try:
            return response["Plaintext"].decode()
        except UnicodeDecodeError:
            raise refuse("the plaintext is not UTF-8 text") from None

    def _allowed(self) -> str:
        return "any the caller may use" if self.keys is None else ", ".join(sorted(self.keys)) or "none"


def keys_from_env(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The key ARNs the deployment names (empty when it names none)."""
    return tuple(arn for arn in environ.get(DECRYPT_KEYS_ENV, "").split(",") if arn)


def scrub(message: str, plaintexts: Iterable[str]) -> str:
    """`message` with every plaintext (as is, and as `repr` shows it) replaced by a placeholder."""
    for text in sorted(set(plaintexts), key=len, reverse=True):
        if text:
            for shown in (text, repr(text)[1:-1]):
                message = message.replace(shown, "<decrypted config item>")
    return message
