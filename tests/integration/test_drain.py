"""The drain engine on the real v1.20.2 control plane with simulated kubelets for moto's instances.

A watcher thread follows the protected pods through a watch (every transition, no sampling gaps)
and records the fewest healthy ones (Ready, not terminating: what a PDB counts) during a drain.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import boto3
import pytest
from kubernetes import client, watch

from clm.kube.apply import apply_manifests
from clm.kube.client import MERGE_PATCH, KubeClient
from clm.kube.drain import drain_pass
from clm.kube.nodes import DRAIN_START, LAST_FORCED, LIFECYCLE_LABEL, decommission_taint
from clm.kube.preflight import preflight
from clm.kube.settings import DrainSettings
from clm.render.manifests import split_manifests
from clm.timestamps import parse_time
from clm_sandbox.controlplane import ControlPlane
from clm_sandbox.nodesim import EventKind, NodeSimulator, create_node_pool

pytestmark = pytest.mark.integration

IMAGE = "registry.invalid/app:1"
QUICK = {
    "drain_min_pod_lifetime": "0s",
    "drain_min_healthy_sibling_lifetime": "0s",
    "drain_min_unhealthy_sibling_lifetime": "0s",
}


def wait_for(what: str, predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := predicate()):
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(0.05)
    return result


def healthy(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    return ready and not pod["metadata"].get("deletionTimestamp")


class HealthyCounter(threading.Thread):
    """Counts healthy pods of a selector from a watch; `fewest` is the minimum since `arm()`."""

    def __init__(self, api: client.ApiClient, namespace: str, selector: str):
        super().__init__(daemon=True, name=f"healthy-counter-{namespace}")
        self.core, self.namespace, self.selector = client.CoreV1Api(api), namespace, selector
        self.watch = watch.Watch()
        self.pods: dict[str, bool] = {}
        self.armed = self.stopping = False
        self.fewest: int | None = None
        self.counts: list[int] = []

    def run(self) -> None:
        try:
            for event in self.watch.stream(
                self.core.list_namespaced_pod,
                self.namespace,
                label_selector=self.selector,
                timeout_seconds=300,
                deserialize=False,
            ):
                self.update(event["type"], event["object"])
        except Exception:
            if not self.stopping:
                raise

    def update(self, kind: str, pod: dict[str, Any]) -> None:
        if kind == "DELETED":
            self.pods.pop(pod["metadata"]["name"], None)
        else:
            self.pods[pod["metadata"]["name"]] = healthy(pod)
        if self.armed:
            self.counts.append(self.healthy)
            self.fewest = min(self.fewest if self.fewest is not None else self.healthy, self.healthy)

    @property
    def healthy(self) -> int:
        return sum(self.pods.values())

    def arm(self) -> None:
        self.armed, self.fewest = True, self.healthy

    def stop(self) -> None:
        """Stop counting; the thread ends with the watch's next event or the session."""
        self.stopping = True
        self.watch.stop()


