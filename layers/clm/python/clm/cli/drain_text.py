"""Lines' words shared by `--follow` and `clm status`: a short list, and a blocked drain (set aside or parked)."""

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
