"""CLM's `publicKey` and `certificateExpiry` (provisioner/template.go): the PEM public key of a PKCS#1 RSA private
key, and the notAfter time of an X.509 certificate, read with a small DER reader (no crypto library in the layer).
"""

from __future__ import annotations

import base64
import binascii
import re
import textwrap
from datetime import UTC, datetime

_PEM = re.compile(r"-----BEGIN ([^\n]*?)-----[ \t]*\r?\n(.*?)-----END \1-----", re.DOTALL)
SEQUENCE, INTEGER, BIT_STRING, NULL, OID = 0x30, 0x02, 0x03, 0x05, 0x06
UTC_TIME, GENERALIZED_TIME = 0x17, 0x18
RSA_ENCRYPTION = bytes.fromhex("2a864886f70d010101")  # 1.2.840.113549.1.1.1


def pem_block(text: str) -> bytes:
    """The bytes of the first PEM block (pem.Decode); a ValueError "no PEM data found" without one."""
    match = _PEM.search(str(text))
    if not match:
        raise ValueError("no PEM data found")
    lines = [line for line in match.group(2).splitlines() if ":" not in line]  # headers (Proc-Type: ...) skipped
    try:
        return base64.b64decode("".join("".join(lines).split()), validate=True)
    except binascii.Error:
        raise ValueError("no PEM data found") from None


def _read(data: bytes, position: int = 0) -> tuple[int, bytes, int]:
    """One DER element at `position`: (tag, contents, position after it)."""
    if position + 2 > len(data):
        raise ValueError("asn1: syntax error: data truncated")
    tag, length, position = data[position], data[position + 1], position + 2
    if length & 0x80:
        count = length & 0x7F
        if count == 0 or count > 4 or position + count > len(data):
            raise ValueError("asn1: syntax error: bad length")
        length, position = int.from_bytes(data[position : position + count], "big"), position + count
    if position + length > len(data):
        raise ValueError("asn1: syntax error: data truncated")
    return tag, data[position : position + length], position + length


def der_elements(contents: bytes) -> list[tuple[int, bytes]]:
    """The (tag, contents) of the elements of a SEQUENCE's contents."""
    result, position = [], 0
    while position < len(contents):
        tag, value, position = _read(contents, position)
        result.append((tag, value))
    return result


def der_sequence(data: bytes, what: str) -> list[tuple[int, bytes]]:
    """The elements of `data`, one DER SEQUENCE and nothing after it; "x509: malformed <what>" otherwise."""
    tag, contents, end = _read(data)
    if tag != SEQUENCE or end != len(data):
        raise ValueError(f"x509: malformed {what}")
    return der_elements(contents)


def _encode(tag: int, contents: bytes) -> bytes:
    length = len(contents)
    if length < 0x80:
        return bytes([tag, length]) + contents
    size = length.to_bytes((length.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + contents


def _integer(value: int) -> bytes:
    return _encode(INTEGER, value.to_bytes(value.bit_length() // 8 + 1, "big", signed=True))


def rsa_public_key_der(n: int, e: int) -> bytes:
    """The PKIX DER of an RSA public key (x509.MarshalPKIXPublicKey)."""
    rsa_key = _encode(SEQUENCE, _integer(n) + _integer(e))
    algorithm = _encode(SEQUENCE, _encode(OID, RSA_ENCRYPTION) + _encode(NULL, b""))
    return _encode(SEQUENCE, algorithm + _encode(BIT_STRING, b"\x00" + rsa_key))


def public_key(private_key: str) -> str:
    """The PEM `PUBLIC KEY` (PKIX) of a PEM PKCS#1 `RSA PRIVATE KEY`."""
    fields = der_sequence(pem_block(private_key), "PKCS#1 private key")
    if len(fields) < 9 or any(tag != INTEGER for tag, _ in fields[:9]):
        raise ValueError("x509: failed to parse private key (use ParsePKCS8PrivateKey instead for this key format)")
    version, n, e, _, p, q = (int.from_bytes(value, "big", signed=True) for _, value in fields[:6])
    if version > 1:
        raise ValueError("x509: unsupported private key version")
    if n <= 0 or e <= 0 or (version == 0 and p * q != n):
        raise ValueError("crypto/rsa: invalid modulus")
    der = rsa_public_key_der(n, e)
    body = "\n".join(textwrap.wrap(base64.b64encode(der).decode(), 64))
    return f"-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----\n"


def _time(tag: int, value: bytes) -> datetime:
    text = value.decode("ascii", "replace")
    if tag == UTC_TIME and re.fullmatch(r"\d{12}Z", text):
        year = int(text[:2])
        return datetime.strptime(f"{year + (2000 if year < 50 else 1900)}{text[2:]}", "%Y%m%d%H%M%SZ")
    if tag == GENERALIZED_TIME and re.fullmatch(r"\d{14}Z", text):
        return datetime.strptime(text, "%Y%m%d%H%M%SZ")
    raise ValueError(f"x509: malformed validity time {text!r}")


def certificate_expiry(certificate: str) -> str:
    """The notAfter time of a PEM X.509 certificate, as RFC 3339 in UTC (`2022-06-10T10:06:43Z`)."""
    certificate_fields = der_sequence(pem_block(certificate), "certificate")
    if len(certificate_fields) != 3 or certificate_fields[0][0] != SEQUENCE:
        raise ValueError("x509: malformed certificate")
    tbs = der_elements(certificate_fields[0][1])
    if tbs and tbs[0][0] == 0xA0:  # [0] EXPLICIT version
        tbs = tbs[1:]
    if len(tbs) < 5 or tbs[3][0] != SEQUENCE:
        raise ValueError("x509: malformed tbs certificate")
    validity = der_elements(tbs[3][1])
    if len(validity) != 2:
        raise ValueError("x509: malformed validity")
    expiry = _time(*validity[1]).replace(tzinfo=UTC)
    return expiry.strftime("%Y-%m-%dT%H:%M:%SZ")
