"""AWS errors as one line: the operation, the resource it was called on, where the CLI looked (endpoint and
region) and, when a part of CLM is missing, how to deploy it.

Clients made by the CLI record each failed call's resource in the error response (`record_failed_calls`), so
an error caught anywhere can still be described from the exception alone.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

DEPLOY_HINT = "deploy CLM there: `clm sandbox deploy` in the sandbox, docs/deploy.md on AWS"
CALL_KEY = "ClmCall"  # where a failed call's resource and location are kept in the error response
# Request parameters that name the resource of a call, most specific first.
RESOURCE_PARAMETERS = (
    "TableName",
    "StackName",
    "stateMachineArn",
    "executionArn",
    "SecretId",
    "FunctionName",
    "AutoScalingGroupName",
    "repositoryName",
    "Name",
)


def record_failed_calls(client: Any) -> Any:
    """The client, with each failed call's resource and location recorded in its error response."""

    def remember(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context[CALL_KEY] = params

    def annotate(http_response: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        if http_response.status_code >= 300:
            parsed[CALL_KEY] = {
                "service": client.meta.service_model.service_name,
                "resource": call_resource(context.get(CALL_KEY) or {}),
                "where": where(client),
            }

    client.meta.events.register("before-parameter-build", remember)
    client.meta.events.register("after-call", annotate)
    return client


def call_resource(params: dict[str, Any]) -> str:
    """The resource a call's parameters name ("" when none does)."""
    if "Bucket" in params:
        return f"s3://{params['Bucket']}/{params.get('Key') or params.get('Prefix') or ''}"
    for key in RESOURCE_PARAMETERS:
        if isinstance(params.get(key), str):
            return params[key]
    named = [value for key, value in params.items() if key.endswith(("Name", "Arn", "Id")) and isinstance(value, str)]
    return named[0] if named else ""


def where(client: Any) -> str:
    """Where a client looks: its endpoint and region."""
    return f"endpoint {client.meta.endpoint_url}, region {client.meta.region_name}"


def describe_client_error(exc: ClientError) -> str:
    """One line for an AWS error: operation, resource, where, and the service's code and message."""
    error = exc.response.get("Error", {})
    code, message = error.get("Code", ""), error.get("Message", "")
    call = exc.response.get(CALL_KEY) or {}
    resource, location = call.get("resource", ""), call.get("where", "")
    if code == "ResourceNotFoundException" and call.get("service") == "dynamodb" and resource:
        return (
            f"registry table {resource} not found ({location}): {DEPLOY_HINT}; "
            "or pass --table (or set CLM_REGISTRY_TABLE)"
        )
    target = f" on {resource}" if resource else ""
    place = f" ({location})" if location else ""
    return f"AWS {exc.operation_name}{target} failed{place}: {code}: {message}"
