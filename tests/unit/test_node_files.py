"""Node bootstrap archives as CLM's makeArchive writes them, CLM's sha512 object keys, strict files.yaml, user data;
an encrypted file KMS cannot encrypt (over 4,096 bytes: nodes decrypt each with KMS, provisioner/remote_files.go)
fails at render naming it, before any KMS or S3 call."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import tarfile
from types import SimpleNamespace

import pytest

from clm.errors import RenderError
from clm.render.node_files import (
    KMS_PLAINTEXT_LIMIT,
    NodeFile,
    archive_key,
    encode_user_data,
    key_arn,
    make_archive,
    node_values,
    parse_files,
)

FILES = """files:
- path: /etc/plain
  data: {plain}
  permissions: 0400
- path: /etc/secret.pem
  data: {secret}
  permissions: 0600
  encrypted: true
""".format(plain=base64.b64encode(b"hello").decode(), secret=base64.b64encode(b"KEY").decode())


def test_archive_holds_plain_files_and_encrypted_ones_as_enc_with_their_modes() -> None:
    files = parse_files(FILES, "files.yaml", "c")
    assert files == [NodeFile("/etc/plain", b"hello", False, 0o400), NodeFile("/etc/secret.pem", b"KEY", True, 0o600)]
    archive = make_archive(files, lambda data: b"sealed:" + data[::-1])
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        entries = {m.name: (m.mode, tar.extractfile(m).read()) for m in tar.getmembers()}  # type: ignore[union-attr]
    assert entries == {"/etc/plain": (0o400, b"hello"), "/etc/secret.pem.enc": (0o600, b"sealed:YEK")}
    assert make_archive(files, lambda data: data) == make_archive(files, lambda data: data)  # no timestamps


def test_object_key_is_clms_sha512_of_the_rendered_files_yaml() -> None:
    digest = hashlib.sha512(FILES.encode()).hexdigest()
    assert archive_key("kube-1", "worker", FILES) == f"kube-1/worker/{digest}.userdata"


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("files:\n- path: /a\n  data: eA==\n  mode: 1\n", 4, "file field 'mode' unknown"),
        ("files:\n- path: /a\n  data: eA==\n  encrypted: 'yes'\n", 4, "file field 'encrypted' must be bool"),
        ("files: []\nother: 1\n", 2, "field 'other' not found"),
        ("files:\n- path: /a\n  data: '%%%'\n", 3, "failed to decode data for file: /a"),
        ("files:\n- path: [\n", 3, "not valid YAML"),
    ],
)
def test_strict_files_yaml_errors_name_file_and_line_never_the_data(text: str, line: int, message: str) -> None:
    with pytest.raises(RenderError) as raised:
        parse_files(text, "cluster/node-pools/w/files.yaml", "c")
    assert raised.value.file == "cluster/node-pools/w/files.yaml" and raised.value.line == line
    assert message in raised.value.message and "%%%" not in str(raised.value)


def test_user_data_is_gzipped_then_base64_and_keys_may_be_ids_or_arns() -> None:
    assert gzip.decompress(base64.b64decode(encode_user_data("#cloud-config\n"))) == b"#cloud-config\n"
    arn = "arn:aws:kms:eu-central-1:123456789012:key/0e5a1c3b-7d2f-4a6e-9b8c-1f2e3d4c5b6a"
    assert key_arn(arn, "eu-central-1", "123456789012") == arn
    assert key_arn(arn.rsplit("/", 1)[1], "eu-central-1", "123456789012") == arn
    with pytest.raises(ValueError, match="invalid KMS key"):
        key_arn("alias/x", "eu-central-1", "123456789012")


def files_yaml(size: int, encrypted: bool) -> str:
    data = base64.b64encode(b"k" * size).decode()
    return f"files:\n- path: /etc/plain\n  data: eA==\n- path: /etc/big.pem\n  data: {data}\n  encrypted: {encrypted}\n"


def test_an_encrypted_file_over_kms_limit_fails_naming_it_before_any_kms_or_s3_call() -> None:
    def store(*args: object) -> str:
        raise AssertionError("nothing is encrypted or uploaded")

    profile, file = "cluster/node-pools/worker-default/", "cluster/node-pools/worker-default/files.yaml"
    context = {"cluster": SimpleNamespace(id="c"), "values": {}}
    with pytest.raises(RenderError) as raised:
        node_values(
            lambda path, _: files_yaml(KMS_PLAINTEXT_LIMIT + 1, True),
            {file: b""},
            profile,
            context,
            store,
            ("kube-1", "worker", "eu-central-1", "123456789012"),
        )
    assert (raised.value.file, raised.value.line, raised.value.cluster_id) == (file, 5, "c")
    assert raised.value.message.startswith("file /etc/big.pem: 4097 bytes to encrypt, over the 4096 KMS encrypts")
    assert len(parse_files(files_yaml(KMS_PLAINTEXT_LIMIT, True), "files.yaml", "c")) == 2
    assert len(parse_files(files_yaml(KMS_PLAINTEXT_LIMIT + 1, False), "files.yaml", "c")) == 2