class Sandbox:
    """Three simulated nodes of one cluster, a namespace, and helpers to place workloads on the first node."""

    def __init__(self, kube: KubeClient, api: client.ApiClient, sim: NodeSimulator, namespace: str, nodes: list[str]):
        self.kube, self.api, self.sim, self.namespace, self.nodes = kube, api, sim, namespace, nodes
        self.victim = nodes[0]

    def apply(self, text: str) -> None:
        manifests = split_manifests(text, "test.yaml")
        for manifest in manifests:
            manifest.body["metadata"]["namespace"] = self.namespace
        apply_manifests(self.kube, manifests)

    def pods(self, selector: str = "", node: str | None = None) -> list[dict[str, Any]]:
        query = {"labelSelector": selector or None, "fieldSelector": node and f"spec.nodeName={node}"}
        return self.kube.request("GET", f"/api/v1/namespaces/{self.namespace}/pods", query=query)["items"]

    def set_unschedulable(self, nodes: list[str], unschedulable: bool) -> None:
        for node in nodes:
            self.kube.request(
                "PATCH",
                f"/api/v1/nodes/{node}",
                body={"spec": {"unschedulable": unschedulable}},
                content_type=MERGE_PATCH,
            )

    def place_on_victim(self, manifests: str, ready: dict[str, int]) -> None:
        """Apply with the other nodes cordoned, so the pods land on the victim; wait for them Ready."""
        self.place_on(1, manifests, ready)

    def place_on(self, count: int, manifests: str, ready: dict[str, int]) -> None:
        """Apply with all but the first `count` nodes cordoned, so the pods land on those; wait for them Ready."""
        self.set_unschedulable(self.nodes[count:], True)
        self.apply(manifests)
        for selector, pods in ready.items():
            wait_for(
                f"{pods} Ready pods {selector} on the first {count} node(s)",
                lambda s=selector, c=pods: (
                    sum(len([p for p in self.pods(s, node) if healthy(p)]) for node in self.nodes[:count]) == c
                ),
            )
        self.set_unschedulable(self.nodes[count:], False)

    def budget_settled(self, name: str, allowed: int) -> bool:
        pdb = self.kube.request("GET", f"/apis/policy/v1beta1/namespaces/{self.namespace}/poddisruptionbudgets/{name}")
        status = pdb.get("status") or {}
        return (
            status.get("observedGeneration") == pdb["metadata"]["generation"]
            and status.get("disruptionsAllowed") == allowed
            and status.get("currentHealthy") == status.get("expectedPods")
        )

    def node(self) -> dict[str, Any]:
        return self.kube.request("GET", f"/api/v1/nodes/{self.victim}")


@contextmanager
def node_sandbox(
    control_plane: ControlPlane, kube_api: client.ApiClient, aws: boto3.Session, count: int = 3
) -> Iterator[Sandbox]:
    """`count` simulated Ready nodes of a new cluster, and a namespace of its own."""
    suffix = uuid.uuid4().hex[:6]
    cluster_id = f"aws:123456789012:eu-central-1:drain-{suffix}"
    namespace = f"drain-{suffix}"
    create_node_pool(aws, cluster_id, "workers", count)
    with (
        KubeClient.from_kubeconfig(control_plane.kubeconfig_path, cluster_id=cluster_id) as kube,
        NodeSimulator(kube_api, aws, cluster_id, pod_ready_delay=0.3, poll_interval=0.2) as sim,
    ):
        nodes = sim.wait_for_ready_nodes(count, timeout=30)
        kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": namespace}})
        try:
            yield Sandbox(kube, kube_api, sim, namespace, nodes)
        finally:
            kube.request("DELETE", f"/api/v1/namespaces/{namespace}")


@pytest.fixture
def sandbox(control_plane: ControlPlane, kube_api: client.ApiClient, aws: boto3.Session) -> Iterator[Sandbox]:
    with node_sandbox(control_plane, kube_api, aws) as made:
        yield made


def deployment(name: str, replicas: int, grace: int = 1, app: str | None = None) -> str:
    """A Deployment `name` whose pods are labelled `app: <name>`, or `app: <app>` (several Deployments behind one
    budget), each Deployment's pods then also `deployment: <name>`."""
    labels = f"app: {name}" if app is None else f"app: {app}, deployment: {name}"
    return f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{{labels}}}}}
  template:
    metadata: {{labels: {{{labels}}}}}
    spec:
      terminationGracePeriodSeconds: {grace}
      containers: [{{name: app, image: {IMAGE}}}]
"""


def pdb(name: str, rule: str) -> str:
    return f"""---
apiVersion: policy/v1beta1
kind: PodDisruptionBudget
metadata: {{name: {name}}}
spec: {{{rule}, selector: {{matchLabels: {{app: {name}}}}}}}
"""


def daemonset(name: str) -> str:
    return f"""---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: {name}, image: {IMAGE}}}]}}
