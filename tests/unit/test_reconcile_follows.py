"""Reconcile follows a rolling rollout while the runs it waits for go on (clm.workflow.reconcile_steps)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from clm.workflow.follow_up import FOLLOW_SECONDS


def test_a_wave_whose_last_run_ends_during_the_look_is_looked_at_again(reconciling, monkeypatch) -> None:
    """The gate reads the wave's run as going (the registry not at its version yet), and the run ends before the
    look is over: reconcile must look again, or the next wave would wait for the 15-minute schedule. The running
    runs are listed before the registry is read; listed after, the ended run made the loop stop (CI, under load:
    tests/integration/test_fleet_rollout.py's production wave never started)."""
    from clm.workflow import reconcile_steps

    sfn, machine = reconciling
    run = sfn.start_execution(stateMachineArn=machine, name="t1-run", input="{}")["executionArn"]

    def gate(*_: Any) -> SimpleNamespace:
        sfn.stop_execution(executionArn=run)  # the wave's last run ends as the gate reads it as going
        return SimpleNamespace(allowed=[], rolling=True, wake_at=None, report=dict)

    monkeypatch.setattr(reconcile_steps, "gate", gate)
    result = reconcile_steps.reconcile({})
    assert result["started"]["count"] == 0
    assert (result["again"], result["wait_seconds"]) == (True, FOLLOW_SECONDS)


def test_a_rolling_rollout_with_no_run_going_is_not_polled(reconciling, monkeypatch) -> None:
    """Nothing runs and nothing starts (its wave's clusters are held elsewhere, e.g. by their windows): the loop
    ends; the schedule looks again."""
    from clm.workflow import reconcile_steps

    monkeypatch.setattr(
        reconcile_steps, "gate", lambda *_: SimpleNamespace(allowed=[], rolling=True, wake_at=None, report=dict)
    )
    assert reconcile_steps.reconcile({})["again"] is False


def test_a_cluster_whose_run_is_going_gets_no_run_beside_it_and_its_own_once_that_run_ends(
    reconciling, example_registry
) -> None:
    """A run of the cluster holds its lock and is running (started by a registry change, or recording the version
    before the one the registry now says): reconcile starts none beside it, which would only skip, as CLM's
    controller never takes a cluster it is updating (controller/cluster_list.go UpdateAvailable: only idle clusters
    are pending). It looks again, and starts the cluster's run once that run has ended: a loop that ended there left
    a registry edit made during a roll to the 15-minute schedule (CI: tests/integration/test_clc_update.py, whose
    look fell between the roll recording its version, which ended its rollout, and its run ending)."""
    from clm.workflow import reconcile_steps

    sfn, machine = reconciling
    going = sfn.start_execution(stateMachineArn=machine, name="kube-1-going", input="{}")["executionArn"]
    [cluster, *others] = example_registry.list_clusters()
    assert example_registry.acquire_lock(cluster.id, going, lambda execution: True) is True
    result = reconcile_steps.reconcile({})
    assert result["waiting_for_run"]["ids"] == [cluster.id] and cluster.id not in result["started"]["ids"], result
    assert result["started"]["count"] == len(others)
    assert (result["again"], result["wait_seconds"]) == (True, FOLLOW_SECONDS), "no look after the going run"
    sfn.stop_execution(executionArn=going)  # a lock whose run ended: the cluster's next run takes it over
    after = reconcile_steps.reconcile({})
    assert cluster.id in after["started"]["ids"] and after["waiting_for_run"]["count"] == 0, after
