"""IAM is enforced in the sandbox as on AWS: a grant taken out of a deployed function's policy makes the run fail
with AccessDenied naming the action (and, for a resource-scoped statement, the resource), recorded as the
cluster's problem; nothing else is allowed in its place."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from clm_sandbox.iam import record
from tests.integration.deployment import Deployment, register_example_cluster

pytestmark = [
    pytest.mark.integration,
    pytest.mark.iam_refusals,
    pytest.mark.filterwarnings("ignore:Tried to parse AWS"),
]

Statement = dict[str, Any]


def edit_function_policy(deployment: Deployment, function: str, edit: Callable[[Statement], Statement | None]) -> None:
    """Rewrite every statement of the deployed function's role policies with `edit` (None drops the statement),
    as an administrator would in the console."""
    lambdas, iam = deployment.session.client("lambda"), deployment.session.client("iam")
    [name] = [
        f["FunctionName"] for f in lambdas.list_functions()["Functions"] if f"-{function}Function" in f["FunctionName"]
    ]
    role = lambdas.get_function(FunctionName=name)["Configuration"]["Role"].rsplit("/", 1)[-1]
    changed = 0
    for policy_name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role, PolicyName=policy_name)["PolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        statements = [edit(dict(s)) for s in document["Statement"]]
        kept = [s for s in statements if s is not None]
        changed += kept != document["Statement"]
        iam.put_role_policy(
            RoleName=role, PolicyName=policy_name, PolicyDocument=json.dumps({**document, "Statement": kept})
        )
    assert changed, f"no statement of {function}'s policies was changed"


def actions(statement: Statement) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]


def failed_run_problem(deployment: Deployment) -> str:
    register_example_cluster(deployment)
    runs = deployment.settle(known=0)
    assert [e["status"] for e in runs].count("FAILED") == 1, [(e["status"], e.get("error")) for e in runs]
    return deployment.registry.get(deployment.cluster_id).status.problems[-1].title


def test_a_grant_taken_out_of_a_policy_fails_the_run_with_access_denied_naming_the_action(
    deployment: Deployment,
) -> None:
    def without_list_stacks(statement: Statement) -> Statement | None:
        left = [a for a in actions(statement) if a != "cloudformation:ListStacks"]
        return {**statement, "Action": left} if left else None

    edit_function_policy(deployment, "Stacks", without_list_stacks)
    problem = failed_run_problem(deployment)
    assert (
        "AccessDenied" in problem and "not authorized to perform: cloudformation:ListStacks on resource: *" in problem
    )
    assert "because no identity-based policy allows the cloudformation:ListStacks action" in problem
    refused = [j for j in record.judged() if j.refused]
    assert {(j.action, j.outcome) for j in refused} == {("cloudformation:ListStacks", "denied")}


def test_a_statement_scoped_to_another_resource_fails_the_run_naming_action_and_resource(
    deployment: Deployment,
) -> None:
    def renderings_elsewhere(statement: Statement) -> Statement:
        if "s3:PutObject" not in actions(statement):
            return statement
        return {
            **statement,
            "Resource": [r.replace("/renderings/", "/elsewhere/") for r in _list(statement["Resource"])],
        }

    edit_function_policy(deployment, "Run", renderings_elsewhere)
    problem = failed_run_problem(deployment)
    bucket = deployment.outputs["ArtefactBucketName"]
    assert f"not authorized to perform: s3:PutObject on resource: arn:aws:s3:::{bucket}/renderings/" in problem
    refused = [j for j in record.judged() if j.refused]
    assert {j.action for j in refused} == {"s3:PutObject"}
    assert all(j.resource.startswith(f"arn:aws:s3:::{bucket}/renderings/") for j in refused)


def _list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value
