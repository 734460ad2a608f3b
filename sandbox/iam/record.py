"""Every judged call, kept for the report (in memory, and appended to ``$CLM_SANDBOX_IAM_LOG`` if set, so that a
moto server process's judgements can be read by another process)."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

LOG_ENV = "CLM_SANDBOX_IAM_LOG"

_lock = threading.Lock()
_judged: list[Judgement] = []


@dataclass(frozen=True)
class Judgement:
    """One authorization: who (role session), what (action, resource), the outcome and why.

    ``outcome`` is ``allowed``, ``denied``, ``unjudged`` (the sandbox could not evaluate it, so refused it),
    ``unchecked`` (a CloudFormation handler's permission on another resource: reported, checked statically) or
    ``skipped`` (a handler permission for properties the stack does not use).
    """

    session: str
    role_arn: str
    action: str
    resource: str
    outcome: str
    reason: str

    @property
    def refused(self) -> bool:
        """Whether the call was refused (denied, or not judgeable)."""
        return self.outcome in ("denied", "unjudged")


def add(judgement: Judgement) -> None:
    """Keep a judgement (and append it to the log file when one is configured)."""
    with _lock:
        _judged.append(judgement)
        path = os.environ.get(LOG_ENV)
        if path:
            with open(path, "a", encoding="utf-8") as log:
                log.write(json.dumps(asdict(judgement)) + "\n")


def judged() -> list[Judgement]:
    """The judgements of this process so far, oldest first."""
    with _lock:
        return list(_judged)


def clear() -> None:
    """Forget the judgements kept in memory (the log file stays)."""
    with _lock:
        _judged.clear()


def read_log(path: Path) -> list[Judgement]:
    """The judgements a log file holds."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [Judgement(**json.loads(line)) for line in lines if line.strip()]
