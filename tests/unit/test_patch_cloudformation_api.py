"""CloudFormation through boto3 on patched moto: termination protection, failures that roll stacks back with
events naming the resource, refused templates and updates, ContinueUpdateRollback, exports; in-process and
through moto's server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.cloudformation.models import cloudformation_backends

from clm_sandbox.moto_server import moto_server
from clm_sandbox.patches import _patching, cloudformation_api

ACCOUNT, REGION = "123456789012", "eu-central-1"
SESSION = boto3.Session(region_name=REGION)  # shared by the tests, so that service models load once
ROLE_FAILED = "The following resource(s) failed to create: [Role]. Rollback requested by user."
ROLE_TAKEN = (
    'Resource handler returned message: "Role with name taken already exists." (ErrorCode: EntityAlreadyExists)'
)


def template(*resources: str, outputs: str = "", parameters: str = "") -> str:
    return f"{parameters}Resources:\n{''.join(resources)}{outputs}"


def queue(logical_id: str = "Queue", name: str = "q1") -> str:
    return f"  {logical_id}:\n    Type: AWS::SQS::Queue\n    Properties: {{QueueName: {name}}}\n"


def role(name: str = "taken") -> str:
    return f"  Role:\n    Type: AWS::IAM::Role\n    Properties: {{RoleName: {name}, AssumeRolePolicyDocument: {{}}}}\n"


def export(name: str, value: str = "!GetAtt Queue.QueueName") -> str:
    return f"Outputs:\n  Name:\n    Value: {value}\n    Export: {{Name: {name}}}\n"


@pytest.fixture
def session(aws: boto3.Session) -> boto3.Session:
    """The shared session on in-process moto (`aws`) with the patch, and an IAM role named "taken"."""
    cloudformation_api.install()
    SESSION.client("iam").create_role(RoleName="taken", AssumeRolePolicyDocument="{}")
    return SESSION


@pytest.fixture
def cfn(session: boto3.Session) -> Any:
    return session.client("cloudformation")


def status(cfn: Any, name: str) -> str:
    return cfn.describe_stacks(StackName=name)["Stacks"][0]["StackStatus"]


def events(cfn: Any, name: str) -> list[tuple[str, str, str]]:
    """(resource, status, reason) of every event, oldest first."""
    found = cfn.describe_stack_events(StackName=name)["StackEvents"][::-1]
    return [(e["LogicalResourceId"], e["ResourceStatus"], e.get("ResourceStatusReason", "")) for e in found]


def queue_names(session: boto3.Session) -> list[str]:
    return sorted(url.rsplit("/", 1)[1] for url in session.client("sqs").list_queues().get("QueueUrls", []))


def test_installing_again_changes_nothing() -> None:
    from moto.cloudformation import parsing
    from moto.cloudformation.models import CloudFormationBackend
    from moto.cloudformation.responses import CloudFormationResponse

    def installed() -> tuple[Any, ...]:
        return (
            CloudFormationBackend.create_stack,
            CloudFormationBackend.update_stack,
            CloudFormationBackend.delete_stack,
            CloudFormationResponse.update_termination_protection,
            parsing.ResourceMap.update,
            parsing.parse_and_create_resource,
        )

    cloudformation_api.install()
    before = installed()
    cloudformation_api.install()
    assert installed() == before
    assert _patching.original(CloudFormationBackend, "delete_stack").__module__ == "moto.cloudformation.models"


def test_termination_protection_is_switched_and_refuses_deletion_while_on(cfn: Any) -> None:
    stack_id = cfn.create_stack(StackName="s", TemplateBody=template(queue()), EnableTerminationProtection=True)[
        "StackId"
    ]
    with pytest.raises(ClientError, match=r"Stack \[s\] cannot be deleted while TerminationProtection is enabled"):
        cfn.delete_stack(StackName="s")
    with pytest.raises(ClientError, match="TerminationProtection is enabled"):
        cfn.delete_stack(StackName=stack_id)
    assert status(cfn, "s") == "CREATE_COMPLETE"

    assert cfn.update_termination_protection(StackName="s", EnableTerminationProtection=False)["StackId"] == stack_id
    assert cfn.describe_stacks(StackName="s")["Stacks"][0]["EnableTerminationProtection"] is False
    cfn.update_termination_protection(StackName=stack_id, EnableTerminationProtection=True)
    assert cfn.describe_stacks(StackName="s")["Stacks"][0]["EnableTerminationProtection"] is True
    cfn.update_termination_protection(StackName="s", EnableTerminationProtection=False)
    cfn.delete_stack(StackName="s")
    assert status(cfn, stack_id) == "DELETE_COMPLETE"


def test_a_resource_that_fails_rolls_the_create_back_with_events_naming_it(session: boto3.Session, cfn: Any) -> None:
    body = template(queue(), role(), outputs=export("queue-name"))
    stack_id = cfn.create_stack(StackName="s", TemplateBody=body)["StackId"]  # the call succeeds
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert (stack["StackStatus"], stack["StackStatusReason"]) == ("ROLLBACK_COMPLETE", ROLE_FAILED)
    assert events(cfn, "s") == [
        ("s", "CREATE_IN_PROGRESS", "User Initiated"),
        ("Queue", "CREATE_IN_PROGRESS", ""),
        ("Queue", "CREATE_COMPLETE", ""),
        ("Role", "CREATE_IN_PROGRESS", ""),
        ("Role", "CREATE_FAILED", ROLE_TAKEN),
        ("s", "ROLLBACK_IN_PROGRESS", ROLE_FAILED),
        ("Queue", "DELETE_IN_PROGRESS", ""),
        ("Queue", "DELETE_COMPLETE", ""),
        ("s", "ROLLBACK_COMPLETE", ""),
    ]
    assert queue_names(session) == []  # what was created is gone
    assert cfn.list_stack_resources(StackName="s")["StackResourceSummaries"] == []
    assert "Outputs" not in cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert cfn.list_exports()["Exports"] == []
    assert cfn.get_template(StackName="s")["TemplateBody"] == body
    with pytest.raises(ClientError, match="ROLLBACK_COMPLETE state and can not be updated"):
        cfn.update_stack(StackName="s", TemplateBody=template(queue()))
    cfn.delete_stack(StackName="s")
    assert status(cfn, stack_id) == "DELETE_COMPLETE"


def test_a_missing_export_fails_the_stack_itself(cfn: Any) -> None:
    cfn.create_stack(StackName="s", TemplateBody=template(queue(name="!ImportValue nowhere")))
    assert status(cfn, "s") == "ROLLBACK_COMPLETE"
    assert events(cfn, "s")[1:] == [
        ("s", "ROLLBACK_IN_PROGRESS", "No export named nowhere found. Rollback requested by user."),
        ("s", "ROLLBACK_COMPLETE", ""),
    ]


def test_an_export_another_stack_owns_fails_the_create(cfn: Any) -> None:
    cfn.create_stack(StackName="first", TemplateBody=template(queue(), outputs=export("shared")))
    cfn.create_stack(StackName="second", TemplateBody=template(queue(name="q2"), outputs=export("shared")))
    assert status(cfn, "second") == "ROLLBACK_COMPLETE"
    assert events(cfn, "second")[-4][2] == (
        "Export with name shared is already exported by stack first. Rollback requested by user."
    )
    assert [(e["Name"], e["Value"]) for e in cfn.list_exports()["Exports"]] == [("shared", "q1")]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (template(queue(), queue("Other", "!Ref Nothing")), r"Unresolved resource dependencies \[Nothing\]"),
        (template(queue(name="!GetAtt Missing.Arn")), "Fn::GetAtt references undefined resource Missing"),
        (template(queue(name="!Ref Name"), parameters="Parameters:\n  Name: {Type: String}\n"), r"\[Name\] must have"),
    ],
)
def test_templates_cloudformation_refuses_fail_the_call_and_leave_nothing(
    session: boto3.Session, cfn: Any, body: str, message: str
) -> None:
    with pytest.raises(ClientError, match=message):
        cfn.create_stack(StackName="s", TemplateBody=body)
    assert cfn.describe_stacks()["Stacks"] == []
    assert queue_names(session) == []


def test_a_failing_update_rolls_back_to_the_previous_template_and_parameters(session: boto3.Session, cfn: Any) -> None:
    parameters = "Parameters:\n  Name: {Type: String}\n"
    first = template(queue(name="!Ref Name"), parameters=parameters, outputs=export("queue-name"))
    cfn.create_stack(StackName="s", TemplateBody=first, Parameters=[{"ParameterKey": "Name", "ParameterValue": "q1"}])
    second = template(queue(name="!Ref Name"), queue("Extra", "extra"), role(), parameters=parameters)
    cfn.update_stack(StackName="s", TemplateBody=second, Parameters=[{"ParameterKey": "Name", "ParameterValue": "q2"}])

    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert stack["StackStatus"] == "UPDATE_ROLLBACK_COMPLETE"
    assert stack["Parameters"] == [{"ParameterKey": "Name", "ParameterValue": "q1"}]
    assert stack["Outputs"][0]["OutputValue"] == "q1"
    assert cfn.get_template(StackName="s")["TemplateBody"] == first
    assert queue_names(session) == ["q1"]  # the queue the update added was deleted in the cleanup
    update = events(cfn, "s")[4:]
    assert update[0] == ("s", "UPDATE_IN_PROGRESS", "User Initiated")
    assert ("Role", "CREATE_FAILED", ROLE_TAKEN) in update
    assert update[-4:] == [
        ("s", "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", ""),
        ("Extra", "DELETE_IN_PROGRESS", ""),
        ("Extra", "DELETE_COMPLETE", ""),
        ("s", "UPDATE_ROLLBACK_COMPLETE", ""),
    ]
    rollback = update.index(("s", "UPDATE_ROLLBACK_IN_PROGRESS", ROLE_FAILED))
    assert update.index(("Role", "CREATE_FAILED", ROLE_TAKEN)) == rollback - 1

    cfn.update_stack(StackName="s", TemplateBody=template(queue(), queue("Extra", "extra")))  # the next one works
    assert (status(cfn, "s"), queue_names(session)) == ("UPDATE_COMPLETE", ["extra", "q1"])


def test_an_update_that_changes_nothing_is_refused(cfn: Any) -> None:
    cfn.create_stack(StackName="s", TemplateBody=template(queue()), Tags=[{"Key": "team", "Value": "a"}])
    with pytest.raises(ClientError, match=r"No updates are to be performed\."):
        cfn.update_stack(StackName="s", TemplateBody="# formatting only\n" + template(queue()))
    cfn.update_stack(StackName="s", TemplateBody=template(queue()), Tags=[{"Key": "team", "Value": "b"}])
    stack = cfn.describe_stacks(StackName="s")["Stacks"][0]
    assert (stack["StackStatus"], stack["Tags"]) == ("UPDATE_COMPLETE", [{"Key": "team", "Value": "b"}])


def test_an_update_is_refused_while_the_stack_is_busy(cfn: Any) -> None:
    stack_id = cfn.create_stack(StackName="s", TemplateBody=template(queue()))["StackId"]
    # moto completes every operation within its API call: only its backend can show one still running.
    cloudformation_backends[ACCOUNT][REGION].get_stack("s").status = "UPDATE_IN_PROGRESS"
    with pytest.raises(ClientError, match=f"Stack:{stack_id} is in UPDATE_IN_PROGRESS state and can not be updated."):
        cfn.update_stack(StackName="s", TemplateBody=template(queue(name="q2")))


def test_use_previous_value_keeps_a_defaulted_parameter(cfn: Any) -> None:
    parameters = "Parameters:\n  Name: {Type: String, Default: q1}\n"
    cfn.create_stack(StackName="s", TemplateBody=template(queue(name="!Ref Name"), parameters=parameters))
    changed = template(queue(name="!Ref Name"), queue("Other", "q2"), parameters=parameters)
    cfn.update_stack(
        StackName="s", TemplateBody=changed, Parameters=[{"ParameterKey": "Name", "UsePreviousValue": True}]
    )
    assert status(cfn, "s") == "UPDATE_COMPLETE"


def test_continue_update_rollback_deploys_the_previous_template_again(session: boto3.Session, cfn: Any) -> None:
    cfn.create_stack(StackName="s", TemplateBody=template(queue()))
    with pytest.raises(ClientError, match="is in CREATE_COMPLETE state and can not continue update rollback"):
        cfn.continue_update_rollback(StackName="s")
    # A rollback that fails: its resources cannot be restored. Nothing in moto fails that way by itself, so the
    # backend shows the state; the resources still match the previous template, so continuing succeeds.
    cloudformation_backends[ACCOUNT][REGION].get_stack("s").status = "UPDATE_ROLLBACK_FAILED"
    cfn.continue_update_rollback(StackName="s")
    assert status(cfn, "s") == "UPDATE_ROLLBACK_COMPLETE"
    assert events(cfn, "s")[-3:] == [
        ("s", "UPDATE_ROLLBACK_IN_PROGRESS", "User Initiated"),
        ("s", "UPDATE_ROLLBACK_COMPLETE_CLEANUP_IN_PROGRESS", ""),
        ("s", "UPDATE_ROLLBACK_COMPLETE", ""),
    ]
    assert queue_names(session) == ["q1"]


def test_updated_exports_reach_stacks_created_later(cfn: Any) -> None:
    parameters = "Parameters:\n  Name: {Type: String}\n"
    body = template(queue(name="!Ref Name"), parameters=parameters, outputs=export("queue-name", "!Ref Name"))
    cfn.create_stack(StackName="a", TemplateBody=body, Parameters=[{"ParameterKey": "Name", "ParameterValue": "q1"}])
    cfn.update_stack(StackName="a", TemplateBody=body, Parameters=[{"ParameterKey": "Name", "ParameterValue": "q2"}])
    assert [(e["Name"], e["Value"]) for e in cfn.list_exports()["Exports"]] == [("queue-name", "q2")]
    cfn.create_stack(
        StackName="b", TemplateBody=template(queue(name="qb"), outputs=export("copy", "!ImportValue queue-name"))
    )
    assert cfn.describe_stacks(StackName="b")["Stacks"][0]["Outputs"][0]["OutputValue"] == "q2"
    cfn.delete_stack(StackName="a")
    assert [e["Name"] for e in cfn.list_exports()["Exports"]] == ["copy"]


@pytest.fixture
def server_session() -> Iterator[tuple[boto3.Session, str]]:
    """moto's server in a thread of this process, with the patches installed."""
    cloudformation_api.install()
    with moto_server() as endpoint:
        yield SESSION, endpoint


