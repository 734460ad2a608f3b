"""The peer benchmark's pure parts: eks-rolling-update's pins, settings and log, the rows and table, the arguments,
and what the watchers count (bench/peer_*.py, bench/roll_peak.py, bench/roll_watch.py)."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kubernetes import client
from rich.console import Console

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))

import peer_roll
import peer_tool
import roll
from peer_report import PeerRow, clm_row, comparison_table
from roll_bound import roll_bound
from roll_peak import GroupPeak
from roll_watch import ReadyWatch

ROOT = Path(__file__).parents[2]


def test_the_tools_dependencies_are_installed_at_clms_pins() -> None:
    pins = peer_tool.lock_pins((ROOT / "requirements-layer.lock").read_text())
    assert "boto3==1.44.5" in pins and "kubernetes==36.0.3" in pins
    assert all("hash" not in pin and "\\" not in pin and pin.count("==") == 1 for pin in pins)
    pinned = {pin.split("==")[0] for pin in pins}
    unpinned = [dep for dep in peer_tool.TOOL_DEPENDENCIES if "==" not in dep]
    assert unpinned and all(dep in pinned for dep in unpinned)
    assert peer_tool.lock_pins("# a comment\nsix==1.17.0 \\\n    --hash=sha256:ab\n") == ["six==1.17.0"]


def test_the_tool_runs_against_the_sandbox_with_its_kubectl_first_and_its_waits_at_their_lowest() -> None:
    base = {"PATH": "/usr/bin", "AWS_PROFILE": "mine", "AWS_SESSION_TOKEN": "old", "HTTPS_PROXY": "p", "HOME": "/h"}
    credentials = {"AWS_ACCESS_KEY_ID": "ASIA1", "AWS_SECRET_ACCESS_KEY": "s", "AWS_SESSION_TOKEN": "t"}
    env = peer_tool.tool_env(
        base, Path("/venv/bin"), Path("/cache/kubectl"), "http://127.0.0.1:5000", Path("/k/config"), credentials
    )
    assert env["PATH"].split(":")[:3] == ["/cache/kubectl", "/venv/bin", "/usr/bin"]
    assert "AWS_PROFILE" not in env and "HTTPS_PROXY" not in env and env["HOME"] == "/h"
    assert env["AWS_SESSION_TOKEN"] == "t" and env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:5000"
    assert env["KUBECONFIG"] == "/k/config"
    assert env["CLUSTER_HEALTH_WAIT"] == env["BETWEEN_NODES_WAIT"] == "0" and env["GLOBAL_HEALTH_WAIT"] == "1"
    assert set(peer_tool.SETTINGS) <= set(env)


def _line(at: str, message: str) -> str:
    return f"2026-11-28 {at} INFO     {message}"


def test_the_tools_log_gives_its_scale_up_its_drains_and_its_end() -> None:
    log = "\n".join(
        [
            _line("09:00:00,100", "Describing autoscaling groups..."),
            _line("09:00:01,250", "Setting asg desired capacity from 2 to 4 and max size to 4..."),
            "a line kubectl printed",
            _line(
                "09:00:09,000", "Draining worker node with kubectl drain ip-10-0-1-5.ec2.internal --ignore-daemonsets"
            ),
            _line(
                "09:00:19,000", "Draining worker node with kubectl drain ip-10-0-2-7.ec2.internal --ignore-daemonsets"
            ),
            _line("09:00:29,000", "Setting asg desired capacity from 2 to 2 and max size to 2..."),
            _line("09:00:29,500", "*** Rolling update of all asg is complete! ***"),
        ]
    )
    read = peer_tool.read_log(log)
    at = datetime(2026, 11, 28, 9, 0, 1, 250000).timestamp()
    assert (read.scaled_up, read.surge_to) == (at, 4)
    assert read.done == at + 28.25
    assert read.drained == ("ip-10-0-1-5.ec2.internal", "ip-10-0-2-7.ec2.internal")
    assert peer_tool.read_log(_line("09:00:00,000", "Exiting since ASG healthcheck failed")).done is None


def _row(tool: str, wall: float, roll_seconds: float, bound: float, peak: int) -> PeerRow:
    return PeerRow(tool, wall, roll_seconds, bound, 0, 19, peak, 20)


def test_rows_side_by_side_with_their_ratios() -> None:
    rows = [_row("CLM, one node at a time", 130.0, 99.0, 90.0, 10), _row("eks-rolling-update", 101.0, 99.9, 27.0, 20)]
    assert rows[1].ratio == 3.7 and rows[1].wall_ratio == 101.0 / 27.0
    console = Console(record=True, width=250)
    console.print(comparison_table(rows, 10, 20))
    text = console.export_text()
    assert "rolling 10 nodes (20 web pods behind a PDB minAvailable 19)" in text
    [eks] = [line for line in text.splitlines() if "eks-rolling-update" in line]
    assert [cell.strip() for cell in eks.split("│")[1:-1]] == [
        "eks-rolling-update",
        "101.0",
        "99.9",
        "27.0",
        "3.70",
        "3.74",
        "0 (19)",
        "20",
        "20",
    ]


def test_a_clm_roll_is_timed_from_its_first_plan_to_the_plan_that_found_it_done() -> None:
    calls = [SimpleNamespace(step="begin", started=1.0), *(SimpleNamespace(step="plan", started=t) for t in (5.0, 9.0))]
    result = SimpleNamespace(
        trace=SimpleNamespace(calls=calls),
        run=SimpleNamespace(seconds=70.0),
        roll_end=40.0,
        bound=27.0,
        watch=SimpleNamespace(violations=0, lowest=19),
        pods_per_node=[2] * 10,
    )
    row = clm_row("CLM, surge 10", result, 20)  # type: ignore[arg-type]
    assert (row.wall, row.roll, row.bound, row.peak_instances, row.evictions) == (70.0, 35.0, 27.0, 20, 20)


def test_the_three_rolls_share_the_physics_and_differ_in_surge() -> None:
    args = peer_roll._parser().parse_args([])
    one, surged, peer = peer_roll.simulations(args)
    assert (one.nodes, one.replicas, one.boot_delay, one.grace, one.pod_ready_delay) == (10, 20, 5.0, 3, 1.0)
    assert [(s.surge, s.max_unavailable) for s in (one, surged, peer)] == [(0, 1), (10, 1), (10, 0)]
    assert [roll_bound([2] * 10, s) for s in (one, surged, peer)] == [90.0, 27.0, 27.0]
    small = peer_roll.simulations(peer_roll._parser().parse_args(["--nodes", "3", "--replicas", "4"]))
    assert [(s.nodes, s.replicas, s.surge) for s in small] == [(3, 4, 0), (3, 4, 3), (3, 4, 3)]


def test_roll_takes_the_pools_surge_as_a_count_or_a_percentage() -> None:
    assert roll._parser().parse_args([]).surge == "0"
    assert roll._parser().parse_args(["--surge", "100%", "--max-unavailable", "0"]).surge == "100%"


class _Groups:
    """An autoscaling client whose cluster groups hold the next of `counts` instances at each look."""

    def __init__(self, *counts: int):
        self.counts = list(counts)

    def get_paginator(self, name: str) -> Any:
        groups = self

        class Pages:
            def paginate(self, **_: Any) -> list[dict[str, Any]]:
                count = groups.counts.pop(0) if len(groups.counts) > 1 else groups.counts[0]
                return [{"AutoScalingGroups": [{"Instances": [{}] * count}]}]

        return Pages()


def test_the_group_peak_is_the_most_instances_seen_at_once() -> None:
    peak = GroupPeak(_Groups(10, 20, 15, 10), "kube-1", poll_seconds=0.01)
    peak.start()
    deadline = time.monotonic() + 10
    while len(peak.autoscaling.counts) > 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    peak.stop()
    assert peak.peak == 20


def _pod(name: str, node: str, app: str = "web", deleting: bool = False) -> dict[str, Any]:
    meta = {"name": name, "namespace": "example", "labels": {"app": app}}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-28T09:00:00Z"
    ready = [{"type": "Ready", "status": "True"}]
    return {"metadata": meta, "spec": {"nodeName": node}, "status": {"conditions": ready}}


def test_the_ready_watch_counts_the_pods_leaving_each_node() -> None:
    watch = ReadyWatch(client.ApiClient(), minimum=2)
    watch._on_resync([_pod("a", "n1"), _pod("b", "n1"), _pod("c", "n2")])
    watch._on_event("MODIFIED", _pod("a", "n1", deleting=True))
    watch._on_event("DELETED", _pod("a", "n1", deleting=True))
    watch._on_event("DELETED", _pod("c", "n2"))
    watch._on_event("MODIFIED", _pod("x", "n1", app="other", deleting=True))
    assert watch.pods_left(["n1", "n2", "n3"]) == [1, 1, 0]
    assert (watch.lowest, watch.violations) == (1, 1)  # after c left: 1 Ready, 2 wanted
