"""The sandbox's kubelets: Nodes for a cluster's EC2 instances in moto, Running pods, finished deletions.

    with NodeSimulator(api_client, session, cluster_id, boot_delay=1, pod_ready_delay=1) as sim:
        sim.wait_for_ready_nodes(3)

Four threads: one lists the cluster's auto scaling groups every ``poll_interval`` (with ``karpenter=True``
it first runs a Karpenter stand-in pass, clm_sandbox.nodesim.karpenter, whose instances join them) and
registers or removes Nodes; one watches the pods bound to any node; one runs delayed actions from a timer
heap (boots, pods turning Ready, graceful deletions finishing); one sends the Nodes' heartbeats, so that many
nodes' heartbeats never hold up a boot or a pod. An instance whose user data names a
bootstrap archive boots only if its role can fetch and decrypt it (clm_sandbox.nodesim.bootstrap); otherwise its
Node never registers, as on AWS. Every step is recorded in :attr:`NodeSimulator.events`.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import boto3
from kubernetes import client

from clm_sandbox.nodesim.aws import ClusterInstances
from clm_sandbox.nodesim.bootstrap import NodeBootstrap
from clm_sandbox.nodesim.karpenter import KarpenterStandIn
from clm_sandbox.nodesim.kube import KubeletApi
from clm_sandbox.nodesim.model import EventKind, Instance, SimEvent, pod_ref, started_at
from clm_sandbox.nodesim.pods import PodKeeper
from clm_sandbox.nodesim.timers import TimerHeap
from clm_sandbox.nodesim.watch import PodWatcher

log = logging.getLogger(__name__)


@dataclass
class _Machine:
    instance: Instance
    boot_at: float  # monotonic
    registered: bool = False  # its Node was (being) created
    gone: bool = False  # the instance left; the Node is being removed
    bootstrap: str = ""  # "running" (by the timer or a sync, not both), "ok", or "failed": it never joins


class NodeSimulator:
    """Simulated kubelets for the EC2 instances of the auto scaling groups of one cluster.

    ``boot_delay``: seconds from an instance's launch to its Node being Ready;
    ``pod_ready_delay``: seconds from a pod's binding to it being Running and Ready;
    ``time_scale``: graceful deletions finish after grace period * ``time_scale``;
    ``remove_nodes_on_stop``: :meth:`stop` deletes the Nodes and force-deletes their pods;
    ``karpenter``: launch instances for pending pods that a Karpenter NodePool can take (needs the CRDs,
    clm_sandbox.nodesim.karpenter_crds); :attr:`karpenter` is the stand-in then;
    ``bootstrap``: run each instance's bootstrap fetches as its role before its Node registers.
    """

    def __init__(
        self,
        api_client: client.ApiClient,
        session: boto3.Session,
        cluster_id: str,
        *,
        boot_delay: float = 0.0,
        pod_ready_delay: float = 0.0,
        time_scale: float = 1.0,
        poll_interval: float = 0.5,
        endpoint_url: str | None = None,
        heartbeat_interval: float = 10.0,
        remove_nodes_on_stop: bool = True,
        karpenter: bool = False,
        bootstrap: bool = True,
    ) -> None:
        self.cluster_id = cluster_id
        self.boot_delay, self.pod_ready_delay, self.time_scale = boot_delay, pod_ready_delay, time_scale
        self.poll_interval, self.heartbeat_interval = poll_interval, heartbeat_interval
        self.remove_nodes_on_stop = remove_nodes_on_stop
        self.events: list[SimEvent] = []
        self._ec2 = session.client("ec2", endpoint_url=endpoint_url)
        self._instances = ClusterInstances(
            session.client("autoscaling", endpoint_url=endpoint_url), self._ec2, cluster_id
        )
        self._bootstrap = NodeBootstrap(session, endpoint_url) if bootstrap else None
        self._kubelet = KubeletApi(api_client)
        self.karpenter = KarpenterStandIn(api_client, self._ec2, cluster_id) if karpenter else None
        self._timers = TimerHeap(f"nodesim-timers-{cluster_id}")
        self._heartbeats = TimerHeap(f"nodesim-heartbeats-{cluster_id}")  # never ahead of a boot or a pod's timer
        self._pods = PodKeeper(
            self._kubelet,
            self._timers,
            self._record,
            self._host_ip_of,
            self._is_removed,
            pod_ready_delay=pod_ready_delay,
            time_scale=time_scale,
            label=f"cluster {cluster_id}",
        )
        self._watcher = PodWatcher(api_client, self._pods.on_event, self._pods.on_resync)
        self._state = threading.Condition()  # guards the fields below; notified when a Node turns Ready
        self._node_ops = threading.Lock()  # registering and removing Nodes never interleave
        self._machines: dict[str, _Machine] = {}  # instance id ->
        self._nodes: dict[str, str] = {}  # node name -> instance id, from registration on
        self._ready: set[str] = set()
        self._retired: set[str] = set()  # names of removed Nodes: pods bound to them are orphans
        self._lifecycle = threading.Lock()
        self._stopping = threading.Event()
        self._poller: threading.Thread | None = None
        self._stopped = False

    def __repr__(self) -> str:
        return f"<NodeSimulator {self.cluster_id}: {len(self._ready)} Ready nodes>"

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start the instance poller, the pod watch and the timer threads; return at once."""
        with self._lifecycle:
            if self._poller is not None or self._stopped:
                raise RuntimeError(f"node simulator of cluster {self.cluster_id} was already started")
            self._timers.start()
            self._heartbeats.start()
            self._watcher.start(f"nodesim-pods-{self.cluster_id}")
            self._poller = threading.Thread(target=self._poll, name=f"nodesim-aws-{self.cluster_id}", daemon=True)
            self._poller.start()

    def stop(self) -> None:
        """Stop and join every thread, then (``remove_nodes_on_stop``) remove the Nodes. Idempotent."""
        with self._lifecycle:
            if self._stopped:
                return
            self._stopped = True
            self._stopping.set()
            if self._poller is not None:
                self._poller.join()
            self._watcher.stop()
            self._timers.stop()
            self._heartbeats.stop()
        if self.remove_nodes_on_stop:
            with self._state:
                machines = [m for m in self._machines.values() if m.registered]
            for machine in machines:
                self._retire(machine)

    # --------------------------------------------------------------------- public
    @property
    def ready_nodes(self) -> list[str]:
        """Names of the Nodes that are Ready now, sorted."""
        with self._state:
            return sorted(self._ready)

    def events_of(self, kind: EventKind, subject: str | None = None) -> list[SimEvent]:
        """The recorded events of one kind (and subject)."""
        return [e for e in list(self.events) if e.kind == kind and (subject is None or e.subject == subject)]

    def wait_for_ready_nodes(self, count: int, timeout: float = 60) -> list[str]:
        """Wait until at least ``count`` Nodes are Ready; return their names (sorted)."""
        deadline = time.monotonic() + timeout
        with self._state:
            while len(self._ready) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"cluster {self.cluster_id}: {len(self._ready)} of {count} nodes Ready after {timeout:.0f} s "
                        f"({len(self._machines)} running instances seen)"
                    )
                self._state.wait(left)
            return sorted(self._ready)

    def sync_once(self) -> None:
        """One reconciliation: remove Nodes of instances that left, register the booted ones, run the bootstrap of
        the new ones still booting (no waiting)."""
        found = self._instances.list()
        if self.karpenter is not None:
            found += self.karpenter.reconcile(self.ready_nodes)
        instances = {i.instance_id: i for i in found}
        now, wall = time.monotonic(), time.time()
        with self._state:
            gone = [m for instance_id, m in self._machines.items() if instance_id not in instances]
            new = [
                _Machine(i, boot_at=now + started_at(i.launched_at, wall) + self.boot_delay - wall)
                for instance_id, i in instances.items()
                if instance_id not in self._machines
            ]
            for machine in gone:
                machine.gone = True
            self._machines.update((m.instance.instance_id, m) for m in new)
            due = [
                m
                for m in self._machines.values()
                if not m.registered and not m.gone and m.bootstrap != "failed" and m.boot_at <= now
            ]
        for machine in new:
            self._record(EventKind.INSTANCE_SEEN, machine.instance.instance_id, machine.instance.node_name)
            if machine.boot_at > now:
                instance_id = machine.instance.instance_id
                self._timers.schedule(
                    ("boot", instance_id), machine.boot_at, functools.partial(self._boot, instance_id)
                )
        for machine in gone:
            self._timers.cancel(("boot", machine.instance.instance_id))
            self._retire(machine)
        for machine in due:
            self._boot(machine.instance.instance_id)
        for machine in new:  # its bootstrap runs while it boots, as on AWS: at boot_at only the kubelet registers
            if machine.boot_at > time.monotonic():
                self._bootstrapped(machine.instance.instance_id)

    # --------------------------------------------------------------------- nodes
    def _poll(self) -> None:
        while not self._stopping.is_set():
            try:
                self.sync_once()
            except Exception:
                log.exception("cluster %s: node sync failed; trying again", self.cluster_id)
            self._stopping.wait(self.poll_interval)

    def _boot(self, instance_id: str) -> None:
        """Register the instance's Node and make it Ready once its bootstrap succeeds; a failure to register is
        retried by the next sync, a failed bootstrap never."""
        if not self._bootstrapped(instance_id):
            return
        with self._node_ops:
            with self._state:
                machine = self._machines.get(instance_id)
                if machine is None or machine.registered or machine.gone:
                    return
                instance = machine.instance
                owner = self._nodes.get(instance.node_name)
                if owner is not None:
                    log.error("node name %s of %s is taken by %s", instance.node_name, instance_id, owner)
                    return
                machine.registered = True
                self._nodes[instance.node_name] = instance_id
                self._retired.discard(instance.node_name)
            try:
                registering = time.monotonic()
                self._kubelet.register_node(instance, time.time())
                self._record(EventKind.NODE_REGISTERED, instance.node_name, instance_id, registering)
                readying = time.monotonic()
                self._kubelet.set_node_ready(instance, time.time())
            except Exception:
                log.exception("cluster %s: registering node %s failed", self.cluster_id, instance.node_name)
                with self._state:
                    machine.registered = False
                    del self._nodes[instance.node_name]
                return
            with self._state:
                self._ready.add(instance.node_name)
                self._state.notify_all()
        self._record(EventKind.NODE_READY, instance.node_name, instance_id, readying)
        self._schedule_heartbeat(instance.node_name)
        self._adopt_pods(instance.node_name)

    def _bootstrapped(self, instance_id: str) -> bool:
        """Whether the instance's bootstrap succeeds (always, without ``bootstrap``); a failure is recorded."""
        with self._state:
            machine = self._machines.get(instance_id)
            if machine is None or machine.registered or machine.gone or machine.bootstrap in ("running", "failed"):
                return False
            if self._bootstrap is None or machine.bootstrap == "ok":
                return True
            machine.bootstrap = "running"
        failure = None
        try:
            failure = self._bootstrap.failure(instance_id)
        except Exception:  # the instance left meanwhile, moto hiccup: the next sync tries again
            log.exception("cluster %s: bootstrap of %s could not be run", self.cluster_id, instance_id)
            outcome = ""
        else:
            outcome = "ok" if failure is None else "failed"
        with self._state:
            machine.bootstrap = outcome
        if failure is not None:
            log.warning("cluster %s: %s never joins: its bootstrap fails: %s", self.cluster_id, instance_id, failure)
            self._record(EventKind.BOOTSTRAP_FAILED, instance_id, failure)
        return outcome == "ok"

    def _adopt_pods(self, name: str) -> None:
        """Hand the pods bound to the node before it was ours (an adopted Node) to the pod keeper."""
        try:
            pods = self._kubelet.pods_on_node(name)
        except Exception:
            log.exception("cluster %s: listing the pods of node %s failed", self.cluster_id, name)
            return
        for pod in pods:
            self._pods.on_event("ADDED", pod)

    def _retire(self, machine: _Machine) -> None:
        """Delete the Node of a machine that left and force-delete its pods; kept for the next sync on failure."""
        instance = machine.instance
        name = instance.node_name
        with self._node_ops:
            with self._state:
                if self._machines.get(instance.instance_id) is not machine:
                    return  # retired already
            if machine.registered:
                try:
                    self._remove_node(name, instance.instance_id)
                except Exception:
                    log.exception("cluster %s: removing node %s failed; trying again", self.cluster_id, name)
                    return
            with self._state:
                self._machines.pop(instance.instance_id, None)

    def _remove_node(self, name: str, instance_id: str) -> None:
        with self._state:
            if self._nodes.get(name) == instance_id:
                del self._nodes[name]
            self._ready.discard(name)
            self._retired.add(name)
        self._heartbeats.cancel(name)
        self._pods.forget_node(name)
        deleting = time.monotonic()
        if self._kubelet.delete_node(name):
            self._record(EventKind.NODE_DELETED, name, "", deleting)
        for pod in self._kubelet.pods_on_node(name):
            meta, deleting = pod["metadata"], time.monotonic()
            if self._kubelet.delete_pod_now(meta["namespace"], meta["name"], meta["uid"]):
                self._record(EventKind.POD_FORCE_DELETED, pod_ref(pod), name, deleting)

    def _schedule_heartbeat(self, name: str) -> None:
        self._heartbeats.schedule(
            name, time.monotonic() + self.heartbeat_interval, functools.partial(self._heartbeat, name)
        )

    def _heartbeat(self, name: str) -> None:
        with self._state:
            if name not in self._ready:
                return
        try:
            alive = self._kubelet.heartbeat(name, time.time())
        except Exception as exc:
            log.warning("cluster %s: heartbeat of node %s failed: %s", self.cluster_id, name, exc)
            alive = True
        if alive:
            self._schedule_heartbeat(name)
        else:
            log.info("cluster %s: node %s was deleted by someone else; its heartbeats stop", self.cluster_id, name)

    # -------------------------------------------------------------------- helpers
    def _host_ip_of(self, node: str) -> str | None:
        """The private IP of one of our registered nodes; None for any other name."""
        with self._state:
            instance_id = self._nodes.get(node)
            return self._machines[instance_id].instance.private_ip if instance_id is not None else None

    def _is_removed(self, node: str) -> bool:
        with self._state:
            return node in self._retired and node not in self._nodes

    def _record(self, kind: EventKind, subject: str, detail: str = "", at: float | None = None) -> None:
        """Append to the timeline; ``at`` (default: now) is when the API write that did it was sent."""
        self.events.append(SimEvent(time.monotonic() if at is None else at, kind, subject, detail))
        log.debug("cluster %s: %s %s %s", self.cluster_id, kind, subject, detail)
