"""cfn_lambda: a CloudFormation-deployed function gets its CloudFormation-deployed layer, as in AWS (moto's real
CloudFormation, Lambda and S3 state; the handler runs through the lambda_invoke patch)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import boto3
import pytest

from clm_sandbox.patches import cfn_lambda

BUCKET = "code"


def zipped(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def template(with_layer: bool = True) -> dict[str, Any]:
    function: dict[str, Any] = {
        "Code": {"S3Bucket": BUCKET, "S3Key": "function.zip"},
        "Handler": "handler.handler",
        "Runtime": "python3.11",
        "Role": {"Fn::GetAtt": ["Role", "Arn"]},
    }
    if with_layer:
        function |= {"Layers": [{"Ref": "Layer"}], "TracingConfig": {"Mode": "Active"}}
    return {
        "Resources": {
            "Role": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {"Statement": []}}},
            "Layer": {
                "Type": "AWS::Lambda::LayerVersion",
                "Properties": {"LayerName": "greetings", "Content": {"S3Bucket": BUCKET, "S3Key": "layer.zip"}},
            },
            "Function": {"Type": "AWS::Lambda::Function", "Properties": function},
        },
        "Outputs": {"Layer": {"Value": {"Ref": "Layer"}}, "Function": {"Value": {"Ref": "Function"}}},
    }


@pytest.fixture
def deployed(sandbox_aws: boto3.Session) -> tuple[boto3.Session, dict[str, str]]:
    cfn_lambda.install()
    s3 = sandbox_aws.client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": sandbox_aws.region_name})
    s3.put_object(
        Bucket=BUCKET, Key="layer.zip", Body=zipped({"python/greeting.py": "TEXT = 'hello from the layer'\n"})
    )
    handler = "import greeting\n\ndef handler(event, context):\n    return {'greeting': greeting.TEXT}\n"
    s3.put_object(Bucket=BUCKET, Key="function.zip", Body=zipped({"handler.py": handler}))
    cfn = sandbox_aws.client("cloudformation")
    cfn.create_stack(StackName="layered", TemplateBody=json.dumps(template()), Capabilities=["CAPABILITY_IAM"])
    stack = cfn.describe_stacks(StackName="layered")["Stacks"][0]
    assert stack["StackStatus"] == "CREATE_COMPLETE"
    return sandbox_aws, {output["OutputKey"]: output["OutputValue"] for output in stack["Outputs"]}


def test_ref_of_a_layer_version_is_its_arn_and_the_name_is_kept(deployed):
    session, outputs = deployed
    [version] = session.client("lambda").list_layer_versions(LayerName="greetings")["LayerVersions"]
    assert outputs["Layer"] == version["LayerVersionArn"]
    assert outputs["Layer"].endswith(":layer:greetings:1")


def test_function_gets_its_layer_and_tracing_and_runs_with_them(deployed):
    session, outputs = deployed
    lambdas = session.client("lambda")
    configuration = lambdas.get_function_configuration(FunctionName=outputs["Function"])
    assert [layer["Arn"] for layer in configuration["Layers"]] == [outputs["Layer"]]
    assert configuration["TracingConfig"] == {"Mode": "Active"}
    response = lambdas.invoke(FunctionName=outputs["Function"], Payload=b"{}")
    assert "FunctionError" not in response
    assert json.loads(response["Payload"].read()) == {"greeting": "hello from the layer"}


def test_stack_update_without_layers_removes_them(deployed):
    session, outputs = deployed
    cfn = session.client("cloudformation")
    cfn.update_stack(StackName="layered", TemplateBody=json.dumps(template(with_layer=False)))
    configuration = session.client("lambda").get_function_configuration(FunctionName=outputs["Function"])
    assert configuration.get("Layers", []) == []
    assert configuration["TracingConfig"] == {"Mode": "PassThrough"}
