"""A node pool's bootstrap files and user data, as CLM makes them (provisioner/node_pools.go prepareCloudInit,
provisioner/remote_files.go).

A profile's `files.yaml` renders to `files: [{path, data (base64), encrypted, permissions}]` (strict: nothing
else); the files go into a gzipped tar archive, those marked `encrypted` KMS-encrypted with the key the cluster
stack outputs (`MasterFilesEncryptionKey` for master pools, `WorkerFilesEncryptionKey` otherwise) and named
`<path>.enc`; nodes decrypt each with KMS, so one holds at most KMS Encrypt's 4,096 bytes (a larger one fails at
render, naming it). The archive is stored at `<local id>/<master|worker>/<sha512 of the rendered files.yaml>.userdata`
in CLM's bucket `cluster-lifecycle-manager-<account>-<region>`, which nodes read (the same text makes the same key:
nothing new to upload, no stack change), with the ARN of the key its files are encrypted with as the object's
metadata `clm-kms-key`: another key (a recreated cluster stack's, a new etcd key) rewrites it.
`values.S3GeneratedFilesPath` names it for `userdata.yaml`, whose rendering, gzipped and base64-encoded, is
`values.UserData` for the pool's stack.yaml.

The rendered files.yaml holds decrypted config items (private keys): it is never stored, logged or returned; errors
about it name file, line and field, never a value.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import io
import re
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from clm.errors import RenderError
from clm.yamlutil import LineDict, error_line, error_reason, load_with_lines

FILES = "files.yaml"
USER_DATA = "userdata.yaml"
KEY_OUTPUTS = {"master": "MasterFilesEncryptionKey", "worker": "WorkerFilesEncryptionKey"}
OUTPUTS_VALUE = "ClusterStackOutputs"
_FIELDS = {"path": str, "data": str, "encrypted": bool, "permissions": int}
_KEY_ID = re.compile(r"(mrk-)?[0-9a-fA-F-]{32,36}")
KMS_PLAINTEXT_LIMIT = 4096  # bytes KMS Encrypt takes
KEY_METADATA = "clm-kms-key"  # an archive's S3 metadata: the ARN of the key its encrypted files are under


@dataclass(frozen=True)
class NodeFile:
    """One file of a node's bootstrap archive (its contents decoded)."""

    path: str
    data: bytes
    encrypted: bool = False
    permissions: int = 0


def bucket_name(account: str, region: str) -> str:
    """CLM's bucket for node files in an account and region (Zalando's cluster stack lets nodes read it)."""
    return f"cluster-lifecycle-manager-{account}-{region}"


def pool_kind(is_master: bool) -> str:
    """The archive's folder and the key's output: `master` for master pools, `worker` for the others."""
    return "master" if is_master else "worker"


def archive_key(local_id: str, kind: str, rendered: str) -> str:
    """CLM's object key of a pool's archive (generateDataHash): the sha512 of the rendered files.yaml."""
    return f"{local_id}/{kind}/{hashlib.sha512(rendered.encode()).hexdigest()}.userdata"


def parse_files(text: str, file: str, cluster_id: str) -> list[NodeFile]:
    """The files of a rendered files.yaml, strictly as CLM's yaml.UnmarshalStrict reads them (unknown fields and
    wrong types are errors), each `data` base64-decoded; RenderError names file, line and field, never a value."""

    def fail(message: str, line: int | None) -> RenderError:
        return RenderError(message, file, line, cluster_id)

    try:
        document = load_with_lines(text)
    except yaml.YAMLError as exc:
        raise fail(f"rendered files.yaml is not valid YAML: {error_reason(exc)}", error_line(exc)) from None
    if document is None:
        return []
    if not isinstance(document, LineDict):
        raise fail("rendered files.yaml must be a mapping with `files`", getattr(document, "line", None))
    for key in document:
        if key != "files":
            raise fail(f"field {key!r} not found in files.yaml's format (only `files`)", document.line_of(str(key)))
    entries = document.get("files") or []
    if not isinstance(entries, list):
        raise fail("`files` must be a list", document.line_of("files"))
    return [_entry(entry, line, fail) for entry, line in zip(entries, getattr(entries, "item_lines", []), strict=True)]


def _entry(entry: Any, line: int, fail: Callable[[str, int | None], RenderError]) -> NodeFile:
    if not isinstance(entry, LineDict):
        raise fail("each file must be a mapping of path, data, encrypted, permissions", line)
    for key, value in entry.items():
        kind = _FIELDS.get(str(key))
        if kind is None:
            raise fail(f"file field {key!r} unknown (path, data, encrypted, permissions)", entry.line_of(str(key)))
        if value is not None and (type(value) is not kind):
            raise fail(f"file field {key!r} must be {kind.__name__}", entry.line_of(str(key)))
    path = entry.get("path") or ""
    try:
        data = base64.b64decode(entry.get("data") or "", validate=True)
    except (binascii.Error, ValueError):
        raise fail(f"failed to decode data for file: {path} (not base64)", entry.line_of("data")) from None
    encrypted = bool(entry.get("encrypted"))
    if encrypted and len(data) > KMS_PLAINTEXT_LIMIT:
        message = (
            f"file {path}: {len(data)} bytes to encrypt, over the {KMS_PLAINTEXT_LIMIT} KMS encrypts (nodes decrypt "
            "each encrypted file with KMS): make it smaller, or not encrypted"
        )
        raise fail(message, entry.line_of("data"))
    return NodeFile(path, data, encrypted, entry.get("permissions") or 0)


