"""CloudFormation API calls moto 5.2.5 lacks or gets wrong, for the stacks CLM creates, updates and deletes.

- ``UpdateTerminationProtection`` and ``ContinueUpdateRollback`` exist (moto raises NotImplementedError).
- ``DeleteStack`` refuses a stack with termination protection on, as CloudFormation does, uses the ``RoleARN`` it
  is given, and fails the stack (``DELETE_FAILED``) when a resource cannot be deleted (cloudformation_operations).
- ``CreateStack`` and ``UpdateStack`` succeed when a resource fails and the stack rolls back, with events naming
  the resource and the reason; updates change what really changed, in dependency order; ``UpdateStack`` is
  refused while the stack is busy or broken, and answers "No updates are to be performed." when nothing changes
  (cloudformation_operations, cloudformation_updates, cloudformation_resources).
- A ``TemplateURL`` that names moto's own server (``http://127.0.0.1:<port>/<bucket>/<key>``, what the CDK CLI
  passes when ``AWS_ENDPOINT_URL`` points at the sandbox) is read path-style: moto took the host's first label for
  the bucket (NoSuchBucket). Only ``<bucket>.s3[.-]<region>.amazonaws.com`` hosts name the bucket. CloudFormation
  reads it with the caller's rights: an enforced session needs ``s3:GetObject`` on it (and KMS, for SSE-KMS).
- A JSON template is read as JSON (moto reads every template with PyYAML's pure-Python loader first: a second of
  CPU for the CDK app's template, at every deployment of a test).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlparse

from clm_sandbox.patches import cloudformation_operations, cloudformation_updates
from clm_sandbox.patches._patching import original, replace

VIRTUAL_HOSTED = re.compile(r"^(?P<bucket>.+)\.s3(?:[.-][a-z0-9-]+)?\.amazonaws\.com(?:\.cn)?$")


def install() -> None:
    """Install the calls and the failure handling into moto's CloudFormation (idempotent)."""
    from moto.cloudformation import models as cloudformation_models
    from moto.cloudformation import responses as cloudformation_responses
    from moto.cloudformation.models import CloudFormationBackend, Stack
    from moto.cloudformation.responses import CloudFormationResponse

    cloudformation_updates.install()
    replace(Stack, "parse_template", staticmethod(_parse_template))
    for module in (cloudformation_models, cloudformation_responses):
        replace(module, "get_stack_from_s3_url", template_from_url)
    replace(CloudFormationResponse, "_get_stack_from_s3_url", _template_for_caller)
    replace(CloudFormationBackend, "create_stack", cloudformation_operations.create_stack)
    replace(CloudFormationBackend, "update_stack", cloudformation_operations.update_stack)
    replace(CloudFormationBackend, "delete_stack", cloudformation_operations.delete_stack)
    replace(CloudFormationResponse, "delete_stack", _delete_stack_call)
    for name, handler in (
        ("update_termination_protection", _update_termination_protection),
        ("continue_update_rollback", _continue_update_rollback),
    ):
        if name not in vars(CloudFormationResponse):  # new actions: moto dispatches to methods by name
            setattr(CloudFormationResponse, name, handler)


def _parse_template(template: str) -> dict[str, Any]:
    """The template as a dict: JSON as JSON, anything else (YAML, with CloudFormation's short-form tags) as moto
    reads it."""
    from moto.cloudformation.models import Stack

    if template.lstrip().startswith("{"):
        try:
            return json.loads(template)
        except json.JSONDecodeError:
            pass  # YAML's flow style also starts with a brace
    return original(Stack, "parse_template").__func__(template)


def template_from_url(template_url: str, account_id: str, partition: str) -> str:
    """The text of the S3 object a TemplateURL names: virtual-hosted (``<bucket>.s3.<region>.amazonaws.com/<key>``)
    or path-style (any other host: ``s3.<region>.amazonaws.com``, moto's server)."""
    from moto.s3.models import s3_backends

    bucket, key = template_location(template_url)
    return s3_backends[account_id][partition].get_object(bucket, key).value.decode("utf-8")


def template_location(template_url: str) -> tuple[str, str]:
    """The bucket and key a TemplateURL names."""
    url = urlparse(template_url)
    hosted = VIRTUAL_HOSTED.match(url.hostname or "")
    if hosted:
        return hosted.group("bucket"), url.path.lstrip("/")
    bucket, _, key = url.path.lstrip("/").partition("/")
    return bucket, key


def _template_for_caller(self: Any, template_url: str) -> str:
    """The TemplateURL's text, read as CloudFormation reads it: with the caller's rights (s3:GetObject, and what
    S3 asks KMS for an object under a KMS key), judged for the sandbox's enforced sessions."""
    from clm_sandbox.iam.calls import Call
    from clm_sandbox.iam.enforcement import judge_for_caller

    bucket, key = template_location(template_url)
    read = Call("s3", "GetObject", {}, self.current_account, self.region, self.partition, bucket, key)
    judge_for_caller(self, read)
    return template_from_url(template_url, self.current_account, self.partition)


def _delete_stack_call(self: Any) -> Any:
    """The DeleteStack call with its RoleARN (moto drops it)."""
    from moto.core.responses import EmptyResult

    cloudformation_operations.delete_stack(
        self.cloudformation_backend, self._get_param("StackName"), self._get_param("RoleARN")
    )
    return EmptyResult()


def _update_termination_protection(self: Any) -> Any:
    from moto.core.responses import ActionResult

    stack = self.cloudformation_backend.get_stack(self._get_param("StackName"))
    stack.enable_termination_protection = self._get_bool_param("EnableTerminationProtection", False)
    return ActionResult({"StackId": stack.stack_id})


def _continue_update_rollback(self: Any) -> Any:
    from moto.core.responses import EmptyResult

    cloudformation_operations.continue_update_rollback(self.cloudformation_backend, self._get_param("StackName"))
    return EmptyResult()
