"""Lines' words shared by `--follow` and `clm status`: a short list, a blocked drain (set aside or parked), and
the lines of the drain steps."""

from __future__ import annotations

from typing import Any

from clm.kube.settings import format_duration

MAX_LISTED = 3


def listed(items: list[str]) -> str:
    """The first MAX_LISTED items, comma-separated, and how many more."""
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f" and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")


def blocked_text(drain: dict[str, Any]) -> str:
    """A blocked drain in words: set aside (cordoned while the roll goes on: `drain_blocked: continue`) or parked,
    since when and until when, and the blocking pods with their owners and budgets."""
    if drain.get("set_aside"):
        state = f"set aside, cordoned, blocked since {drain.get('blocked_since')}; back at {drain.get('until')}"
    else:
        seconds = format_duration((drain.get("park") or {}).get("seconds", 0))
        if drain.get("blocked_since"):
            state = f"parked for {seconds}, blocked since {drain['blocked_since']}"
        else:
            state = f"parked for {seconds}, drain started {drain.get('drain_start')}"
    return f"{state}: blocked by {listed(_blocking(drain))}"


def _blocking(drain: dict[str, Any]) -> list[str]:
    """The blocking pods: with owner and budget when the drain named them (set aside), else with their budget."""
    if drain.get("blocked_pods"):
        return [
            f"{p.get('namespace')}/{p.get('name')} "
            f"({p['owner_kind'] + ' ' + p.get('owner_name', '') if p.get('owner_kind') else 'no owner'}; "
            f"PDB {p.get('budget') or '?'})"
            for p in drain["blocked_pods"]
        ]
    return [f"{b.get('pod')} (PDB {b.get('pdb') or '?'})" for b in drain.get("blocked", [])]


def drain_line(step_input: dict[str, Any], drain: dict[str, Any]) -> tuple[str, str] | None:
    """A Drain step's line and its colour, from the pass's result (clm.workflow.drain_steps.drain); None for a node
    the batch's passes drained (DrainBatch said so)."""
    node = drain.get("node") or step_input.get("replacement", {}).get("instance_id")
    if drain.get("gone"):
        return f"Drain {node}: node gone", ""
    if drain.get("batched"):
        return None
    if drain.get("done"):
        forced = f", {len(drain['forced'])} force-deleted" if drain.get("forced") else ""
        instance = step_input.get("replacement", {}).get("instance_id")
        terminated = f"; instance {instance} terminated" if "terminated" in drain else ""
        return f"Drain {node}: drained ({len(drain.get('evicted', []))} evicted{forced}){terminated}", ""
    if drain.get("blocked_pods"):  # drain_blocked: continue: set aside, or parked, with owners and budgets
        wakes = "" if drain.get("set_aside") else " (clm provision wakes it)"
        return f"Drain {node}: {blocked_text(drain)}{wakes}", "yellow"
    parts = [
        f"{b.get('pod')} ({b.get('reason')}{'; PDB ' + b['pdb'] if b.get('pdb') else ''})"
        for b in drain.get("blocked", [])
    ]
    waiting = f"blocked: {listed(parts)}" if parts else f"{len(drain.get('terminating', []))} pod(s) terminating"
    if drain.get("park"):
        parked = f"parked for {format_duration(drain['park']['seconds'])}, until the force rules allow"
        return f"Drain {node}: {waiting}; {parked} (clm provision wakes it)", "yellow"
    return f"Drain {node}: {waiting}; next pass in {drain.get('wait_seconds', 0)} s", "yellow"


def drain_batch_line(_: dict[str, Any], decision: dict[str, Any]) -> tuple[str, str]:
    """A DrainBatch step's line and its colour: nodes drained (and terminated) of the batch, this pass's evictions,
    what is next."""
    batch = decision.get("batch_drain") or {}
    nodes = batch.get("nodes") or {}
    replace = decision.get("replace") or []
    drained, terminated = (sum(1 for r in replace if r.get(key)) for key in ("drained", "terminated"))
    evicted, blocked = (sum(n.get(key, 0) for n in nodes.values()) for key in ("evicted", "blocked"))
    text = (
        f"DrainBatch: {drained} of {len(replace)} nodes drained ({terminated} terminated); "
        f"this pass {evicted} evicted, {blocked} blocked"
    )
    if drained == len(replace):
        return text, ""
    if batch.get("again"):
        return f"{text}; next pass in {batch.get('wait_seconds', 0)} s", "yellow"
    return f"{text}; each node left goes on with passes of its own", "yellow"


def terminated_by(step: str, step_input: dict[str, Any], result: dict[str, Any]) -> list[dict[str, Any]]:
    """The replacements whose instances a roll step's call terminated: Terminate's, a Drain's whose pass drained and
    terminated its node, a DrainBatch pass's (each pass names every one its batch terminated so far)."""
    if step == "Terminate" or (step == "Drain" and "terminated" in result and not result.get("batched")):
        return [step_input.get("replacement") or {}]
    if step == "DrainBatch":
        return [r for r in result.get("replace") or [] if "terminated" in r]
    return []
