"""A cluster stack over CloudFormation's inline limit (51,200 bytes: Zalando's cluster templates are) goes through
the artefact bucket, and CloudFormation reads it with the stacks function's own rights, as on AWS: s3:GetObject on
the template and, the bucket being SSE-KMS, kms:Decrypt through S3 (the sandbox judges both since it reads a
TemplateURL as the caller)."""

from __future__ import annotations

import pytest
from kubernetes import client as k8s

from clm_sandbox.iam import record
from clm_sandbox.nodesim import NodeSimulator
from tests.integration.deployment import ROOT, Deployment, provisioned, register_example_cluster

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

PADDING = "x" * 60_000  # with the example's ~2 KB, over the 51,200 bytes CloudFormation takes inline


def test_a_template_over_the_inline_limit_is_read_from_s3_with_the_stacks_functions_rights(
    deployment: Deployment, nodes: NodeSimulator, kube_api: k8s.ApiClient
) -> None:
    stack_yaml = (ROOT / "examples" / "config" / "cluster" / "stack.yaml").read_text()
    padded = f"{stack_yaml.rstrip()}\nMetadata:\n  Padding: {PADDING}\n"
    s3 = deployment.session.client("s3")
    s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key="config/cluster/stack.yaml", Body=padded)
    deployment.settle()
    register_example_cluster(deployment)
    provisioned(deployment, nodes, kube_api)

    cfn = deployment.session.client("cloudformation")
    assert f"Padding: {PADDING}" in cfn.get_template(StackName="kube-1")["TemplateBody"]
    bucket = deployment.outputs["ArtefactBucketName"]
    by_stacks = [j for j in record.judged() if j.session.startswith("Clm-StacksFunction")]
    templates = f"arn:aws:s3:::{bucket}/clm/templates/"  # clm.stacks.template.KEY_PREFIX
    reads = {(j.action, j.outcome) for j in by_stacks if j.resource.startswith(templates)}
    assert reads == {("s3:PutObject", "allowed"), ("s3:GetObject", "allowed")}, by_stacks
    assert ("kms:Decrypt", "allowed") in {(j.action, j.outcome) for j in by_stacks}, by_stacks
