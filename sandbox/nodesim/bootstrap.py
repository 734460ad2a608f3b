"""A node's bootstrap as CLM's user data has it run: fetch its archive and decrypt its secrets, as the instance's role.

User data rendered from a profile with files.yaml names the node's bootstrap archive
(`s3://<bucket>/<local id>/<master|worker|etcd>/<sha512>.userdata`, clm.render.node_files); the node fetches it with
its instance profile's credentials and decrypts its `*.enc` files with KMS before its kubelet starts. On AWS a node
that cannot (no archive, no instance profile, a role without s3:GetObject or kms:Decrypt, a permissions boundary
that caps them, a key it may not use) never joins the cluster. :class:`NodeBootstrap` makes the same calls as the
instance's role (moto STS AssumeRole with the instance id as session name, as EC2 does; the sandbox's IAM
enforcement judges them: clm_sandbox.iam), so the node simulator leaves such a node unregistered too. User data that
names no archive (the examples') needs nothing.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import re
import tarfile

import boto3
from botocore.exceptions import ClientError

ARCHIVE = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/(\S+?\.userdata)\b")
ENCRYPTED_SUFFIX = ".enc"
GZIP_MAGIC = b"\x1f\x8b"


def user_data_text(encoded: str) -> str:
    """EC2's base64 user data as text, gunzipped when gzipped (CLM gzips an auto scaling group's)."""
    try:
        raw = base64.b64decode(encoded)
    except (binascii.Error, ValueError):
        return ""
    if raw.startswith(GZIP_MAGIC):
        raw = gzip.decompress(raw)
    return raw.decode(errors="replace")


def archives(text: str) -> list[tuple[str, str]]:
    """The (bucket, key) of every bootstrap archive the user data names, in order, each once."""
    return list(dict.fromkeys(ARCHIVE.findall(text)))


def encrypted_members(archive: bytes) -> list[tuple[str, bytes]]:
    """The `*.enc` files of a gzipped tar archive, with their contents."""
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return [
            (member.name, tar.extractfile(member).read())  # type: ignore[union-attr]
            for member in tar.getmembers()
            if member.isfile() and member.name.endswith(ENCRYPTED_SUFFIX)
        ]


class NodeBootstrap:
    """Runs an instance's bootstrap fetches against the sandbox's AWS: :meth:`failure` says why the node would not
    join, or None."""

    def __init__(self, session: boto3.Session, endpoint_url: str | None = None) -> None:
        self._session, self._endpoint = session, endpoint_url
        self._ec2 = session.client("ec2", endpoint_url=endpoint_url)
        self._iam = session.client("iam", endpoint_url=endpoint_url)
        self._sts = session.client("sts", endpoint_url=endpoint_url)

    def failure(self, instance_id: str) -> str | None:
        """Why the instance's bootstrap fails (naming the archive and AWS's error), None when it succeeds or needs
        nothing."""
        attribute = self._ec2.describe_instance_attribute(InstanceId=instance_id, Attribute="userData")
        wanted = archives(user_data_text((attribute.get("UserData") or {}).get("Value") or ""))
        if not wanted:
            return None
        role = self._role_of(instance_id)
        if role is None:
            return f"no instance profile with a role: no credentials to fetch s3://{wanted[0][0]}/{wanted[0][1]}"
        node = self._as(role, instance_id)
        s3, kms = (node.client(service, endpoint_url=self._endpoint) for service in ("s3", "kms"))
        for bucket, key in wanted:
            where = f"s3://{bucket}/{key}"
            try:
                body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
            except ClientError as exc:
                return f"fetching {where} as {role}: {_error(exc)}"
            for name, sealed in encrypted_members(body):
                try:
                    kms.decrypt(CiphertextBlob=sealed)
                except ClientError as exc:
                    return f"decrypting {name} of {where} as {role}: {_error(exc)}"
        return None

    def _role_of(self, instance_id: str) -> str | None:
        [reservation] = self._ec2.describe_instances(InstanceIds=[instance_id])["Reservations"]
        profile = reservation["Instances"][0].get("IamInstanceProfile") or {}
        if not profile.get("Arn"):
            return None
        name = profile["Arn"].rsplit("/", 1)[-1]
        roles = self._iam.get_instance_profile(InstanceProfileName=name)["InstanceProfile"]["Roles"]
        return roles[0]["Arn"] if roles else None

    def _as(self, role_arn: str, instance_id: str) -> boto3.Session:
        credentials = self._sts.assume_role(RoleArn=role_arn, RoleSessionName=instance_id)["Credentials"]
        return boto3.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name=self._session.region_name,
        )


def _error(exc: ClientError) -> str:
    error = exc.response.get("Error", {})
    return f"{error.get('Code', '?')}: {error.get('Message', '')}"
