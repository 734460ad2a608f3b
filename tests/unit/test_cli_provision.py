"""`clm provision` and `clm decommission` on in-process moto: the execution they start (or the registry change they
make), `--follow` to the end of a run executed by moto's interpreter, and one-line errors."""

from __future__ import annotations

import json

import pytest

from clm.cli.main import describe_error
from tests.unit.test_cli import no_credentials, run_clm
from tests.unit.test_cli_errors import where
from tests.unit.test_cli_helpers import KUBE_1, clm, deploy_clm_stack, invoker  # noqa: F401  (the `clm` fixture)

WAITING = {"StartAt": "Wait", "States": {"Wait": {"Type": "Wait", "Seconds": 3600, "End": True}}}
NOT_DEPLOYED = (
    "is CLM deployed? deploy CLM there: `clm sandbox deploy` in the sandbox, docs/deploy.md on AWS; "
    "or pass --stack (or set CLM_STACK)"
)


def test_provision_starts_the_execution_with_the_documented_input(clm, aws):  # noqa: F811
    run, _ = clm
    arn = deploy_clm_stack(aws, WAITING)
    result = run("provision", KUBE_1, "--reason", "rotate certificates")
    sfn = aws.client("stepfunctions")
    [execution] = sfn.list_executions(stateMachineArn=arn)["executions"]
    described = sfn.describe_execution(executionArn=execution["executionArn"])
    assert json.loads(described["input"]) == {"cluster_id": KUBE_1, "reason": "rotate certificates"}
    printed = " ".join(result.output.split())
    assert f"started run of cluster {KUBE_1}: execution {execution['name']} {execution['executionArn']}" == printed
    as_json = json.loads(run("-o", "json", "provision", KUBE_1).output)
    assert as_json["cluster_id"] == KUBE_1 and as_json["execution_arn"].endswith(":" + as_json["execution_name"])


def test_provision_errors_name_the_culprit(clm, aws):  # noqa: F811
    run, _ = clm
    unknown = run("provision", "aws:1:nowhere", ok=False)
    assert describe_error(unknown.exception) == "cluster aws:1:nowhere is not in the registry"
    missing = run("provision", KUBE_1, ok=False)
    assert describe_error(missing.exception) == f"stack Clm not found ({where(aws, 'cloudformation')}): {NOT_DEPLOYED}"
    topic_only = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
    aws.client("cloudformation").create_stack(StackName="Other", TemplateBody=json.dumps(topic_only))
    no_output = run("provision", KUBE_1, "--stack", "Other", ok=False)
    assert describe_error(no_output.exception) == (
        f"stack Other has no output ProvisionStateMachineArn ({where(aws, 'cloudformation')}): {NOT_DEPLOYED}"
    )
    arn = deploy_clm_stack(aws, WAITING)
    aws.client("stepfunctions").delete_state_machine(stateMachineArn=arn)
    deleted = run("provision", KUBE_1, ok=False)
    assert describe_error(deleted.exception) == (
        f"state machine {arn} (output ProvisionStateMachineArn of stack Clm) not found "
        f"({where(aws, 'stepfunctions')}): {NOT_DEPLOYED}"
    )


@pytest.mark.parametrize(
    ("definition", "exit_code", "last_line"),
    [
        ({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}, 0, "SUCCEEDED  execution {name}"),
        (
            {"StartAt": "Failed", "States": {"Failed": {"Type": "Fail", "Error": "ClusterRunFailed", "Cause": "boom"}}},
            1,
            "FAILED  execution {name}: ClusterRunFailed: boom",
        ),
    ],
)
def test_follow_waits_for_the_end_and_exits_with_the_outcome(sandbox_aws, definition, exit_code, last_line):
    run, _ = invoker(sandbox_aws)
    deploy_clm_stack(sandbox_aws, definition)
    result = run("provision", KUBE_1, "--follow", ok=False)
    assert result.exit_code == exit_code, (result.output, result.exception)
    name = result.output.split("execution ", 1)[1].split()[0]
    assert result.output.splitlines()[-1] == last_line.format(name=name)


def test_decommission_requests_it_in_the_registry_after_confirmation(clm):  # noqa: F811
    run, store = clm
    declined = run("decommission", KUBE_1, ok=False, input="n\n")
    assert declined.exit_code == 1 and "Decommission cluster" in declined.output
    assert store.get(KUBE_1).lifecycle_status == "requested"
    result = run("decommission", KUBE_1, input="y\n")
    assert "lifecycle_status=decommission-requested; the registry change starts its decommission run" in " ".join(
        result.output.split()
    )
    assert store.get(KUBE_1).lifecycle_status == "decommission-requested"
    again = run("decommission", KUBE_1)
    assert f"decommission of cluster {KUBE_1} was already requested" in again.output
    store.record_decommissioned(KUBE_1)
    done = run("decommission", KUBE_1, "--yes", ok=False)
    assert describe_error(done.exception) == f"cluster {KUBE_1} is already decommissioned"


def test_decommission_follow_without_a_run_to_follow(clm, aws):  # noqa: F811
    run, store = clm
    deploy_clm_stack(aws, WAITING)  # no registry trigger here: nothing starts the run
    waited = run("decommission", KUBE_1, "--yes", "--follow", "--start-timeout", "1", ok=False)
    assert describe_error(waited.exception) == (
        f"no run of cluster {KUBE_1} started within 1 s: is the registry trigger (stream -> registry_events -> bus) "
        f"deployed? start one with `clm provision {KUBE_1}`"
    )
    assert store.get(KUBE_1).lifecycle_status == "decommission-requested"
    again = run("decommission", KUBE_1, "--follow", ok=False)
    assert describe_error(again.exception) == (
        f"no run of cluster {KUBE_1} is running: start one with `clm provision {KUBE_1}`"
    )


@pytest.mark.parametrize("command", [["provision", KUBE_1], ["decommission", KUBE_1, "--yes"], ["status"]])
def test_unreachable_sandbox_is_one_line(command):
    result = run_clm(*command, env={"AWS_ENDPOINT_URL": "http://127.0.0.1:9"})
    assert result.returncode == 1
    assert result.stderr.startswith("error: cannot reach http://127.0.0.1:9")
    assert "Traceback" not in result.stderr


def test_no_credentials_is_one_line(tmp_path):
    result = run_clm("provision", KUBE_1, "--follow", env=no_credentials(tmp_path))
    assert result.returncode == 1
    assert result.stderr.startswith("error: no AWS credentials")
    assert "Traceback" not in result.stderr