"""


def drain_until_done(
    kube: KubeClient, node: str, settings: DrainSettings, timeout: float = 60.0, budget: float = 3.0
) -> list[dict[str, Any]]:
    """Passes with the Wait a workflow would do between them, until done."""
    results, deadline = [], time.monotonic() + timeout
    while True:
        result = drain_pass(kube, node, settings, budget_seconds=budget)
        result["at"] = time.monotonic()
        json.dumps(result)  # a Lambda's payload
        results.append(result)
        if result["done"]:
            return results
        assert time.monotonic() < deadline, f"drain not done after {timeout:.0f} s: {result}"
        time.sleep(result["wait_seconds"])


@pytest.mark.parametrize(("item", "master", "nodes_to_run_on"), [("", False, 3), ("true", False, 2), ("true", True, 3)])
def test_the_decommission_taint_effect_decides_where_new_daemon_pods_go(
    sandbox: Sandbox, item: str, master: bool, nodes_to_run_on: int
):
    """CLM's PreferNoSchedule taint (and the cordon, which DaemonSets tolerate) still lets a new DaemonSet run on a
    draining node; with decommission_node_no_schedule_taint "true" (NoSchedule) the DaemonSet controller skips it,
    unless the node is a master pool's: CLM's node_pool_manager.go MarkNodeForDecommission never gives a master
    NoSchedule (`m.noScheduleTaint && !node.Master`), so control-plane DaemonSets keep every master."""
    settings = DrainSettings.from_config_items({"decommission_node_no_schedule_taint": item}, master=master)
    assert drain_pass(sandbox.kube, sandbox.victim, settings)["done"]  # an empty node: cordoned and tainted
    assert decommission_taint(settings.taint_effect) in sandbox.node()["spec"]["taints"]
    sandbox.apply(daemonset("late"))
    path = f"/apis/apps/v1/namespaces/{sandbox.namespace}/daemonsets/late"

    def scheduled() -> int | None:
        daemon_set = sandbox.kube.request("GET", path)
        status = daemon_set.get("status") or {}
        settled = status.get("observedGeneration") == daemon_set["metadata"]["generation"]
        return status.get("desiredNumberScheduled") if settled and status.get("numberReady") else None

    assert wait_for("the DaemonSet's status", scheduled) == nodes_to_run_on
    if nodes_to_run_on == 3:
        wait_for("the DaemonSet's pod on the draining node", lambda: sandbox.pods("app=late", sandbox.victim))
    else:
        assert not sandbox.pods("app=late", sandbox.victim)


def test_drain_honours_the_pdb_and_leaves_daemonset_pods(sandbox: Sandbox):
    ns = sandbox.namespace
    sandbox.place_on_victim(
        deployment("web", 3)
        + pdb("web", "minAvailable: 2")
        + daemonset("agent")
        + f"""---
apiVersion: v1
kind: Pod
metadata: {{name: bare, labels: {{app: bare}}}}
spec:
  nodeName: {sandbox.victim}
  terminationGracePeriodSeconds: 1
  containers: [{{name: c, image: {IMAGE}}}]
  volumes: [{{name: scratch, emptyDir: {{}}}}]
