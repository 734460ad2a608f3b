"""The node simulator against the real v1.20.2 control plane and moto's auto scaling groups."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import EventKind, NodeSimulator, SimEvent, create_node_pool
from clm_sandbox.nodesim.aws import SANDBOX_IMAGE_ID

pytestmark = pytest.mark.integration

IMAGE = "registry.invalid/app:1"


def _wait_for(what: str, predicate: Callable[[], Any], timeout: float = 30.0, interval: float = 0.02) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def _event(sim: NodeSimulator, kind: EventKind, subject: str, timeout: float = 30.0) -> SimEvent:
    return _wait_for(f"{kind} of {subject}", lambda: next(iter(sim.events_of(kind, subject)), None), timeout)


def _gone(read: Callable[[], object]) -> bool:
    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return True
        raise
    return False


def _ready(pod: client.V1Pod) -> bool:
    conditions = pod.status.conditions or []
    return pod.status.phase == "Running" and any(c.type == "Ready" and c.status == "True" for c in conditions)


@pytest.fixture
def core(kube_api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_api)


@pytest.fixture
def namespace(core: client.CoreV1Api, control_plane: ControlPlane) -> Iterator[str]:
    name = f"nodesim-{uuid.uuid4().hex[:8]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


@pytest.fixture
def cluster_id() -> str:
    return f"aws:123456789012:eu-central-1:nodesim-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def simulator(
    kube_api: client.ApiClient, aws: boto3.Session, cluster_id: str, namespace: str
) -> Iterator[Callable[..., NodeSimulator]]:
    """Start simulators for the test's cluster; every one is stopped (and its Nodes removed) at the end."""
    started: list[NodeSimulator] = []

    def start(**options: Any) -> NodeSimulator:
        sim = NodeSimulator(kube_api, aws, cluster_id, poll_interval=0.2, **options)
        started.append(sim)
        sim.start()
        return sim

    yield start
    for sim in started:
        sim.stop()
    assert not [t.name for t in threading.enumerate() if t.name.endswith(cluster_id)]  # no leaked thread


def _bare_pod(name: str, node: str, grace: int = 30) -> client.V1Pod:
    """A pod bound directly to ``node`` (no scheduler), with an init container."""
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            node_name=node,
            termination_grace_period_seconds=grace,
            init_containers=[client.V1Container(name="init", image=IMAGE)],
            containers=[client.V1Container(name="app", image=IMAGE)],
        ),
    )


def _template(labels: dict[str, str], grace: int) -> client.V1PodTemplateSpec:
    return client.V1PodTemplateSpec(
        metadata=client.V1ObjectMeta(labels=labels),
        spec=client.V1PodSpec(
            termination_grace_period_seconds=grace, containers=[client.V1Container(name="app", image=IMAGE)]
        ),
    )


