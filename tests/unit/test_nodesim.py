"""Unit tests of the node simulator's pure parts, its AWS half (in-process moto) and its timer heap."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import boto3
import pytest

from clm_sandbox.nodesim.aws import ClusterInstances, create_node_pool, instances_from
from clm_sandbox.nodesim.model import (
    NOT_READY_TAINT,
    Instance,
    bound_at,
    deletion_deadline,
    heartbeat_patch,
    k8s_time,
    node_manifest,
    node_status,
    parse_k8s_time,
    pod_ip,
    pod_is_ready,
    pod_ready_patch,
    started_at,
    without_taint,
)
from clm_sandbox.nodesim.timers import TimerHeap

INSTANCE = Instance(
    instance_id="i-0abc",
    node_name="ip-10-1-0-4.eu-central-1.compute.internal",
    private_ip="10.1.0.4",
    zone="eu-central-1a",
    region="eu-central-1",
    instance_type="m5.large",
    asg="kube-1-default-worker",
    pool="default-worker",
    profile="worker-default",
    launched_at=1_700_000_000.0,
)
T = parse_k8s_time("2024-01-02T03:04:05Z")


def _pod(**status: object) -> dict:
    return {
        "metadata": {"name": "web-1", "namespace": "ns", "uid": "uid-1"},
        "spec": {
            "nodeName": INSTANCE.node_name,
            "initContainers": [{"name": "init", "image": "busybox:1"}],
            "containers": [{"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "proxy:2"}],
        },
        "status": {"phase": "Pending", **status},
    }


def test_node_manifest_describes_the_instance() -> None:
    node = node_manifest(INSTANCE, T)
    assert node["metadata"]["name"] == INSTANCE.node_name
    assert node["spec"] == {"providerID": "aws:///eu-central-1a/i-0abc"}
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/hostname"] == INSTANCE.node_name
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["topology.kubernetes.io/zone"] == "eu-central-1a"
    assert labels["topology.kubernetes.io/region"] == "eu-central-1"
    assert labels["node.kubernetes.io/node-pool"] == "default-worker"
    assert labels["node.kubernetes.io/profile"] == "worker-default"
    assert labels["lifecycle-status"] == "ready"
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"  # registered first, Ready through the status subresource


def test_ready_node_status() -> None:
    status = node_status(INSTANCE, T, ready=True)
    assert status["capacity"] == status["allocatable"] == {"cpu": "2", "memory": "8Gi", "pods": "110"}
    assert {a["type"]: a["address"] for a in status["addresses"]} == {
        "InternalIP": "10.1.0.4",
        "Hostname": INSTANCE.node_name,
        "InternalDNS": INSTANCE.node_name,
    }
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions["Ready"]["lastHeartbeatTime"] == "2024-01-02T03:04:05Z"
    assert {conditions[k]["status"] for k in ("MemoryPressure", "DiskPressure", "PIDPressure")} == {"False"}
    assert status["nodeInfo"]["kubeletVersion"] == "v1.20.2"


def test_heartbeat_renews_every_condition_but_keeps_transition_times() -> None:
    conditions = heartbeat_patch(T + 10)["status"]["conditions"]
    assert {c["type"] for c in conditions} == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert all(c["lastHeartbeatTime"] == "2024-01-02T03:04:15Z" and "lastTransitionTime" not in c for c in conditions)


def test_without_taint() -> None:
    not_ready = {"key": NOT_READY_TAINT, "effect": "NoSchedule"}
    other = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    assert without_taint([not_ready, other], NOT_READY_TAINT) == [other]
    assert without_taint([not_ready], NOT_READY_TAINT) == []
    assert without_taint([other], NOT_READY_TAINT) is None
    assert without_taint(None, NOT_READY_TAINT) is None


def test_pod_ready_patch_reports_running_ready_containers() -> None:
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-01-02T03:04:00Z"}
    patch = pod_ready_patch(_pod(conditions=[scheduled]), "10.1.0.4", "100.64.0.7", T)
    assert patch["metadata"] == {"uid": "uid-1"}
    status = patch["status"]
    assert status["phase"] == "Running"
    assert (status["hostIP"], status["podIP"], status["podIPs"]) == ("10.1.0.4", "100.64.0.7", [{"ip": "100.64.0.7"}])
    assert status["startTime"] == "2024-01-02T03:04:05Z"
    # PodScheduled came from the scheduler: the patch leaves it alone (conditions merge by type).
    assert [c["type"] for c in status["conditions"]] == ["Initialized", "ContainersReady", "Ready"]
    assert all(c["status"] == "True" for c in status["conditions"])
    containers = status["containerStatuses"]
    assert [c["name"] for c in containers] == ["app", "sidecar"]
    assert all(
        c["ready"] and c["started"] and c["state"] == {"running": {"startedAt": k8s_time(T)}} for c in containers
    )
    assert containers[0]["containerID"] != containers[1]["containerID"]
    (init,) = status["initContainerStatuses"]
    assert init["state"]["terminated"]["reason"] == "Completed" and init["ready"]


def test_pod_ready_patch_adds_pod_scheduled_and_keeps_start_time() -> None:
    patch = pod_ready_patch(_pod(startTime="2024-01-02T03:00:00Z"), "10.1.0.4", "100.64.0.8", T)
    assert [c["type"] for c in patch["status"]["conditions"]] == [
        "PodScheduled",
        "Initialized",
        "ContainersReady",
        "Ready",
    ]
    assert patch["status"]["startTime"] == "2024-01-02T03:00:00Z"


def test_pod_is_ready() -> None:
    ready = [{"type": "Ready", "status": "True"}]
    assert pod_is_ready(_pod(phase="Running", conditions=ready))
    assert not pod_is_ready(_pod(phase="Pending", conditions=ready))
    assert not pod_is_ready(_pod(phase="Running", conditions=[{"type": "Ready", "status": "False"}]))
    assert not pod_is_ready({"metadata": {}})


def test_started_at_recovers_sub_second_times() -> None:
    assert started_at(100.0, 100.3) == 100.3  # noticed promptly: exact
    assert started_at(100.0, 107.0) == 101.0  # noticed late: at most one second late
    assert started_at(100.0, 99.5) == 100.0  # never before the reported second
    assert started_at(100.25, 100.9) == 100.25  # reported to the millisecond: exact, however late noticed


def test_deletion_deadline_comes_from_the_deletion_timestamp() -> None:
    requested = T - 2 + 0.7  # deletionTimestamp = requested + 2 s grace, truncated to the second
    pod = {"metadata": {"deletionTimestamp": k8s_time(requested + 2), "deletionGracePeriodSeconds": 2}}
    assert deletion_deadline(pod, requested + 0.01, 0.5) == pytest.approx(requested + 0.01 + 1.0)
    # Noticed long after the request (e.g. a restart): the deadline does not move with it.
    assert deletion_deadline(pod, requested + 30, 0.5) == pytest.approx(T - 2 + 1 + 1.0)
    assert deletion_deadline(pod, requested + 30, 1.0) == pytest.approx(T - 2 + 1 + 2.0)
    forced = {"metadata": {"deletionTimestamp": k8s_time(T), "deletionGracePeriodSeconds": 0}}
    assert deletion_deadline(forced, T + 5, 1.0) == T + 1


def test_bound_at_uses_the_pod_scheduled_condition() -> None:
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": k8s_time(T)}
    assert bound_at(_pod(conditions=[scheduled]), T + 0.25) == T + 0.25
    assert bound_at(_pod(conditions=[scheduled]), T + 9) == T + 1
    assert bound_at(_pod(), T + 9) == T + 9  # bound directly through spec.nodeName


def test_time_round_trip() -> None:
    assert k8s_time(T + 0.9) == "2024-01-02T03:04:05Z"
    assert datetime.fromtimestamp(T, UTC) == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)


def test_pod_ips_are_distinct_shared_space_addresses() -> None:
    assert pod_ip(0) == "100.64.0.1"
    assert pod_ip(255) == "100.64.1.0"
    assert len({pod_ip(i) for i in range(1000)}) == 1000


def _described(instance_id: str, state: str = "running") -> dict:
    return {
        "InstanceId": instance_id,
        "PrivateDnsName": f"ip-{instance_id}.internal",
        "PrivateIpAddress": "10.0.0.9",
        "Placement": {"AvailabilityZone": "eu-central-1b"},
        "InstanceType": "c5.large",
        "LaunchTime": datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC),
        "State": {"Name": state},
    }


def test_instances_from_joins_running_members_with_ec2() -> None:
    group = {
        "AutoScalingGroupName": "g",
        "Tags": [{"Key": "kubernetes.io/node-pool", "Value": "pool-a"}],
        "Instances": [
            {"InstanceId": "i-1", "LifecycleState": "InService"},
            {"InstanceId": "i-2", "LifecycleState": "Terminating"},
            {"InstanceId": "i-3", "LifecycleState": "Pending"},
        ],
    }
    found = instances_from([group], [_described("i-1"), _described("i-2"), _described("i-3")], "eu-central-1")
    assert [i.instance_id for i in found] == ["i-1", "i-3"]
    assert found[0].pool == "pool-a" and found[0].profile == ""
    assert found[0].zone == "eu-central-1b" and found[0].launched_at == T
    assert found[0].provider_id == "aws:///eu-central-1b/i-1"


def test_create_node_pool_and_list_its_instances(aws: boto3.Session) -> None:
    cluster = "aws:123456789012:eu-central-1:kube-1"
    group = create_node_pool(aws, cluster, "default-worker", 2, instance_type="c5.large")
    create_node_pool(aws, "aws:123456789012:eu-central-1:other", "default-worker", 1)
    assert group == "aws-123456789012-eu-central-1-kube-1-default-worker"
    autoscaling, ec2 = aws.client("autoscaling"), aws.client("ec2")
    (asg,) = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
    tags = {t["Key"]: t["Value"] for t in asg["Tags"]}
    assert tags == {
        f"kubernetes.io/cluster/{cluster}": "owned",
        "kubernetes.io/node-pool": "default-worker",
        "kubernetes.io/node-pool/profile": "worker-default",
    }
    assert asg["LaunchTemplate"]["LaunchTemplateName"] == group

    listing = ClusterInstances(autoscaling, ec2, cluster)
    instances = listing.list()
    assert len(instances) == 2 and {i.asg for i in instances} == {group}
    assert {(i.pool, i.profile, i.instance_type, i.zone, i.region) for i in instances} == {
        ("default-worker", "worker-default", "c5.large", "eu-central-1a", "eu-central-1")
    }
    assert all(i.node_name.startswith(f"ip-{i.private_ip.replace('.', '-')}.") for i in instances)

    autoscaling.terminate_instance_in_auto_scaling_group(
        InstanceId=instances[0].instance_id, ShouldDecrementDesiredCapacity=False
    )
    after = {i.instance_id for i in listing.list()}
    assert len(after) == 2 and instances[0].instance_id not in after and instances[1].instance_id in after
    assert ClusterInstances(autoscaling, ec2, "aws:123456789012:eu-central-1:none").list() == []


def test_a_listing_describes_each_instance_once_and_drops_one_that_stopped_running(aws: boto3.Session) -> None:
    """Listed again, the known instances are only asked whether they left the running states: one terminated
    through EC2 drops out; only new ones are described in full."""
    cluster = "aws:123456789012:eu-central-1:kube-1"
    group = create_node_pool(aws, cluster, "default-worker", 3)
    autoscaling, ec2 = aws.client("autoscaling"), aws.client("ec2")
    in_full: list[set[str]] = []  # the instance ids of each DescribeInstances in any state (not only those left)

    def record(params: dict, **_: object) -> None:
        filters = {f["Name"]: f["Values"] for f in params["Filters"]}
        if "instance-state-name" not in filters:
            in_full.append(set(filters["instance-id"]))

    ec2.meta.events.register("provide-client-params.ec2.DescribeInstances", record)
    listing = ClusterInstances(autoscaling, ec2, cluster)
    first = sorted(i.instance_id for i in listing.list())
    assert len(first) == 3 and in_full == [set(first)]

    ec2.terminate_instances(InstanceIds=[first[0]])
    listed = {i.instance_id for i in listing.list()}
    assert first[0] not in listed and set(first[1:]) <= listed
    autoscaling.set_desired_capacity(AutoScalingGroupName=group, DesiredCapacity=4)
    now = {i.instance_id for i in listing.list()}
    assert len(now) == 4 and first[0] not in now and set(first[1:]) < now
    assert not any(set(first[1:]) & ids for ids in in_full[1:]), in_full  # the known ones never again in full


def test_timer_heap_runs_in_deadline_order_with_replace_and_cancel() -> None:
    timers, ran, done = TimerHeap("test-timers"), [], threading.Event()
    timers.start()
    try:
        now = time.monotonic()
        timers.schedule("b", now + 0.06, lambda: ran.append("b"))
        timers.schedule("a", now + 0.03, lambda: ran.append("a-old"))
        timers.schedule("a", now + 0.02, lambda: ran.append("a"))  # replaces
        timers.schedule("c", now + 0.04, lambda: ran.append("c"))
        timers.cancel("c")
        timers.schedule("boom", now + 0.01, lambda: 1 / 0)  # logged, the thread carries on
        timers.schedule("end", now + 0.08, done.set)
        assert done.wait(2)
        assert ran == ["a", "b"]
        assert time.monotonic() - now >= 0.08
    finally:
        timers.stop()
    timers.stop()  # idempotent
    assert not [t for t in threading.enumerate() if t.name == "test-timers"]
