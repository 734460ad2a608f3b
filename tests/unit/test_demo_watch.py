"""The demo's watch: the budget's view of healthy pods, and the rollout it waits for before a roll starts."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client as k8s

from clm_sandbox.demo import watch as demo_watch
from clm_sandbox.demo.watch import RollWatch, Workload, healthy_pods, rolled_out, wait_for_rollout

WEB = Workload("example", "app=web", min_available=2)


def _pod(name: str, *, ready: bool = True, terminating: bool = False, labels: dict[str, str] | None = None) -> Any:
    return k8s.V1Pod(
        metadata=k8s.V1ObjectMeta(
            name=name,
            namespace="example",
            labels={"app": "web"} if labels is None else labels,
            deletion_timestamp=datetime(2026, 11, 24, tzinfo=UTC) if terminating else None,
        ),
        status=k8s.V1PodStatus(
            phase="Running" if ready else "Pending",
            conditions=[k8s.V1PodCondition(type="Ready", status="True" if ready else "False")],
        ),
    )


def _deployment(generation: int = 1, observed: int = 1, replicas: int = 3, updated: int = 3, available: int = 3) -> Any:
    return k8s.V1Deployment(
        metadata=k8s.V1ObjectMeta(name="web", namespace="example", generation=generation),
        spec=k8s.V1DeploymentSpec(replicas=3, selector=k8s.V1LabelSelector(), template=k8s.V1PodTemplateSpec()),
        status=k8s.V1DeploymentStatus(
            observed_generation=observed, replicas=replicas, updated_replicas=updated, available_replicas=available
        ),
    )


def test_healthy_pods_are_the_budgets_view_ready_not_terminating_matching() -> None:
    pods = [
        _pod("ready"),
        _pod("starting", ready=False),
        _pod("evicted", terminating=True),
        _pod("other", labels={"app": "db"}),
        _pod("also-ready"),
    ]
    assert healthy_pods(pods, WEB) == 2


@pytest.mark.parametrize(
    ("deployment", "done"),
    [
        (_deployment(), True),
        (_deployment(available=0), False),  # pods bound but not Ready yet: the demo's roll must not start
        (_deployment(available=2), False),
        (_deployment(generation=2, observed=1), False),  # the controller has not seen the latest spec
        (_deployment(replicas=4, updated=3), False),  # an old replica still there
        (_deployment(updated=2, available=2), False),
    ],
)
def test_rolled_out_as_kubectl_rollout_status_decides(deployment: Any, done: bool) -> None:
    assert rolled_out(deployment) is done


class _Apps:
    def __init__(self, deployments: list[Any]) -> None:
        self.deployments = deployments
        self.reads = 0

    def read_namespaced_deployment(self, name: str, namespace: str) -> Any:
        assert (namespace, name) == ("example", "web")
        self.reads += 1
        return self.deployments[min(self.reads, len(self.deployments)) - 1]


def test_wait_for_rollout_returns_once_every_replica_is_available(monkeypatch: pytest.MonkeyPatch) -> None:
    apps = _Apps([_deployment(available=0), _deployment(available=2), _deployment()])
    monkeypatch.setattr(demo_watch.k8s, "AppsV1Api", lambda _: apps)
    assert wait_for_rollout(k8s.ApiClient(), "example", "web", timeout=5, poll=0) == 3
    assert apps.reads == 3


def test_wait_for_rollout_names_the_deployment_when_it_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_watch.k8s, "AppsV1Api", lambda _: _Apps([_deployment(available=1)]))
    with pytest.raises(TimeoutError, match=r"deployment example/web: 1 of 3 replicas available after 0 s"):
        wait_for_rollout(k8s.ApiClient(), "example", "web", timeout=0, poll=0)


class _Core:
    def __init__(self, samples: list[list[Any]]) -> None:
        self.samples = samples

    def list_node(self) -> Any:
        return k8s.V1NodeList(items=[])

    def list_pod_for_all_namespaces(self) -> Any:
        return k8s.V1PodList(items=self.samples.pop(0))


def test_the_watch_counts_samples_below_the_budget_and_when_the_first_was() -> None:
    three, one_evicted, one_left = (
        [_pod("a"), _pod("b"), _pod("c")],
        [_pod("a", terminating=True), _pod("b"), _pod("c"), _pod("d", ready=False)],
        [_pod("b"), _pod("c", terminating=True), _pod("d", ready=False)],
    )
    watch = RollWatch(k8s.ApiClient(), Workload("example", "app=web", min_available=2))
    watch.core = _Core([three, one_evicted, one_left, one_left])
    for now in (0.1, 0.2, 0.3, 0.4):
        watch.observe(now)
    assert (watch.workload.samples, watch.workload.lowest) == (4, 1)
    assert (watch.workload.violations, watch.workload.first_violation) == (2, 0.3)