def _evict(core: client.CoreV1Api, namespace: str, name: str) -> int:
    """POST a policy/v1beta1 Eviction; the HTTP status (201 accepted, 429 blocked by a PDB)."""
    body = {"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
    try:
        response = core.create_namespaced_pod_eviction(name, namespace, body, _preload_content=False)
    except ApiException as exc:
        return exc.status
    return response.status


def test_pdb_blocks_the_second_eviction_until_the_replacement_is_ready(
    core: client.CoreV1Api, kube_api: client.ApiClient, aws: boto3.Session, cluster_id: str, namespace: str, simulator
) -> None:
    """The simulator's delays are measured on its own event times, taken as its timer thread acts: a timer never
    fires early (the lower bounds are exact); the upper bounds leave 0.6 s and 0.3 s for the thread to wake and make
    one API call, more than a loaded machine delays it (four test processes on two cores with a process spinning a
    core beside them: issue 26's runs)."""
    apps, custom = client.AppsV1Api(kube_api), client.CustomObjectsApi(kube_api)
    create_node_pool(aws, cluster_id, "default-worker", 3)
    sim = simulator(pod_ready_delay=0.5, time_scale=0.5)
    nodes = sim.wait_for_ready_nodes(3, timeout=30)

    web, agent = {"app": "web"}, {"app": "agent"}
    apps.create_namespaced_deployment(
        namespace,
        client.V1Deployment(
            metadata=client.V1ObjectMeta(name="web"),
            spec=client.V1DeploymentSpec(
                replicas=3, selector=client.V1LabelSelector(match_labels=web), template=_template(web, grace=2)
            ),
        ),
    )
    apps.create_namespaced_daemon_set(
        namespace,
        client.V1DaemonSet(
            metadata=client.V1ObjectMeta(name="agent"),
            spec=client.V1DaemonSetSpec(
                selector=client.V1LabelSelector(match_labels=agent), template=_template(agent, 1)
            ),
        ),
    )
    pdb = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 2, "selector": {"matchLabels": web}},
    }
    custom.create_namespaced_custom_object("policy", "v1beta1", namespace, "poddisruptionbudgets", pdb)

    def ready_pods(labels: str, count: int) -> list[client.V1Pod]:
        pods = [p for p in core.list_namespaced_pod(namespace, label_selector=labels).items if _ready(p)]
        return pods if len(pods) == count and not any(p.metadata.deletion_timestamp for p in pods) else []

    def disruptions_allowed() -> int | None:
        obj = custom.get_namespaced_custom_object("policy", "v1beta1", namespace, "poddisruptionbudgets", "web")
        status = obj.get("status", {})
        return status.get("disruptionsAllowed") if status.get("currentHealthy") == 3 else None

    originals = _wait_for("3 Ready web pods", lambda: ready_pods("app=web", 3))
    daemons = _wait_for("a Ready agent pod on every node", lambda: ready_pods("app=agent", 3))
    assert sorted(p.spec.node_name for p in daemons) == nodes
    assert _wait_for("the disruption controller", lambda: disruptions_allowed() == 1)

    victim, other = originals[0], originals[1]
    core.patch_node(victim.spec.node_name, {"spec": {"unschedulable": True}})
    evicted_at = time.monotonic()
    assert _evict(core, namespace, victim.metadata.name) == 201
    statuses = [_evict(core, namespace, other.metadata.name)]
    assert statuses == [429]
    while statuses[-1] == 429:
        assert time.monotonic() - evicted_at < 20, "the second eviction stayed blocked"
        time.sleep(0.02)
        statuses.append(_evict(core, namespace, other.metadata.name))
    accepted_at = time.monotonic()
    assert statuses[-1] == 201

    names = {p.metadata.name for p in originals}
    new_pods = [
        p for p in core.list_namespaced_pod(namespace, label_selector="app=web").items if p.metadata.name not in names
    ]
    # The victim's replacement is the first new pod (the second eviction may have made one more by now).
    bound_events = {
        p.metadata.name: _event(sim, EventKind.POD_BOUND, f"{namespace}/{p.metadata.name}") for p in new_pods
    }
    replacement = min(new_pods, key=lambda p: bound_events[p.metadata.name].at)
    bound = bound_events[replacement.metadata.name].at
    assert replacement.spec.node_name != victim.spec.node_name  # cordoned
    replacement_ready = _event(sim, EventKind.POD_READY, f"{namespace}/{replacement.metadata.name}")
    assert replacement_ready.at < accepted_at, (
        "the PDB let the second eviction through before the replacement was Ready"
    )
    victim_gone = _event(sim, EventKind.POD_DELETED, f"{namespace}/{victim.metadata.name}")
    assert 1.0 <= victim_gone.at - evicted_at < 1.6  # grace 2 s * time scale 0.5, not before
    assert 0.45 <= replacement_ready.at - bound < 0.8  # pod_ready_delay 0.5
    # The cordoned node keeps its DaemonSet pod.
    assert sorted(p.spec.node_name for p in ready_pods("app=agent", 3)) == nodes
    print(
        f"\neviction -> pod gone {victim_gone.at - evicted_at:.3f} s (grace 2 s x 0.5); "
        f"pod bound -> Ready {replacement_ready.at - bound:.3f} s (delay 0.5 s); "
        f"replacement Ready -> second eviction accepted {accepted_at - replacement_ready.at:.3f} s "
        f"after {len(statuses) - 1} x 429"
    )