""",
        {"app=web": 3, "app=agent": 1, "app=bare": 1},
    )
    wait_for("the PDB to allow one disruption", lambda: sandbox.budget_settled("web", 1))
    (agent,) = sandbox.pods("app=agent", sandbox.victim)
    plan = preflight(sandbox.kube, sandbox.victim)
    assert plan["evictable"] == 4 and plan["blockers"] == []
    assert plan["warnings"] == [
        {"pod": f"{ns}/bare", "reason": "no controller: nothing recreates it"},
        {"pod": f"{ns}/bare", "reason": "emptyDir volume: its data is lost"},
    ]
    counter = HealthyCounter(sandbox.api, ns, "app=web")
    counter.start()
    wait_for("the watcher to see 3 healthy pods", lambda: counter.healthy == 3)
    counter.arm()

    started = time.monotonic()
    results = drain_until_done(sandbox.kube, sandbox.victim, DrainSettings.from_config_items({}))
    elapsed = time.monotonic() - started
    counter.stop()

    assert counter.fewest == 2, f"healthy web pods during the drain: {counter.counts}"  # never below minAvailable
    left = sandbox.pods(node=sandbox.victim)
    assert [p["metadata"]["name"] for p in left] == [agent["metadata"]["name"]]  # done only when empty
    assert left[0]["metadata"]["uid"] == agent["metadata"]["uid"] and not left[0]["metadata"].get("deletionTimestamp")
    assert all(not r["done"] for r in results[:-1])
    evicted = sorted(name for r in results for name in r["evicted"])
    assert len(evicted) == 4 and f"{ns}/bare" in evicted and not any(r["forced"] for r in results)
    assert len([p for p in sandbox.pods("app=web") if healthy(p)]) == 3
    node = sandbox.node()
    assert node["spec"]["unschedulable"] is True and decommission_taint() in node["spec"]["taints"]
    assert node["metadata"]["labels"][LIFECYCLE_LABEL] == "draining"
    assert node["metadata"]["annotations"][DRAIN_START] == results[0]["drain_start"]
    print(
        f"\ndrain of 3 PDB pods + a bare pod: {elapsed:.2f} s in {len(results)} passes, "
        f"waits {[r['wait_seconds'] for r in results[:-1]]}"
    )


def test_max_unavailable_zero_blocks_until_the_force_rules_allow(sandbox: Sandbox):
    ns = sandbox.namespace
    sandbox.place_on_victim(deployment("locked", 2) + pdb("locked", "maxUnavailable: 0"), {"app=locked": 2})
    wait_for("the PDB to settle", lambda: sandbox.budget_settled("locked", 0))
    settings = DrainSettings.from_config_items(
        {**QUICK, "drain_grace_period": "4s", "drain_force_evict_interval": "2s"}
    )

    plan = preflight(sandbox.kube, sandbox.victim)
    assert [b["pdb"] for b in plan["blockers"]] == [f"{ns}/locked"] * 2
    assert (
        plan["blockers"][0]["reason"]
        == f"PodDisruptionBudget {ns}/locked allows 0 disruptions (2 healthy of 2, 2 needed)"
    )

    called = time.monotonic()
    first = drain_pass(sandbox.kube, sandbox.victim, settings, budget_seconds=0.5)
    assert not first["done"] and first["evicted"] == [] and first["forced"] == []
    assert {b["pdb"] for b in first["blocked"]} == {f"{ns}/locked"} and len(first["blocked"]) == 2
    assert all("drain grace period 4s" in b["reason"] for b in first["blocked"])
    assert 1 <= first["wait_seconds"] <= 5  # until the grace period ends, not a fixed delay

    results = drain_until_done(sandbox.kube, sandbox.victim, settings, timeout=30)
    assert not any(r["evicted"] for r in results)
    forced = [name for r in results for name in r["forced"]]
    assert len(forced) == 2
    deleted_at = sorted(sandbox.sim.events_of(EventKind.POD_DELETION_SEEN, name)[0].at for name in forced)
    assert deleted_at[0] - called >= 3.95  # the grace period, counted from the drain start
    assert deleted_at[1] - deleted_at[0] >= 1.95  # the force-evict interval
    annotations = sandbox.node()["metadata"]["annotations"]
    assert annotations[DRAIN_START] == first["drain_start"]
    assert parse_time(annotations[LAST_FORCED]) >= parse_time(first["drain_start"]) + timedelta(seconds=6)


def test_a_young_job_pod_under_the_same_budget_does_not_hold_back_a_forced_deletion(sandbox: Sandbox):
    """CLM's ignoredSiblingPod: pods the Job controller owns are no siblings, however young."""
    ns = sandbox.namespace
    sandbox.place_on_victim(deployment("batch", 1), {"app=batch": 1})
    sandbox.set_unschedulable([sandbox.victim], True)
    sandbox.apply(
        pdb("batch", "minAvailable: 2")
        + f"""---
apiVersion: batch/v1
kind: Job
metadata: {{name: batch-job}}
spec:
  template:
    metadata: {{labels: {{app: batch}}}}
    spec: {{restartPolicy: Never, containers: [{{name: job, image: {IMAGE}}}]}}
"""
    )
    wait_for("the Job's pod Ready", lambda: [p for p in sandbox.pods("job-name=batch-job") if healthy(p)])
    wait_for("the PDB to settle", lambda: sandbox.budget_settled("batch", 0))
    young = {"drain_min_healthy_sibling_lifetime": "1h", "drain_min_unhealthy_sibling_lifetime": "1h"}
    settings = DrainSettings.from_config_items({**QUICK, **young, "drain_grace_period": "0s"})

    first = drain_pass(sandbox.kube, sandbox.victim, settings, budget_seconds=3)
    assert len(first["forced"]) == 1 and first["forced"][0].startswith(f"{ns}/batch-"), first
    assert drain_until_done(sandbox.kube, sandbox.victim, settings, timeout=30)[-1]["done"]


