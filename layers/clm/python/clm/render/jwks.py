"""CLM's `generateJWKSDocument` and `generateOIDCDiscoveryDocument` (provisioner/jwks.go): the JSON Web Key Set of
a cluster's service-account public key and the OpenID discovery document naming it, the JSON as Go writes it.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from clm.render.pem import (
    BIT_STRING,
    INTEGER,
    NULL,
    OID,
    RSA_ENCRYPTION,
    SEQUENCE,
    der_elements,
    der_sequence,
    pem_block,
    rsa_public_key_der,
)

# OIDs that x509.ParsePKIXPublicKey reads as a key of another kind: DSA, ECDSA, Ed25519, X25519.
OTHER_KEY_KINDS = {bytes.fromhex(oid) for oid in ("2a8648ce380401", "2a8648ce3d0201", "2b6570", "2b656e")}
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def go_json(value: Any, indent: int | None = 4) -> str:
    """json.MarshalIndent(value, "", "    ") (json.Marshal with `indent` None): Go's escapes (`<`, `>`, `&`,
    U+2028/9 as \\u; other text as is)."""
    separators = (",", ": ") if indent is not None else (",", ":")
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=False)
    return "".join(_HTML_ESCAPES.get(char, char) for char in text)


def _base64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class NotRSA(ValueError):
    """A public key of another kind than RSA."""


def _rsa_public_key(der: bytes) -> tuple[int, int]:
    """(n, e) of a PKIX public key, with x509.ParsePKIXPublicKey's errors; a key of another kind is not RSA."""
    fields = der_sequence(der, "public key")
    if len(fields) != 2 or fields[0][0] != SEQUENCE or fields[1][0] != BIT_STRING or not fields[1][1]:
        raise ValueError("x509: malformed public key")
    algorithm = der_elements(fields[0][1])
    oid = algorithm[0][1] if algorithm and algorithm[0][0] == OID else b""
    if oid in OTHER_KEY_KINDS:
        raise NotRSA("Public key was not RSA")
    if oid != RSA_ENCRYPTION:
        raise ValueError("x509: unknown public key algorithm")
    if algorithm[1:] != [(NULL, b"")]:
        raise ValueError("x509: RSA key missing NULL parameters")
    key = der_sequence(fields[1][1][1:], "RSA public key")
    if len(key) != 2 or any(tag != INTEGER or not value for tag, value in key):
        raise ValueError("x509: invalid RSA public key")
    n, e = (int.from_bytes(value, "big", signed=True) for _, value in key)
    if n <= 0:
        raise ValueError("x509: RSA modulus is not a positive number")
    if not 0 < e < 2**31:
        raise ValueError("x509: RSA public exponent is not a positive number")
    return n, e


def generate_jwks_document(service_account_key: str) -> str:
    """The key set `{"keys": [key, key without kid]}` of a PEM RSA public key (PKIX): RS256, `use` sig, `kid` the
    base64url SHA-256 of the key's DER (as the API server's)."""
    try:
        der = pem_block(service_account_key)
    except ValueError:
        raise ValueError("Error decoding serviceAccountKey") from None
    try:
        n, e = _rsa_public_key(der)
    except NotRSA:
        raise
    except ValueError as exc:
        raise ValueError(f"failed to parse public key: {exc}") from None
    key = {
        "alg": "RS256",
        "e": _base64url(e.to_bytes((e.bit_length() + 7) // 8, "big")),
        "kid": _base64url(hashlib.sha256(rsa_public_key_der(n, e)).digest()),
        "kty": "RSA",
        "n": _base64url(n.to_bytes((n.bit_length() + 7) // 8, "big")),
        "use": "sig",
    }
    return go_json({"keys": [key, {**key, "kid": ""}]})


def generate_oidc_discovery_document(api_server_url: str) -> str:
    """The OpenID provider metadata of an API server URL, its keys at `<url>/openid-configuration/keys.json`."""
    url = str(api_server_url)
    provider = {
        "issuer": url,
        "authorization_endpoint": "urn:kubernetes:programmatic_authorization",
        "jwks_uri": f"{url}/openid-configuration/keys.json",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": ["sub", "iss"],
    }
    return go_json(provider)