def test_terminated_instance_loses_its_node_and_the_replacement_boots(
    core: client.CoreV1Api, aws: boto3.Session, cluster_id: str, namespace: str, simulator
) -> None:
    """The boot delay is measured on the simulator's own event times: never early, and at most 1 s late (a poll of
    the group every 0.5 s, then the timer thread's wake and API calls, under the load of test_pdb_blocks_...)."""
    autoscaling = aws.client("autoscaling")
    group = create_node_pool(aws, cluster_id, "default-worker", 2, instance_type="m5.xlarge")
    sim = simulator(boot_delay=1.0)
    nodes = sim.wait_for_ready_nodes(2, timeout=30)

    node = core.read_node(nodes[0])
    instance_id = node.spec.provider_id.rsplit("/", 1)[1]
    assert node.spec.provider_id == f"aws:///eu-central-1a/{instance_id}"
    assert not node.spec.taints
    assert node.metadata.labels["node.kubernetes.io/instance-type"] == "m5.xlarge"
    assert node.metadata.labels["node.kubernetes.io/node-pool"] == "default-worker"
    assert node.metadata.labels["node.kubernetes.io/profile"] == "worker-default"
    assert node.metadata.labels["topology.kubernetes.io/zone"] == "eu-central-1a"
    assert node.metadata.labels["topology.kubernetes.io/region"] == "eu-central-1"
    assert node.metadata.labels["lifecycle-status"] == "ready"
    assert node.status.allocatable == {"cpu": "2", "memory": "8Gi", "pods": "110"}
    assert {a.type: a.address for a in node.status.addresses}["Hostname"] == nodes[0]
    assert {c.type: c.status for c in node.status.conditions}["Ready"] == "True"

    core.create_namespaced_pod(namespace, _bare_pod("pinned", nodes[0]))
    pod = _wait_for(
        "pod pinned Ready", lambda: (p := core.read_namespaced_pod("pinned", namespace)) and _ready(p) and p
    )
    assert pod.status.host_ip == {a.type: a.address for a in node.status.addresses}["InternalIP"]
    assert pod.status.pod_ip and pod.status.container_statuses[0].state.running
    assert pod.status.init_container_statuses[0].state.terminated.reason == "Completed"

    def members() -> set[str]:
        groups = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
        return {m["InstanceId"] for m in groups[0]["Instances"]}

    before = members()
    terminated_at = time.monotonic()
    autoscaling.terminate_instance_in_auto_scaling_group(InstanceId=instance_id, ShouldDecrementDesiredCapacity=False)
    (new_id,) = members() - before

    node_deleted = _event(sim, EventKind.NODE_DELETED, nodes[0])
    pod_deleted = _event(sim, EventKind.POD_FORCE_DELETED, f"{namespace}/pinned")
    assert _gone(lambda: core.read_node(nodes[0]))
    assert _gone(lambda: core.read_namespaced_pod("pinned", namespace))
    ready = _wait_for(
        "the replacement's Node", lambda: [e for e in sim.events_of(EventKind.NODE_READY) if e.detail == new_id]
    )
    assert 1.0 <= ready[0].at - terminated_at < 2.0  # boot delay 1 s
    assert len(sim.wait_for_ready_nodes(2, timeout=5)) == 2 and nodes[0] not in sim.ready_nodes
    print(
        f"\ninstance terminated -> Node deleted {node_deleted.at - terminated_at:.3f} s, its pod force-deleted "
        f"{pod_deleted.at - terminated_at:.3f} s; "
        f"replacement launched -> Node Ready {ready[0].at - terminated_at:.3f} s "
        "(boot delay 1 s)"
    )


def test_a_booting_node_runs_its_bootstrap_when_its_instance_is_seen_not_when_its_boot_delay_is_over(
    aws: boto3.Session, cluster_id: str, simulator
) -> None:
    """The bootstrap (fetching the archive the user data names, as the instance's role) is part of the boot, as on
    AWS: it runs while the node boots, so that at its boot delay only the kubelet's registration is left. Here it
    fails (no instance profile): said within seconds of the launch, not after the boot delay of 60 s."""
    autoscaling, ec2 = aws.client("autoscaling"), aws.client("ec2")
    group = create_node_pool(aws, cluster_id, "default-worker", 0)
    [described] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
    subnet = described["VPCZoneIdentifier"]
    autoscaling.update_auto_scaling_group(AutoScalingGroupName=group, MaxSize=1)
    sim = simulator(boot_delay=60.0)
    user_data = "S3_CERTS_BUCKET=s3://nodesim-files/kube-1/worker/0a1b.userdata\n"
    [instance] = ec2.run_instances(
        ImageId=SANDBOX_IMAGE_ID, MinCount=1, MaxCount=1, SubnetId=subnet, UserData=user_data
    )["Instances"]
    autoscaling.attach_instances(AutoScalingGroupName=group, InstanceIds=[instance["InstanceId"]])
    [failed] = _wait_for("the bootstrap's failure", lambda: sim.events_of(EventKind.BOOTSTRAP_FAILED), timeout=15)
    assert "no instance profile with a role" in failed.detail, failed
    assert sim.ready_nodes == []


