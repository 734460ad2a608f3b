"""The CA bundle the kube client trusts is the one CLM was given: another local user cannot plant theirs.

The client wants the CA as a file path. On main it was /tmp/clm-kube-ca-<hash of the CA>.pem, used as found when
it existed: anyone on the machine could write their CA there first (the name follows from the public CA), and CLM
would then trust a server presenting a certificate of theirs with its token.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from pathlib import Path

import pytest

from clm.kube.transport import token_transport

CA = b"-----BEGIN CERTIFICATE-----\nthe cluster's CA\n-----END CERTIFICATE-----\n"
PLANTED = b"-----BEGIN CERTIFICATE-----\nthe attacker's CA\n-----END CERTIFICATE-----\n"


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The machine's shared temporary directory (tempfile's default), where the attacker writes first."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def trusted_ca_file(ca: bytes) -> Path:
    """The CA file a transport for `ca` gives the client."""
    transport = token_transport("https://api.example.org", "token", ca)
    try:
        return Path(transport.api_client.configuration.ssl_ca_cert)
    finally:
        transport.close()


@pytest.mark.parametrize("as_link", [False, True])
def test_a_planted_ca_file_is_never_trusted(shared_tmp: Path, as_link: bool) -> None:
    ca = CA + os.urandom(8).hex().encode()  # a CA this process has not written yet
    predictable = shared_tmp / f"clm-kube-ca-{hashlib.sha256(ca).hexdigest()[:20]}.pem"
    if as_link:
        (shared_tmp / "attacker.pem").write_bytes(PLANTED)
        predictable.symlink_to(shared_tmp / "attacker.pem")
    else:
        predictable.write_bytes(PLANTED)
    path = trusted_ca_file(ca)
    assert path.read_bytes() == ca
    assert predictable.read_bytes() == PLANTED  # left as it was, never read


def test_the_ca_file_is_private_to_the_process(shared_tmp: Path) -> None:
    ca = CA + os.urandom(8).hex().encode()
    path = trusted_ca_file(ca)
    directory = path.parent
    assert directory != shared_tmp
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700 and directory.stat().st_uid == os.getuid()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and not path.is_symlink()
    assert trusted_ca_file(ca) == path  # written once per bundle
    other = trusted_ca_file(CA)
    assert other != path and other.read_bytes() == CA
