"""`--follow`: poll a run's execution history, and its child executions', and show the progress as it happens:
one line per step, a progress bar per node pool being rolled, and the outcome."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.text import Text

from clm.cli.executions import execution_name, new_events
from clm.cli.run_history import End, HistoryReader, Line
from clm.cli.tables import literal, visible

POLL_SECONDS = 1.0


@dataclass(frozen=True)
class Outcome:
    """How a followed run ended, the problem it recorded on failure, and why it did nothing if it skipped."""

    arn: str
    status: str
    error: str = ""
    cause: str = ""
    problem: str | None = None
    skipped: str | None = None

    @property
    def succeeded(self) -> bool:
        """True when the execution succeeded (a skip succeeds too)."""
        return self.status == "SUCCEEDED"


class _Follower:
    """The executions of one run being read: the followed one and every child it started."""

    def __init__(self, sfn: Any, arn: str, bars: Progress):
        self.sfn = sfn
        self.bars = bars
        self.readers = {arn: HistoryReader()}
        self.ends: dict[str, End] = {}
        self.tasks: dict[str, TaskID] = {}

    def poll(self) -> None:
        """Read what every unfinished execution (and every child it started meanwhile) did since the last poll, and
        show it in the order it happened."""
        lines: list[Line] = []
        pending = [arn for arn in self.readers if arn not in self.ends]
        while pending:
            arn = pending.pop(0)
            reader = self.readers[arn]
            reading = reader.read(new_events(self.sfn, arn, reader.last_id))
            lines += reading.lines
            for child in reading.children:
                if child.arn not in self.readers:
                    self.readers[child.arn] = HistoryReader(child.label)
                    pending.append(child.arn)
            if reading.end is not None:
                self.ends[arn] = reading.end
            self._show_progress(arn, reader)
        for line in sorted(lines, key=lambda line: line.time.timestamp() if line.time else 0.0):
            self.bars.console.print(line_text(line), soft_wrap=True)

    def _show_progress(self, arn: str, reader: HistoryReader) -> None:
        progress = reader.progress
        if not progress.outdated:
            return
        if arn not in self.tasks:
            if not self.tasks:
                self.bars.start()  # the live display only once there is a bar to show
            self.tasks[arn] = self.bars.add_task(visible(reader.label), total=progress.outdated)
        self.bars.update(self.tasks[arn], completed=progress.replaced, total=progress.outdated)


def line_text(line: Line) -> Text:
    """A progress line as printed: local time of the event, then the text in its style, literally."""
    stamp = line.time.astimezone().strftime("%H:%M:%S") if line.time else "--:--:--"
    return literal((stamp, "dim"), "  ", (line.text, line.style))


def follow(sfn: Any, arn: str, console: Console, poll_seconds: float = POLL_SECONDS) -> Outcome:
    """Show the execution's progress until it (and every child it started) has ended; return how it ended."""
    pool = TextColumn("{task.description}", style="bold", markup=False)  # a pool's name, not markup
    columns = (pool, BarColumn(), MofNCompleteColumn(), TextColumn("nodes replaced"))
    bars = Progress(*columns, console=console)
    follower = _Follower(sfn, arn, bars)
    try:
        follower.poll()
        while arn not in follower.ends:  # children are read after their parent: its end comes after theirs
            time.sleep(poll_seconds)
            follower.poll()
    finally:
        if follower.tasks:  # started with the first bar
            bars.stop()
    end, reader = follower.ends[arn], follower.readers[arn]
    return Outcome(arn, end.status, end.error, end.cause, reader.problem, reader.skipped)


def report(outcome: Outcome, console: Console) -> None:
    """The outcome in one line: SUCCEEDED (or skipped, and why), else the status and the recorded problem."""
    name = execution_name(outcome.arn)
    if outcome.succeeded:
        detail = f" (skipped: {outcome.skipped})" if outcome.skipped is not None else ""
        console.print(literal(("SUCCEEDED", "bold green"), f"  execution {name}{detail}"), soft_wrap=True)
        return
    problem = outcome.problem or ": ".join(part for part in (outcome.error, outcome.cause) if part)
    console.print(literal((outcome.status, "bold red"), f"  execution {name}: {problem}"), soft_wrap=True)
