"""From an API call to the IAM questions it asks: the action, the resource ARN and the condition keys.

ARN formats come from AWS's documentation (clm_sandbox.iam.catalog); their variables are filled from the call's
parameters and, for resources that exist, from moto's backends (full ARNs, tags). A variable this module cannot
fill for any documented format makes the call unjudgeable (:class:`~clm_sandbox.iam.policy.CannotJudge`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from clm_sandbox.iam import catalog, lookups
from clm_sandbox.iam.policy import CannotJudge, Request

_VARIABLE = re.compile(r"\$\{(\w+)\}")
# CloudFormation operations that pass the stack's service role to CloudFormation (iam:PassRole).
S3_LIST_KEYS = ("prefix", "delimiter", "max-keys")  # query parameters of S3 listings that are condition keys
PASSES_STACK_ROLE = {"CreateStack", "UpdateStack", "DeleteStack", "CreateChangeSet", "ContinueUpdateRollback"}
# What S3 asks KMS for, as the caller, when an object of an SSE-KMS bucket is written or read (AWS: "Using
# server-side encryption with AWS KMS keys": PutObject needs kms:GenerateDataKey, GetObject kms:Decrypt).
S3_KMS_ACTIONS = {"PutObject": "kms:GenerateDataKey", "GetObject": "kms:Decrypt"}
# KMS operations whose request's EncryptionContext IAM sees as kms:EncryptionContext:<key> and kms:EncryptionContextKeys
# (AWS: "AWS KMS condition keys"; ReEncrypt has two contexts and is left unjudged).
KMS_CONTEXT_OPERATIONS = {
    "Encrypt",
    "Decrypt",
    "GenerateDataKey",
    "GenerateDataKeyWithoutPlaintext",
    "GenerateDataKeyPair",
    "GenerateDataKeyPairWithoutPlaintext",
}
# DynamoDB operations on one item, whose request IAM sees as dynamodb:LeadingKeys (batches and queries not judged).
DYNAMODB_ITEM_OPERATIONS = {"GetItem", "PutItem", "UpdateItem", "DeleteItem"}


@dataclass(frozen=True)
class Call:
    """One API call as the server received it (``prefix`` is the IAM service prefix, e.g. ``states``)."""

    prefix: str
    operation: str
    params: Mapping[str, Any]
    account: str
    region: str
    partition: str = "aws"
    bucket: str | None = None
    key: str | None = None
    action_name: str | None = None  # when the server names the IAM action itself (S3)

    @property
    def action(self) -> str:
        """The IAM action the call needs."""
        if self.action_name:
            return f"{self.prefix}:{self.action_name}"
        return catalog.iam_action(self.prefix, self.operation)


def requests_for(call: Call) -> list[Request]:
    """Every authorization the call needs: one per resource it names, plus what it implies (iam:PassRole)."""
    if call.action == "cloudformation:DescribeStacks" and not call.params.get("StackName"):
        return [Request("cloudformation:ListStacks", "*")]  # AWS: describing every stack needs ListStacks
    requests = [_request(part) for part in _parts(call)]
    requests += _s3_kms(call)
    role = call.params.get("RoleARN")
    if call.prefix == "cloudformation" and call.operation in PASSES_STACK_ROLE and role:
        context = {"iam:passedtoservice": "cloudformation.amazonaws.com"}
        requests.append(Request("iam:PassRole", role, context, frozenset(context)))
    return requests


def _s3_kms(call: Call) -> list[Request]:
    """The KMS request S3 makes for the caller on an object of a bucket encrypted with a KMS key by default (the
    bucket's default stands for the object's key: CLM's objects are all written under it)."""
    action = S3_KMS_ACTIONS.get(call.operation) if call.prefix == "s3" and call.key else None
    key = lookups.bucket_kms_key(call.account, call.bucket or "") if action else None
    if not action or not key:
        return []
    key_id = lookups.kms_key_id(call.account, call.region, key) or key
    resource = f"arn:{call.partition}:kms:{call.region}:{call.account}:key/{key_id}"
    context = {"kms:viaservice": f"s3.{call.region}.amazonaws.com", "kms:calleraccount": call.account}
    return [Request(action, resource, context, frozenset(context))]


def _kms_key(call: Call) -> str | None:
    """The key a KMS call acts on: the one it names (id, ARN, alias), else the one its ciphertext names."""
    named = call.params.get("KeyId")
    if named:
        return lookups.kms_key_id(call.account, call.region, named)
    blob = call.params.get("CiphertextBlob")
    if isinstance(blob, str):
        import base64

        blob = base64.b64decode(blob)
    return lookups.ciphertext_key_id(blob) if isinstance(blob, bytes) else None


def _parts(call: Call) -> list[Call]:
    """A call naming several tables (DynamoDB batches and transactions), event buses, EC2 instances or CloudWatch
    alarms asks once for each (DescribeAlarms naming none: for every alarm, `alarm:*`)."""
    if (
        call.prefix == "ec2"
        and isinstance(call.params.get("InstanceIds"), list)
        and call.operation != "DescribeInstances"
    ):
        ids = call.params["InstanceIds"]
        return [replace(call, params={**call.params, "InstanceId": instance}) for instance in dict.fromkeys(ids)]
    if call.prefix == "cloudwatch" and call.operation == "DescribeAlarms":
        names = call.params.get("AlarmNames") or ["*"]
        return [replace(call, params={**call.params, "AlarmName": name}) for name in dict.fromkeys(names)]
    if call.prefix == "events" and call.operation == "PutEvents":
        buses = [entry.get("EventBusName") or "default" for entry in call.params.get("Entries") or []]
        names = [bus.rsplit("event-bus/", 1)[-1] for bus in buses]
        return [replace(call, params={**call.params, "EventBusName": name}) for name in dict.fromkeys(names)]
    if call.prefix != "dynamodb" or "TableName" in call.params:
        return [call]
    tables = list(call.params.get("RequestItems") or {})
    for item in call.params.get("TransactItems") or []:
        tables += [operation["TableName"] for operation in item.values() if "TableName" in operation]
    return [replace(call, params={**call.params, "TableName": table}) for table in dict.fromkeys(tables)]


def _request(call: Call) -> Request:
    action = call.action
    formats = catalog.arn_formats(action)
    if not formats:
        raise CannotJudge(f"AWS documents no IAM action {action}")
    if formats == ("*",):
        return Request(action, "*")
    missing: set[str] = set()
    for arn_format in formats:
        values = {name: _resolve(name, call) for name in _VARIABLE.findall(arn_format)}
        unresolved = {name for name, value in values.items() if value is None}
        if not unresolved:
            resource = _VARIABLE.sub(lambda m, filled=values: str(filled[m.group(1)]), arn_format)
            context, known = _context(call, resource)
            return Request(action, resource, context, known)
        missing |= unresolved
    raise CannotJudge(f"{action}: no resource ARN from the call (cannot fill {', '.join(sorted(missing))})")


def _resolve(name: str, call: Call) -> str | None:
    resolver = _RESOLVERS.get(name)
    return resolver(call) if resolver else None


def _context(call: Call, resource: str) -> tuple[dict[str, Any], frozenset[str]]:
    """Condition keys of the request: the resource's account, its tags where the sandbox knows them, and
    CloudFormation's request keys."""
    context: dict[str, Any] = {}
    known: set[str] = set()
    found = _existing(call, resource)
    if found is not None:
        known |= {"aws:resourcetag/", f"{call.prefix}:resourcetag/"}
        for key, value in found.tags.items():
            context[f"aws:resourcetag/{key}".lower()] = value
            context[f"{call.prefix}:resourcetag/{key}".lower()] = value
    context["aws:resourceaccount"] = _resource_account(call, resource)
    known.add("aws:resourceaccount")
    if call.prefix == "s3":  # S3's own name for it
        context["s3:resourceaccount"] = context["aws:resourceaccount"]
        known.add("s3:resourceaccount")
    if call.prefix == "s3" and call.key is None:
        known |= {f"s3:{name}" for name in S3_LIST_KEYS}
        context.update({f"s3:{name}": value for name, value in call.params.items() if name in S3_LIST_KEYS})
    if call.prefix == "kms":  # the alias a request named its key by (AWS: "kms:RequestAlias")
        known.add("kms:requestalias")
        named = str(call.params.get("KeyId") or "")
        if "alias/" in named:
            context["kms:requestalias"] = "alias/" + named.split("alias/", 1)[1]
    if call.prefix == "kms" and call.operation in KMS_CONTEXT_OPERATIONS:
        context.update(_encryption_context(call.params.get("EncryptionContext") or {}))
        known |= {"kms:encryptioncontextkeys", "kms:encryptioncontext:"}
    if call.prefix == "sts" and call.operation == "AssumeRole":  # AWS: "Available keys for AWS STS"
        known |= {"sts:externalid", "sts:rolesessionname"}
        names = {"sts:externalid": "ExternalId", "sts:rolesessionname": "RoleSessionName"}
        context.update({key: call.params[name] for key, name in names.items() if call.params.get(name)})
    if call.prefix == "dynamodb" and call.operation in DYNAMODB_ITEM_OPERATIONS:
        leading = _leading_key(call)
        if leading is not None:  # AWS: "dynamodb:LeadingKeys", the partition key values the request touches
            context["dynamodb:leadingkeys"] = [leading]
            known.add("dynamodb:leadingkeys")
    if call.prefix == "cloudformation":
        known |= {"cloudformation:rolearn", "aws:requesttag/", "aws:tagkeys"}
        if call.params.get("RoleARN"):
            context["cloudformation:rolearn"] = call.params["RoleARN"]
        tags = {t["Key"]: t["Value"] for t in call.params.get("Tags") or []}
        context.update({f"aws:requesttag/{k}".lower(): v for k, v in tags.items()})
        if tags:
            context["aws:tagkeys"] = list(tags)
    return context, frozenset(known)


def _leading_key(call: Call) -> str | None:
    """The partition key value of the item a single-item DynamoDB call names (`Key`, or `Item` for PutItem)."""
    attribute = lookups.dynamodb_hash_key(call.account, call.region, str(call.params.get("TableName") or ""))
    item = call.params.get("Key") or call.params.get("Item") or {}
    value = item.get(attribute) if attribute else None
    return next(iter(value.values()), None) if isinstance(value, dict) and len(value) == 1 else None


def _resource_account(call: Call, resource: str) -> str:
    """`aws:ResourceAccount`: the account in the resource's ARN; a bucket's owner (its ARN names none), or the
    caller's account for a bucket no account has (the call creates it or fails as NoSuchBucket)."""
    account = resource.split(":")[4] if resource.count(":") >= 5 else ""
    if account:
        return account
    return (lookups.bucket_account(call.bucket) if call.bucket else None) or call.account


def _encryption_context(pairs: Mapping[str, str]) -> dict[str, Any]:
    """A KMS request's encryption context as condition keys: one `kms:encryptioncontext:<key>` (IAM's key names are
    case-insensitive, the values are not) each, and `kms:encryptioncontextkeys`, the keys as sent (absent if none)."""
    keys: dict[str, Any] = {f"kms:encryptioncontext:{key}".lower(): value for key, value in pairs.items()}
    if pairs:
        keys["kms:encryptioncontextkeys"] = list(pairs)
    return keys


def _existing(call: Call, resource: str) -> lookups.Found | None:
    """The resource as it exists now (tags), for the resource types whose tags the sandbox reads."""
    if call.prefix == "cloudformation" and ":stack/" in resource:
        return lookups.stack(call.account, call.region, _stack_name(call) or "")
    if call.prefix == "autoscaling" and ":autoScalingGroup:" in resource:
        return _group(call)
    if call.prefix == "ec2" and any(f":{kind}/" in resource for kind in ("network-interface", "volume", "instance")):
        return lookups.ec2_tagged(call.account, call.region, resource.rsplit("/", 1)[-1])
    if call.prefix == "secretsmanager" and ":secret:" in resource:
        return lookups.secret(call.account, call.region, call.params.get("SecretId") or "")
    if call.prefix == "kms" and ":key/" in resource:
        return lookups.kms_key(call.account, call.region, resource.rsplit("/", 1)[-1])
    return None


def _stack_name(call: Call) -> str | None:
    name = call.params.get("StackName")
    if not name:
        return None
    return name.split(":stack/")[1].split("/")[0] if ":stack/" in name else name


def _stack_id(call: Call) -> str | None:
    name = call.params.get("StackName")
    if not name:
        return None
    found = lookups.stack(call.account, call.region, name)
    return found.arn.rsplit("/", 1)[-1] if found.arn else "*"


def _group_name(call: Call) -> str | None:
    """The group a call names: directly, or as the resource of the tags it changes."""
    tagged = {tag.get("ResourceId") for tag in call.params.get("Tags") or [] if isinstance(tag, dict)}
    return call.params.get("AutoScalingGroupName") or (tagged.pop() if len(tagged) == 1 else None)


def _group(call: Call) -> lookups.Found:
    return lookups.auto_scaling_group(call.account, call.region, _group_name(call), call.params.get("InstanceId"))


def _group_part(index: int) -> Callable[[Call], str | None]:
    """GroupId (index 6) or the group's name (index 7) from the existing group's ARN."""

    def part(call: Call) -> str | None:
        arn = _group(call).arn
        if arn is None:
            name = _group_name(call)
            return None if name is None else ("*" if index == 6 else name)
        value = arn.split(":")[index]
        return value.removeprefix("autoScalingGroupName/")

    return part


def _account(call: Call) -> str:
    """The resource's account: that of the role an STS call names (possibly another account), else the caller's."""
    role = str(call.params.get("RoleArn") or "") if call.prefix == "sts" else ""
    return role.split(":")[4] if role.count(":") >= 5 else call.account


def _role_name_with_path(call: Call) -> str | None:
    """The role an IAM or STS call names, by ARN (`RoleArn`) or by name (`RoleName`: its path from IAM)."""
    arn = str(call.params.get("RoleArn") or "")
    if not arn and call.params.get("RoleName"):
        arn = lookups.role(call.account, str(call.params["RoleName"])).arn
    return arn.split(":role/", 1)[-1] or None


def _arn_part(param: str, marker: str, index: int) -> Callable[[Call], str | None]:
    """A piece of an ARN parameter: the ``index``-th ``:``-field after ``marker``."""

    def part(call: Call) -> str | None:
        arn = call.params.get(param) or ""
        if marker not in arn:
            return None
        return arn.split(marker, 1)[1].split(":")[index]

    return part


def _state_machine(call: Call) -> str | None:
    return _arn_part("stateMachineArn", ":stateMachine:", 0)(call) or _arn_part("executionArn", ":execution:", 0)(call)


def _secret_id(call: Call) -> str | None:
    secret_id = call.params.get("SecretId")
    if not secret_id:
        return None
    found = lookups.secret(call.account, call.region, secret_id).arn or secret_id
    return found.split(":secret:", 1)[1] if ":secret:" in found else found


def _parameter_name(call: Call) -> str | None:
    """An SSM parameter's name as its ARN ends: given as a name (with or without its leading slash) or an ARN."""
    name = str(call.params.get("Name") or "")
    return (name.split(":parameter/", 1)[1] if name.startswith("arn:") else name.lstrip("/")) or None


_RESOLVERS: Mapping[str, Callable[[Call], str | None]] = {
    "Partition": lambda call: call.partition,
    "Region": lambda call: call.region,
    "Account": _account,
    "StackName": _stack_name,
    "Id": _stack_id,
    "TableName": lambda call: call.params.get("TableName"),
    "IndexName": lambda call: call.params.get("IndexName"),
    "BucketName": lambda call: call.bucket,
    "ObjectName": lambda call: call.key,
    "StateMachineName": _state_machine,
    "ExecutionId": _arn_part("executionArn", ":execution:", 1),
    "GroupId": _group_part(6),
    "GroupFriendlyName": _group_part(7),
    "SecretId": _secret_id,
    "ClusterName": lambda call: call.params.get("name"),
    "RepositoryName": lambda call: call.params.get("repositoryName"),
    "FunctionName": lambda call: (call.params.get("FunctionName") or "").split(":function:")[-1] or None,
    "RoleNameWithPath": _role_name_with_path,
    "KeyId": _kms_key,
    "EventBusName": lambda call: call.params.get("EventBusName"),
    "AlarmName": lambda call: call.params.get("AlarmName"),
    "NetworkInterfaceId": lambda call: call.params.get("NetworkInterfaceId"),
    "VolumeId": lambda call: call.params.get("VolumeId"),
    "InstanceId": lambda call: call.params.get("InstanceId"),
    "CertificateId": _arn_part("CertificateArn", ":certificate/", 0),
    "ParameterNameWithoutLeadingSlash": _parameter_name,
}
