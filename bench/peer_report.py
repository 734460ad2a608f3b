"""bench/peer_roll.py's figures: one row per roll (CLM's, eks-rolling-update's) and the table side by side."""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table
from roll_report import RollResult


@dataclass(frozen=True)
class PeerRow:
    """One roll of the pool: wall (trigger to end), roll (the roll's first action to its end) and their bound, in
    seconds; the PodDisruptionBudget's side; the most instances the group held; the pods evicted."""

    tool: str
    wall: float
    roll: float
    bound: float
    violations: int
    lowest_ready: int | None
    peak_instances: int
    evictions: int

    @property
    def ratio(self) -> float:
        """The roll against its bound."""
        return self.roll / self.bound

    @property
    def wall_ratio(self) -> float:
        """From the trigger to the end, against the roll's bound."""
        return self.wall / self.bound


def clm_row(tool: str, result: RollResult, peak_instances: int) -> PeerRow:
    """A CLM roll's row: from its upload to the provision run's end; the roll from the roll's first plan (its first
    look at the pool, before any surge) to the plan that found it done."""
    roll_start = min(call.started for call in result.trace.calls if call.step == "plan")
    return PeerRow(
        tool,
        result.run.seconds,
        result.roll_end - roll_start,
        result.bound,
        result.watch.violations,
        result.watch.lowest,
        peak_instances,
        sum(result.pods_per_node),
    )


def comparison_table(rows: list[PeerRow], nodes: int, replicas: int) -> Table:
    """The rolls side by side."""
    table = Table(
        title=f"rolling {nodes} nodes ({replicas} web pods behind a PDB minAvailable {replicas - 1})",
        title_justify="left",
    )
    columns = ("wall s", "roll s", "bound s", "roll/bound", "wall/bound", "PDB violations (lowest Ready)")
    table.add_column("tool", no_wrap=True)
    for column in (*columns, "peak instances", "evictions"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(
            row.tool,
            f"{row.wall:.1f}",
            f"{row.roll:.1f}",
            f"{row.bound:.1f}",
            f"{row.ratio:.2f}",
            f"{row.wall_ratio:.2f}",
            f"{row.violations} ({row.lowest_ready})",
            str(row.peak_instances),
            str(row.evictions),
        )
    return table
