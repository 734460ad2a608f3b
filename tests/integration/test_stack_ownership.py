"""A registry writer cannot reach stacks CLM does not own: a stack someone else created under the cluster stack's
name (no CLM tags, termination protection on) is neither updated nor deleted by provision or decommission (each
run ends with a problem naming it), and the stacks function's IAM alone refuses to change it."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from botocore.exceptions import ClientError

from clm_sandbox.iam import record
from tests.integration.deployment import Deployment, as_role, register_example_cluster

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

FOREIGN = "kube-1"  # the cluster stack's name of examples/clusters.yaml's kube-1 (its local_id)
FOREIGN_BODY = "Resources:\n  Data:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: team-data\n"
FOREIGN_TAGS = [{"Key": "team", "Value": "data"}]
CLM_TAG = [{"Key": "clm:managed-by", "Value": "clm"}]  # clm.stacks.names.MANAGED_BY_TAG


def create_foreign_stack(deployment: Deployment) -> dict[str, Any]:
    """The stack another team created with the admin session; what must stay as it is."""
    cfn = deployment.session.client("cloudformation")
    cfn.create_stack(StackName=FOREIGN, TemplateBody=FOREIGN_BODY, Tags=FOREIGN_TAGS, EnableTerminationProtection=True)
    return observed(cfn)


def observed(cfn: Any) -> dict[str, Any]:
    stack = cfn.describe_stacks(StackName=FOREIGN)["Stacks"][0]
    template = cfn.get_template(StackName=FOREIGN)["TemplateBody"]
    return {key: stack.get(key) for key in ("StackId", "StackStatus", "Tags", "EnableTerminationProtection")} | {
        "template": template
    }


def failed_run_problem(deployment: Deployment, known: int) -> str:
    """The problem the one failed run of those started after the first `known` recorded."""
    runs = deployment.settle(known)
    assert [e["status"] for e in runs].count("FAILED") == 1, [(e["status"], e.get("error")) for e in runs]
    return deployment.registry.get(deployment.cluster_id).status.problems[-1].title


def test_provision_and_decommission_leave_a_foreign_stack_with_the_cluster_stacks_name_alone(
    deployment: Deployment,
) -> None:
    before = create_foreign_stack(deployment)
    cfn = deployment.session.client("cloudformation")
    expected = (
        f"StackNotOwned: cluster {deployment.cluster_id}: stack {FOREIGN}: the stack of this name is not CLM's stack "
        f"of the cluster (it lacks the tags kubernetes.io/cluster/{deployment.cluster_id}=owned, clm:managed-by=clm)"
    )
    register_example_cluster(deployment)
    assert failed_run_problem(deployment, 0).startswith(expected)
    assert observed(cfn) == before

    known = len(deployment.executions(deployment.provision))
    cluster = deployment.registry.get(deployment.cluster_id)
    deployment.registry.put(dataclasses.replace(cluster, lifecycle_status="decommission-requested"))
    not_managed = (
        f"ClusterNotManaged: cluster {deployment.cluster_id}: nothing cleaned up: stack {FOREIGN} is not CLM's (it "
        f"lacks kubernetes.io/cluster/{deployment.cluster_id}=owned, clm:managed-by=clm)"
    )
    assert not_managed in failed_run_problem(deployment, known)
    assert observed(cfn) == before
    assert deployment.registry.get(deployment.cluster_id).lifecycle_status == "decommission-requested"


@pytest.mark.iam_refusals
def test_the_stacks_functions_role_alone_may_not_change_a_stack_without_clms_tag(deployment: Deployment) -> None:
    before = create_foreign_stack(deployment)
    lambdas = deployment.session.client("lambda")
    [function] = [f for f in lambdas.list_functions()["Functions"] if "-StacksFunction" in f["FunctionName"]]
    cluster_stack_role = function["Environment"]["Variables"]["CLM_CLOUDFORMATION_ROLE_ARN"]
    cfn = as_role(function["Role"], "ownership-test").client("cloudformation")
    cfn.describe_stacks(StackName=FOREIGN)  # reading is allowed: the session is the function's
    # Everything the function's own requests carry (the ClusterStackRole, CLM's tag in the request): only the
    # stack's missing clm:managed-by tag is wrong.
    changes = {
        "UpdateStack": lambda: cfn.update_stack(
            StackName=FOREIGN,
            TemplateBody=FOREIGN_BODY.replace("team-data", "clm"),
            RoleARN=cluster_stack_role,
            Tags=CLM_TAG,
        ),
        "UpdateTerminationProtection": lambda: cfn.update_termination_protection(
            StackName=FOREIGN, EnableTerminationProtection=False
        ),
        "DeleteStack": lambda: cfn.delete_stack(StackName=FOREIGN, RoleARN=cluster_stack_role),
    }
    for action, change in changes.items():
        with pytest.raises(ClientError) as refused:
            change()
        error = refused.value.response["Error"]
        assert error["Code"] == "AccessDenied", (action, error)
        assert (
            f"not authorized to perform: cloudformation:{action} on resource: {before['StackId']}" in (error["Message"])
        ), error["Message"]
    assert observed(deployment.session.client("cloudformation")) == before
    # Creating needs CLM's tag in the request and the ClusterStackRole.
    for name, extra in (("untagged", {"RoleARN": cluster_stack_role}), ("without-role", {"Tags": CLM_TAG})):
        with pytest.raises(ClientError, match=f"cloudformation:CreateStack on resource: .*:stack/{name}/"):
            cfn.create_stack(StackName=name, TemplateBody=FOREIGN_BODY, **extra)
    refused = {(j.action, j.outcome) for j in record.judged() if j.refused}
    assert refused == {(f"cloudformation:{action}", "denied") for action in [*changes, "CreateStack"]}
    # The control: the same session may change a stack that carries CLM's tag.
    deployment.session.client("cloudformation").create_stack(
        StackName="tagged", TemplateBody=FOREIGN_BODY, Tags=CLM_TAG
    )
    cfn.update_termination_protection(StackName="tagged", EnableTerminationProtection=True)