def make_archive(files: list[NodeFile], encrypt: Callable[[bytes], bytes]) -> bytes:
    """The gzipped tar of `files` as CLM's makeArchive writes it: name, size and mode only; encrypted files through
    `encrypt` (KMS), named `<path>.enc`. Deterministic apart from what `encrypt` returns."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as zipped, tarfile.open(fileobj=zipped, mode="w") as tar:
        for file in files:
            data = encrypt(file.data) if file.encrypted else file.data
            info = tarfile.TarInfo(file.path + ".enc" if file.encrypted else file.path)
            info.size, info.mode = len(data), file.permissions
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def encode_user_data(text: str) -> str:
    """EC2-ready user data (CLM's encodeUserData): gzip, then base64."""
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode()


def key_arn(value: str, region: str, account: str) -> str:
    """The KMS key an output names, as an ARN: CLM wants `arn:aws:kms...`; a bare key id (what `!Ref` of an
    AWS::KMS::Key gives, as Zalando's cluster stack outputs) is the key of that id in the cluster's account."""
    if value.startswith("arn:aws") and ":kms:" in value:
        return value
    if _KEY_ID.fullmatch(value):
        return f"arn:aws:kms:{region}:{account}:key/{value}"
    raise ValueError(f"invalid KMS key: {value!r} (a key ARN or id)")


class PendingOutputs(dict):
    """The cluster stack's outputs before it exists (the run's first render, a plan): any output reads as a
    placeholder naming it, so that templates render and are checked."""

    def __missing__(self, key: str) -> str:
        return f"pending-{key}"


class FilesStore(Protocol):
    """Where a pool's archive goes: `store(key, files, key_arn)` returns its `s3://` path."""

    def __call__(self, key: str, files: list[NodeFile], kms_key: Callable[[], str]) -> str: ...


@dataclass(frozen=True)
class PlannedFiles:
    """The archive's path only, nothing uploaded or encrypted (the run's first render, `clm render`, a plan)."""

    bucket: str

    def __call__(self, key: str, files: list[NodeFile], kms_key: Callable[[], str]) -> str:
        return f"s3://{self.bucket}/{key}"


@dataclass(frozen=True)
class UploadedFiles:
    """The archive built (encrypted entries through KMS Encrypt) and uploaded, unless it is there already under the
    same key, its encrypted files under the same KMS key (its metadata `clm-kms-key`; a key named by alias is known
    only once KMS has encrypted with it)."""

    bucket: str
    s3: Any
    kms: Callable[[], Any]

    def __call__(self, key: str, files: list[NodeFile], kms_key: Callable[[], str]) -> str:
        stored = self._stored_key(key)
        requested = kms_key() if any(file.encrypted for file in files) else ""
        if stored != requested:
            used: set[str] = set()  # the key ARN KMS encrypted with

            def encrypt(data: bytes) -> bytes:
                sealed = self.kms().encrypt(KeyId=requested, Plaintext=data)
                used.add(sealed["KeyId"])
                return sealed["CiphertextBlob"]

            archive = make_archive(files, encrypt)
            arn = ",".join(sorted(used))  # one key (two only if an alias moved meanwhile: rewritten next time)
            if stored != arn:
                metadata = {KEY_METADATA: arn} if arn else {}
                self.s3.put_object(Bucket=self.bucket, Key=key, Body=archive, Metadata=metadata)
        return f"s3://{self.bucket}/{key}"

    def _stored_key(self, key: str) -> str | None:
        """The KMS key ARN of the archive stored at `key` ("" when none is recorded), None when there is none."""
        try:
            head = self.s3.head_object(Bucket=self.bucket, Key=key)
        except self.s3.exceptions.ClientError as exc:
            if exc.response["Error"]["Code"] in ("404", "NoSuchKey", "NotFound"):
                return None
            raise
        return head.get("Metadata", {}).get(KEY_METADATA, "")


def node_values(
    render: Callable[[str, dict[str, Any]], str],
    files: Mapping[str, bytes],
    profile_dir: str,
    context: dict[str, Any],
    store: FilesStore,
    pool_facts: tuple[str, str, str, str],
    *,
    encode: bool = True,
) -> dict[str, Any]:
    """`S3GeneratedFilesPath` (when the profile has files.yaml) and `UserData` (when it has userdata.yaml) for a
    pool's stack, as CLM's prepareCloudInit: files.yaml rendered with `context`, its archive stored by `store`;
    userdata.yaml rendered with the path, gzipped and base64-encoded (`encode`; a Karpenter pool's provisioners.yaml
    gets the text as it is). `render(path, context)` renders a template, `pool_facts` is (local id, kind, region,
    account)."""
    local_id, kind, region, account = pool_facts
    values = dict(context["values"])
    if profile_dir + FILES in files:
        rendered = render(profile_dir + FILES, context)
        cluster_id = context["cluster"].id
        parsed = parse_files(rendered, profile_dir + FILES, cluster_id)

        def kms_key() -> str:
            output = KEY_OUTPUTS[kind]
            try:
                return key_arn(str(values.get(OUTPUTS_VALUE, {})[output]), region, account)
            except (KeyError, TypeError, ValueError) as exc:
                message = f"the cluster stack's output {output} (for encrypted files): {exc}"
                raise RenderError(message, profile_dir + FILES, None, cluster_id) from None

        values["S3GeneratedFilesPath"] = store(archive_key(local_id, kind, rendered), parsed, kms_key)
    if profile_dir + USER_DATA in files:
        text = render(profile_dir + USER_DATA, {**context, "values": values})
        values["UserData"] = encode_user_data(text) if encode else text
    return values
