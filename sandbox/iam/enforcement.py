"""IAM enforced on moto's requests, as AWS enforces it, for the role sessions the sandbox hands out.

moto checks no permission unless its access control is on, and then only actions against resource ``*``. This
patch judges every request signed by an enforced session (clm_sandbox.iam.principals) before moto serves it:
the call's resource ARNs and condition keys (clm_sandbox.iam.calls, and the session's global keys) against the
role's identity policies and permissions boundary (clm_sandbox.iam.policy), and sts:AssumeRole against the target
role's trust policy too (clm_sandbox.iam.trust). A refusal is the service's own AccessDenied error, naming the
action, the resource and why; a call the sandbox cannot judge is refused too and recorded as ``unjudged``.

On by default; ``CLM_SANDBOX_IAM=off`` (or :func:`set_enforcing`) turns the judging off for a process.
"""

from __future__ import annotations

import os
from typing import Any

from clm_sandbox.iam import principals, record, trust
from clm_sandbox.iam.calls import S3_LIST_KEYS, Call, requests_for
from clm_sandbox.iam.policy import CannotJudge, Decision, Request, evaluate
from clm_sandbox.patches._patching import original, replace

ENV = "CLM_SANDBOX_IAM"
ALWAYS_ALLOWED = {"sts:GetCallerIdentity"}  # AWS allows it whatever the policies say
IAM_PREFIXES = {"monitoring": "cloudwatch"}  # services whose requests are signed under another name

_enforcing: bool | None = None


def install() -> None:
    """Judge requests of enforced sessions before moto's own authorization (idempotent)."""
    from moto.core.authorization import ActionAuthenticatorMixin

    replace(ActionAuthenticatorMixin, "_authenticate_and_authorize_normal_action", _authorize_normal)
    replace(ActionAuthenticatorMixin, "_authenticate_and_authorize_s3_action", _authorize_s3)


def set_enforcing(on: bool | None) -> None:
    """Turn judging on or off in this process; None falls back to ``$CLM_SANDBOX_IAM`` (default on)."""
    global _enforcing  # noqa: PLW0603 - one setting per process, by design
    _enforcing = on


def enforcing() -> bool:
    """Whether requests of enforced sessions are judged in this process."""
    if _enforcing is not None:
        return _enforcing
    return os.environ.get(ENV, "on").lower() not in ("off", "0", "false")


def _authorize_normal(self: Any, resource: str = "*") -> None:
    _judge(self)
    original(_mixin(), "_authenticate_and_authorize_normal_action")(self, resource)


def _authorize_s3(self: Any, bucket_name: str | None = None, key_name: str | None = None) -> None:
    _judge(self, bucket_name, key_name)
    original(_mixin(), "_authenticate_and_authorize_s3_action")(self, bucket_name, key_name)


def _mixin() -> type:
    from moto.core.authorization import ActionAuthenticatorMixin

    return ActionAuthenticatorMixin


def _judge(response: Any, bucket: str | None = None, key: str | None = None) -> None:
    """Refuse the request unless the enforced session signing it is allowed (no-op for other callers)."""
    if enforcing() and principals.principal(response.get_access_key()) is not None:
        _judge_call(response, _call(response, bucket, key))


def judge_for_caller(response: Any, call: Call) -> None:
    """Refuse ``response``'s request unless its enforced session may also make ``call``, which the service makes
    with the caller's rights (CloudFormation reading a TemplateURL); no-op for other callers."""
    if enforcing() and principals.principal(response.get_access_key()) is not None:
        _judge_call(response, call)


def _judge_call(response: Any, call: Call) -> None:
    who = principals.principal(response.get_access_key())
    assert who is not None
    if call.action in ALWAYS_ALLOWED:
        return
    try:
        requests = [request.with_keys(who.keys(call.region)) for request in requests_for(call)]
    except CannotJudge as exc:
        _refuse(response, who, Request(call.action, "?"), Decision(False, f"the sandbox cannot judge it: {exc}"))
    identity, boundary = principals.role_policies(who.role_arn, who.partition)
    for request in requests:
        try:
            if request.action == trust.ACTION:
                decision = trust.assume_role(who, request, identity, boundary)
            else:
                decision = evaluate(request, identity, boundary)
        except CannotJudge as exc:
            decision = Decision(False, f"the sandbox cannot judge it: {exc}")
        if not decision.allowed:
            _refuse(response, who, request, decision)
        record.add(_judgement(who, request, decision))


def _call(response: Any, bucket: str | None, key: str | None) -> Call:
    from moto.core.utils import get_service_model

    model = get_service_model(response.boto3_service_name)
    prefix = model.signing_name or model.endpoint_prefix
    prefix = IAM_PREFIXES.get(prefix, prefix)
    if prefix == "s3":
        action = response.data.get("Action")
        action = action[0] if isinstance(action, list) else action
        query = {name: values[0] for name, values in response.querystring.items() if name in S3_LIST_KEYS}
        return Call("s3", action, query, response.current_account, response.region, response.partition, bucket, key)
    operation = response._get_action()
    return Call(
        prefix,
        operation,
        _params(response, model, operation),
        response.current_account,
        response.region,
        response.partition,
    )


def _params(response: Any, model: Any, operation: str) -> dict[str, Any]:
    """The request's parameters as botocore names them, whatever the service's protocol."""
    from moto.core.parse import PROTOCOL_PARSERS
    from moto.core.request import determine_request_protocol

    if getattr(response, "automated_parameter_parsing", False) and hasattr(response, "params"):
        return dict(response.params)
    request = response.normalized_request
    parser = PROTOCOL_PARSERS[determine_request_protocol(model, request.content_type)]
    parsed = parser(model.operation_model(operation), map_type=dict).parse(
        {
            "method": request.method,
            "values": request.values,
            "headers": request.headers,
            "body": request.data,
            "url_path": request.path,
            "url_params": response.uri_match,
        }
    )
    return dict(parsed)


def _judgement(who: principals.Principal, request: Request, decision: Decision) -> record.Judgement:
    outcome = "allowed" if decision.allowed else ("unjudged" if "cannot judge" in decision.reason else "denied")
    return record.Judgement(who.session_name, who.role_arn, request.action, request.resource, outcome, decision.reason)


def _refuse(response: Any, who: principals.Principal, request: Request, decision: Decision) -> None:
    record.add(_judgement(who, request, decision))
    message = (
        f"User: {who.arn} is not authorized to perform: {request.action} on resource: {request.resource} "
        f"because {decision.reason}"
    )
    raise _access_denied(response, message)


def _access_denied(response: Any, message: str) -> Exception:
    """The service's own AccessDenied error, in its protocol."""
    from moto.core.exceptions import JsonRESTError, _RESTError
    from moto.core.utils import get_service_model

    protocol = get_service_model(response.boto3_service_name).protocol
    if protocol == "rest-xml":
        from moto.s3.exceptions import S3ClientError

        return S3ClientError("AccessDenied", message)
    if protocol in ("json", "rest-json"):
        error = JsonRESTError("AccessDeniedException", message)
        error.code = 403 if protocol == "rest-json" else 400
        return error
    error = _RESTError("UnauthorizedOperation" if protocol == "ec2" else "AccessDenied", message)
    error.code = 403
    return error
