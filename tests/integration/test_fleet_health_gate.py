"""A rollout's health gate (issue 28), end to end on the sandbox with IAM enforced: every run that brings a cluster
the rollout's version checks the cluster's health after its update until the policy's hold is reached. A healthy
fleet with its SLO alarms quiet goes through all three waves; a version whose kube-system-like workload never becomes
available passes its run's every step but fails the canary's gate, which halts the rollout there (no run for any
other cluster); a quiet canary whose SLO alarm goes to ALARM fails the gate of the next version the same way.
Zalando's CLM has no gate: a run succeeds once its last step does (provisioner/clusterpy.go Provision)."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from clm.model import Cluster
from clm.registry.rollouts import RolloutStore
from clm.rollout.state import HALTED
from clm_sandbox.controlplane import ControlPlane
from tests.integration.deployment import Deployment
from tests.integration.fleet import (
    PROBE_KEY,
    capture_rollout_events,
    config_versions,
    received,
    register_fleet,
    working_runs,
)

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:Tried to parse AWS")]

NAMESPACE = "rollout-health"  # the gate's namespace: the six clusters share one API server, so not kube-system
# Wait states are scaled (0.02): a check every 0.2 s of wall-clock time, the hold 3 checks, the gate's time 12.
POLICY = f"""\
max_concurrency: 2
health:
  hold: 30s
  timeout: 2m
  interval: 10s
  namespaces: [{NAMESPACE}]
  alarms: ["{{alias}}-slo"]
waves:
  - {{name: canary, size: 1}}
  - {{name: test, select: {{environment: test}}, concurrency: 2}}
  - {{name: production, concurrency: 2}}
"""


NEVER_AVAILABLE = f"""\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: never-available, namespace: {NAMESPACE}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: never}}}}
  template:
    metadata: {{labels: {{app: never}}}}
    spec: {{containers: [{{name: app, image: registry.example/app:1}}]}}
"""


def manifests(value: str, never_available: bool = False) -> bytes:
    """The gate's namespace with a ConfigMap (`value` makes a new version), and a Deployment that never becomes
    available when asked (no node can run its pod: every pool of the fleet has no node)."""
    namespace = f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NAMESPACE}}}\n"
    config = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: probe, namespace: {NAMESPACE}}}\n"
    config += f"data: {{v: '{value}'}}\n"
    return "---\n".join([namespace, config] + ([NEVER_AVAILABLE] if never_available else [])).encode()


def upload(deployment: Deployment, value: str, never_available: bool = False) -> None:
    s3 = deployment.session.client("s3")
    s3.put_object(Bucket=deployment.outputs["ConfigBucketName"], Key=PROBE_KEY, Body=manifests(value, never_available))


def set_alarm(deployment: Deployment, name: str, state: str) -> None:
    deployment.session.client("cloudwatch").set_alarm_state(AlarmName=name, StateValue=state, StateReason="test")


@pytest.fixture
def fleet(deployment: Deployment, control_plane: ControlPlane) -> list[Cluster]:
    """The fleet under POLICY, each cluster's SLO alarm (`<alias>-slo`) made first and quiet."""
    cloudwatch = deployment.session.client("cloudwatch")
    for name in ("t0", "t1", "t2", "p0", "p1", "p2"):
        cloudwatch.put_metric_alarm(
            AlarmName=f"{name}-slo", MetricName="Errors", Namespace="Team/SLO", Statistic="Sum", Period=60,
            EvaluationPeriods=1, Threshold=1.0, ComparisonOperator="GreaterThanThreshold",
        )  # fmt: skip
        set_alarm(deployment, f"{name}-slo", "OK")
    return register_fleet(deployment, control_plane, POLICY)


def checks(deployment: Deployment, run: dict) -> int:
    return deployment.states(run["executionArn"]).count("CheckHealth")


def test_healthy_clusters_pass_their_gates_an_unavailable_workload_or_an_alarm_halts_at_the_canary(
    deployment: Deployment, fleet: list[Cluster], kube_api: k8s.ApiClient
) -> None:
    store = RolloutStore(deployment.session.client("dynamodb"), deployment.outputs["RegistryTableName"])
    queue = capture_rollout_events(deployment)

    # Healthy: every run holds its gate (3 healthy checks in a row) before it succeeds, wave after wave.
    known = len(deployment.executions(deployment.provision))
    upload(deployment, "1")
    runs = working_runs(deployment, known)
    assert sorted(runs) == ["p0", "p1", "p2", "t0", "t1", "t2"]
    assert all(run["status"] == "SUCCEEDED" for run in runs.values()), [r.get("cause") for r in runs.values()]
    assert {name: checks(deployment, run) for name, run in runs.items()} == dict.fromkeys(runs, 3)
    good = config_versions(deployment, fleet)
    assert len(set(good.values())) == 1

    # A workload that never becomes available: the canary's run applies it, then fails its gate; nobody else runs.
    known = len(deployment.executions(deployment.provision))
    upload(deployment, "2", never_available=True)
    runs = working_runs(deployment, known)
    assert sorted(runs) == ["t0"] and runs["t0"]["status"] == "FAILED"
    # It fails once the hold (3 checks) cannot be reached within the gate's 12: after the 10th.
    assert checks(deployment, runs["t0"]) == 10
    assert config_versions(deployment, fleet) == good  # the canary's failed run kept its version too
    [halted] = [state for state in store.list() if state.state == HALTED]
    assert halted.halt is not None and halted.halt.cluster_id == fleet[0].id
    assert f"Deployment {NAMESPACE}/never-available: 0 of 1 pods updated and available" in halted.halt.problem
    assert "health gate" in halted.halt.problem
    problem = deployment.registry.get(fleet[0].id).status.problems[-1]
    assert problem.type.endswith("/HealthGateFailed") and problem.title == halted.halt.problem

    # The team removes the workload; its SLO alarm fires on the canary: the next version halts there too.
    k8s.AppsV1Api(kube_api).delete_namespaced_deployment("never-available", NAMESPACE)
    set_alarm(deployment, "t0-slo", "ALARM")
    known = len(deployment.executions(deployment.provision))
    upload(deployment, "3")
    runs = working_runs(deployment, known)
    assert sorted(runs) == ["t0"] and runs["t0"]["status"] == "FAILED"
    halts = {state.version: state.halt for state in store.list() if state.state == HALTED}
    assert len(halts) == 2
    [alarm_halt] = [halt for version, halt in halts.items() if version != halted.version]
    assert alarm_halt is not None and "alarm t0-slo in ALARM: test" in alarm_halt.problem
    assert config_versions(deployment, fleet) == good

    # Each halt is an event naming the cluster and the gate's finding.
    events = [e["detail"] for e in received(deployment, queue) if e["detail-type"] == "Rollout Halted"]
    assert sorted(event["cluster_id"] for event in events) == [fleet[0].id] * 2
    assert all("health gate" in event["problem"] for event in events), json.dumps(events)