def test_graceful_deletion_takes_grace_period_times_time_scale(
    core: client.CoreV1Api, aws: boto3.Session, cluster_id: str, namespace: str, simulator
) -> None:
    create_node_pool(aws, cluster_id, "default-worker", 1)
    sim = simulator(time_scale=0.5)
    (node,) = sim.wait_for_ready_nodes(1, timeout=30)
    core.create_namespaced_pod(namespace, _bare_pod("victim", node))
    _wait_for("pod victim Ready", lambda: _ready(core.read_namespaced_pod("victim", namespace)))

    requested_at = time.monotonic()
    core.delete_namespaced_pod("victim", namespace, grace_period_seconds=2)
    time.sleep(max(0.0, requested_at + 0.9 - time.monotonic()))
    assert core.read_namespaced_pod("victim", namespace).metadata.deletion_timestamp  # not before 1 s
    _wait_for("pod victim gone", lambda: _gone(lambda: core.read_namespaced_pod("victim", namespace)), timeout=5)
    gone_at = time.monotonic()
    deleted = _event(sim, EventKind.POD_DELETED, f"{namespace}/victim")
    assert 1.0 <= deleted.at - requested_at < 1.3
    assert gone_at - requested_at < 1.5

    stop_started = time.monotonic()
    sim.stop()
    assert time.monotonic() - stop_started < 2.0, "stop() must not wait for the watch to time out"
    assert _gone(lambda: core.read_node(node))  # remove_nodes_on_stop


def test_restarted_simulator_adopts_nodes_and_keeps_deletion_deadlines(
    core: client.CoreV1Api, aws: boto3.Session, cluster_id: str, namespace: str, simulator
) -> None:
    create_node_pool(aws, cluster_id, "default-worker", 1)
    first = simulator(remove_nodes_on_stop=False)
    (node,) = first.wait_for_ready_nodes(1, timeout=30)
    core.create_namespaced_pod(namespace, _bare_pod("survivor", node))
    _wait_for("pod survivor Ready", lambda: _ready(core.read_namespaced_pod("survivor", namespace)))
    first.stop()

    requested_at = time.monotonic()
    core.delete_namespaced_pod("survivor", namespace, grace_period_seconds=4)
    time.sleep(2.5)  # nobody watches: the deadline must come from the deletionTimestamp
    second = simulator()
    assert second.wait_for_ready_nodes(1, timeout=10) == [node]
    _wait_for("pod survivor gone", lambda: _gone(lambda: core.read_namespaced_pod("survivor", namespace)), timeout=10)
    gone_after = time.monotonic() - requested_at
    # Requested within [t, t+1) of its whole-second deletionTimestamp - 4 s: gone by 5 s, not 2.5 + 4 s.
    assert 4.0 <= gone_after < 5.6
    # The running pod was adopted, not started again (other tests' DaemonSets may start pods on the node).
    assert not second.events_of(EventKind.POD_BOUND, f"{namespace}/survivor")


def test_against_moto_server_scale_in_removes_a_node(
    core: client.CoreV1Api, kube_api: client.ApiClient, cluster_id: str, namespace: str
) -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    session = boto3.Session(region_name="eu-central-1")
    try:
        group = create_node_pool(session, cluster_id, "default-worker", 2, endpoint_url=endpoint)
        with NodeSimulator(kube_api, session, cluster_id, poll_interval=0.2, endpoint_url=endpoint) as sim:
            nodes = sim.wait_for_ready_nodes(2, timeout=30)
            session.client("autoscaling", endpoint_url=endpoint).set_desired_capacity(
                AutoScalingGroupName=group, DesiredCapacity=1
            )
            (removed,) = _wait_for("a Node removed", lambda: sim.events_of(EventKind.NODE_DELETED))
            assert removed.subject in nodes and sim.ready_nodes == [n for n in nodes if n != removed.subject]
            assert _gone(lambda: core.read_node(removed.subject))
        assert all(_gone(lambda name=name: core.read_node(name)) for name in nodes)
        assert not [t.name for t in threading.enumerate() if t.name.endswith(cluster_id)]
    finally:
        server.stop()