def test_moto_server_serves_the_same_behaviour(server_session: tuple[boto3.Session, str]) -> None:
    session, endpoint = server_session
    cfn = session.client("cloudformation", endpoint_url=endpoint)
    session.client("iam", endpoint_url=endpoint).create_role(RoleName="taken", AssumeRolePolicyDocument="{}")
    cfn.create_stack(StackName="broken", TemplateBody=template(queue(), role()), EnableTerminationProtection=True)
    assert status(cfn, "broken") == "ROLLBACK_COMPLETE"
    assert ("Role", "CREATE_FAILED", ROLE_TAKEN) in events(cfn, "broken")
    with pytest.raises(ClientError, match="TerminationProtection is enabled"):
        cfn.delete_stack(StackName="broken")
    cfn.update_termination_protection(StackName="broken", EnableTerminationProtection=False)
    cfn.delete_stack(StackName="broken")
    with pytest.raises(ClientError, match="can not continue update rollback"):
        cfn.create_stack(StackName="fine", TemplateBody=template(queue()))
        cfn.continue_update_rollback(StackName="fine")
    assert json.loads(json.dumps(cfn.describe_stacks()["Stacks"], default=str))[0]["StackStatus"] == "CREATE_COMPLETE"


def test_a_template_url_is_read_virtual_hosted_or_path_style_whatever_the_host(
    server_session: tuple[boto3.Session, str],
) -> None:
    """The CDK CLI passes `<its S3 endpoint>/<bucket>/<key>`: with AWS_ENDPOINT_URL set, moto's own server
    (aws-cdk's restUrlFromManifest); moto read `127` as the bucket and answered NoSuchBucket."""
    session, endpoint = server_session
    s3, cfn = session.client("s3", endpoint_url=endpoint), session.client("cloudformation", endpoint_url=endpoint)
    s3.create_bucket(Bucket="assets", CreateBucketConfiguration={"LocationConstraint": REGION})
    s3.put_object(Bucket="assets", Key="t/Clm.template.json", Body=template(queue()).encode())
    for number, url in enumerate(
        (
            f"{endpoint}/assets/t/Clm.template.json",
            f"https://s3.{REGION}.amazonaws.com/assets/t/Clm.template.json",
            f"https://assets.s3.{REGION}.amazonaws.com/t/Clm.template.json",
            "https://assets.s3.amazonaws.com/t/Clm.template.json",
        )
    ):
        cfn.create_stack(StackName=f"from-url-{number}", TemplateURL=url)
        assert status(cfn, f"from-url-{number}") == "CREATE_COMPLETE", url
        cfn.delete_stack(StackName=f"from-url-{number}")
