"""The drain steps of the `roll` function: a pass over one node, or over a batch's nodes together."""

from __future__ import annotations

from typing import Any

from clm.kube.settings import DrainSettings
from clm.model import Cluster
from clm.workflow.cluster_access import kube_client, rendering
from clm.workflow.target_aws import of_event
from clm.workflow.terminations import Terminations, terminated_now


def drain(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool, replacement, previous}` -> one drain pass over the replacement's node
    (cordons it first), after `previous` (the last pass's result in this execution, or `{passes: 0}`), with the
    passes this execution has made over the node counting this one (the execution's budget counts them).
    A blocked drain is recorded and announced when the plan asks (`drain_blocked: continue`), and `set_aside`: the
    node is left cordoned while the roll goes on (clm.workflow.drain_aside). A node the pass drained has its
    instance terminated at once (`terminated`, `terminated_at`; unless that failed: Replace's Terminate does it
    then), so that its successor boots as the pass ends. A replacement the batch's passes drained (`drained`) is
    done at once, `terminated` too when they terminated it."""
    from clm.kube.drain import drain_pass
    from clm.workflow.drain_aside import announces, blocked

    previous = event.get("previous") or {}
    passes = int(previous.get("passes") or 0) + 1
    replacement = event["replacement"]
    node = replacement.get("node")
    if replacement.get("drained"):  # by the batch's passes (drain_batch): no pass of its own
        batched = {"node": node, "done": True, "wait_seconds": 0, "passes": 0, "set_aside": False, "batched": True}
        if "terminated" in replacement:  # and its instance, by the pass: Replace ends the node's iteration
            batched["terminated"] = replacement["terminated"]
        return batched
    if not node:
        return {"node": None, "done": True, "wait_seconds": 0, "passes": passes, "set_aside": False}
    cluster = rendering(event["rendering"]).cluster
    settings = pool_drain_settings(cluster, event["node_pool"])
    where = of_event(event)
    with kube_client(cluster, where) as kube:
        result = {**drain_pass(kube, node, settings, seen=previous.get("budgets_seen")), "passes": passes}
        result = blocked(kube, event, result) if announces(event, result) else {**result, "set_aside": False}
    return {**result, **terminated_now(where, replacement, cluster.name)} if result["done"] else result


def drain_batch(event: dict[str, Any]) -> dict[str, Any]:
    """`{cluster_id, rendering, node_pool, decision}` -> one pass over the replace decision's nodes not yet
    drained, together (clm.kube.batch_drain), each node's instance terminated as soon as it is drained
    (clm.workflow.terminations): the decision, its drained replacements marked `drained` (and `terminated`, with
    the instance's new state, and `terminated_at`, unless its termination failed: Replace's Terminate does it then),
    with `batch_drain`: {passes, again, wait_seconds, seen, nodes, unterminated}. `again`: another batch pass after
    `wait_seconds` (some node still drains through budgets that are moving or pods that are going); otherwise each
    node left goes on with its own passes (`drain`), which park or set it aside, and Replace terminates the
    `unterminated` replacements (none: no Replace). `nodes`: per node the pass's counts."""
    from clm.kube.batch_drain import drain_batch_pass

    decision = event["decision"]
    previous = decision.get("batch_drain") or {}
    pending = [r["node"] for r in decision["replace"] if r.get("node") and not r.get("drained")]
    cluster = rendering(event["rendering"]).cluster
    settings = pool_drain_settings(cluster, event["node_pool"])
    where = of_event(event)
    with kube_client(cluster, where) as kube, Terminations(where, decision["replace"], cluster.name) as terminations:
        seen = previous.get("seen") or {}
        results = drain_batch_pass(kube, pending, settings, seen=seen, on_drained=terminations.start)
        terminated = terminations.states()
    return after_batch_pass(decision, results, terminated)


def after_batch_pass(
    decision: dict[str, Any], results: dict[str, dict[str, Any]], terminated: dict[str, tuple[str, float]]
) -> dict[str, Any]:
    """The replace `decision` after a batch pass's per-node `results` (clm.kube.batch_drain) and the instances it
    `terminated` (node -> new state, epoch seconds): see drain_batch."""
    previous = decision.get("batch_drain") or {}
    left = {node: result for node, result in results.items() if not result["done"]}
    replace = [r if r.get("node") in left else _drained(r, terminated) for r in decision["replace"]]
    batch = {
        "passes": int(previous.get("passes") or 0) + 1,
        "again": any(result.get("park") is None for result in left.values()),
        "wait_seconds": min((result["wait_seconds"] for result in left.values()), default=0),
        "seen": {node: result.get("budgets_seen") or {} for node, result in left.items()},
        "nodes": {node: _counts(result) for node, result in results.items()},
        "unterminated": sum(1 for r in replace if "terminated" not in r),
    }
    return {**decision, "replace": replace, "batch_drain": batch}


def _drained(replacement: dict[str, Any], terminated: dict[str, tuple[str, float]]) -> dict[str, Any]:
    if (node := replacement.get("node")) not in terminated:
        return {**replacement, "drained": True}
    state, at = terminated[node]
    return {**replacement, "drained": True, "terminated": state, "terminated_at": at}


def _counts(result: dict[str, Any]) -> dict[str, Any]:
    """A node's pass in a few numbers (a batch's payload stays small whatever its size)."""
    counts = {key: len(result.get(key) or []) for key in ("evicted", "forced", "blocked", "terminating")}
    return {"done": bool(result["done"]), **counts, "refused": int(result.get("refused") or 0)}


def pool_drain_settings(cluster: Cluster, pool: str) -> DrainSettings:
    """The cluster's drain settings for `pool` (a master pool's decommission taint is never NoSchedule; a pool gone
    from the registry is not a master one)."""
    registered = next((p for p in cluster.node_pools if p.name == pool), None)
    master = registered is not None and registered.is_master
    return DrainSettings.from_config_items(cluster.config_items, cluster.id, master=master)


DRAIN_STEPS = {"drain": drain, "drain_batch": drain_batch}