RESUME_SCRIPT = """
import json, sys
from clm.kube.client import MERGE_PATCH, KubeClient
from clm.kube.drain import drain_pass
from clm.kube.settings import DrainSettings
kubeconfig, node, items, budget, passes = sys.argv[1:]
kube = KubeClient.from_kubeconfig(kubeconfig)
for _ in range(int(passes)):
    result = drain_pass(kube, node, DrainSettings.from_config_items(json.loads(items)), budget_seconds=float(budget))
    print(json.dumps(result), flush=True)
    if result["done"]:
        break
    import time; time.sleep(result["wait_seconds"])
"""


def test_a_killed_drain_resumed_in_a_new_process_keeps_its_clocks(sandbox: Sandbox, control_plane: ControlPlane):
    """The second process starts 6 s after the drain began, past its 5 s grace period: on the original clock it
    forces the pod at its first pass, 6 s plus its own start (1-2 s idle, more when the machine is loaded) after the
    drain began; a restarted clock would wait 5 s more (at least 11 s). The bound, 10.5 s, leaves about 4 s for the
    start (the annotations hold whole seconds)."""
    sandbox.place_on_victim(deployment("solo", 1) + pdb("solo", "maxUnavailable: 0"), {"app=solo": 1})
    wait_for("the PDB to settle", lambda: sandbox.budget_settled("solo", 0))
    items = json.dumps({**QUICK, "drain_grace_period": "5s"})

    def run(budget: float, passes: int) -> subprocess.Popen:
        return subprocess.Popen(
            [
                sys.executable,
                "-c",
                RESUME_SCRIPT,
                str(control_plane.kubeconfig_path),
                sandbox.victim,
                items,
                str(budget),
                str(passes),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )

    first = run(budget=30, passes=1)  # would wait in its pass for the grace period to end
    started = wait_for(
        "the first process to start the drain",
        lambda: (sandbox.node()["metadata"].get("annotations") or {}).get(DRAIN_START),
        timeout=20,
    )
    first.kill()
    first.wait()
    time.sleep(6)  # a restarted clock would start seconds later

    second = run(budget=3, passes=20)
    output, _ = second.communicate(timeout=60)
    results = [json.loads(line) for line in output.splitlines()]
    assert results[-1]["done"] and {r["drain_start"] for r in results} == {started}
    forced_after = parse_time(sandbox.node()["metadata"]["annotations"][LAST_FORCED]) - parse_time(started)
    assert timedelta(seconds=6) <= forced_after < timedelta(seconds=10.5)  # the original clock, not the resumed one
    (forced,) = [name for r in results for name in r["forced"]]
    assert forced.startswith(f"{sandbox.namespace}/solo-")
