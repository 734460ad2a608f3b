"""A hub and its targets in in-process moto, for the tests of `clm targets` and the step check_targets (no tests here).

The hub (123456789012/eu-central-1): the stack `Clm` whose output RunFunctionName names a function of the real
lambdas/run handler, with its CLM_TARGET_* settings, and its role, named as CloudFormation names the hub's run role,
allowed what the hub's run role is: sts:AssumeRole on `clm-target-*-run`. A target: in its account (a session of
that account's admin, clm_sandbox.accounts) the run target role trusting only that role of the hub, allowed
DescribeStacks there, and the stack `ClmTarget` with its output Hub, as infra.target_stack makes them.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import boto3

from clm.targets import Target
from clm_sandbox import accounts

HUB = Target(accounts.MANAGEMENT_ACCOUNT, "eu-central-1")
RUN_FUNCTION = "Clm-RunFunction-standin"
RUN_ROLE = "Clm-RunFunctionRole-standin"  # infra.functions.role_name_prefix("run") + a suffix
HANDLER = Path(__file__).parents[2] / "lambdas" / "run" / "handler.py"
LAMBDA_TRUST = {
    "Version": "2012-10-17",
    "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}],
}
TEMPLATE_RESOURCES = {"Queue": {"Type": "AWS::SQS::Queue"}}  # a stack holds one resource at least


def deploy_hub(session: boto3.Session, settings: dict[str, str], handler: str | None = None) -> str:
    """The hub's run function (`handler`: its handler.py's text, the real one by default) with `settings` (its
    CLM_TARGET_* variables) and the stack `Clm` naming it; returns the function's name."""
    iam = session.client("iam")
    role = iam.create_role(RoleName=RUN_ROLE, AssumeRolePolicyDocument=json.dumps(LAMBDA_TRUST))["Role"]["Arn"]
    assume = {"Effect": "Allow", "Action": "sts:AssumeRole", "Resource": "arn:aws:iam::*:role/clm-target-*-run"}
    policy = {"Version": "2012-10-17", "Statement": [assume]}
    iam.put_role_policy(RoleName=RUN_ROLE, PolicyName="targets", PolicyDocument=json.dumps(policy))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("handler.py", handler if handler is not None else HANDLER.read_text())
    session.client("lambda").create_function(
        FunctionName=RUN_FUNCTION,
        Runtime="python3.13",
        Role=role,
        Handler="handler.handler",
        Code={"ZipFile": buffer.getvalue()},
        Timeout=60,
        Environment={"Variables": {"CLM_TARGET_ROLE": "clm-target-{region}-run", **settings}},
    )
    stack_with_outputs(session, "Clm", {"RunFunctionName": RUN_FUNCTION})
    return RUN_FUNCTION


def stack_with_outputs(session: boto3.Session, name: str, outputs: dict[str, str]) -> None:
    """A stack `name` of the session's account and region with nothing in it but `outputs`."""
    template = {"Resources": TEMPLATE_RESOURCES, "Outputs": {key: {"Value": value} for key, value in outputs.items()}}
    session.client("cloudformation").create_stack(StackName=name, TemplateBody=json.dumps(template))


def admin_session(sandbox: boto3.Session, target: Target) -> boto3.Session:
    """A session of `target`'s account admin in its region (the sandbox's own key in the hub's account)."""
    return accounts.admin_session(sandbox.client("sts"), target.account, target.region)


def deploy_target(sandbox: boto3.Session, target: Target, stack_hub: str, stack: str = "ClmTarget") -> None:
    """In `target`, by its admin: a stack `stack` with the run target role (trusting only the hub's run role, allowed
    DescribeStacks there) and the output Hub naming `stack_hub`."""
    trust = accounts.hub_role_trust(HUB.account, "Clm-RunFunctionRole*")
    stacks = f"arn:aws:cloudformation:{target.region}:{target.account}:stack/*"
    read = {"Effect": "Allow", "Action": "cloudformation:DescribeStacks", "Resource": stacks}
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "RoleName": f"clm-target-{target.region}-run",
            "AssumeRolePolicyDocument": trust,
            "Policies": [{"PolicyName": "stacks", "PolicyDocument": {"Version": "2012-10-17", "Statement": [read]}}],
        },
    }
    template = {"Resources": {"RunFunctionTarget": role}, "Outputs": {"Hub": {"Value": stack_hub}}}
    admin = admin_session(sandbox, target)
    admin.client("cloudformation").create_stack(
        StackName=stack, TemplateBody=json.dumps(template), Capabilities=["CAPABILITY_NAMED_IAM"]
    )
