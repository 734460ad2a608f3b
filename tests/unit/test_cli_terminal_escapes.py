"""What a cluster workload or an API says reaches an operator's terminal as text, never as the terminal's
commands: a problem recorded from a Kubernetes or AWS message carrying escape sequences (clear the screen, write the
clipboard with OSC 52) is printed with its control characters shown as escapes, in the table, in `-o wide` and in
errors. (Registry fields themselves refuse control characters: clm.validation.)"""

from __future__ import annotations

from clm.cli.output import print_error
from clm.model import Problem
from tests.unit.test_cli_helpers import KUBE_1, clm  # noqa: F401  (the `clm` fixture)

ATTACK = "webhook said: \x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x9b31m"
SHOWN = "\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\x9b31m"


def test_a_problem_with_escape_sequences_is_printed_as_text(clm) -> None:  # noqa: F811
    run, store = clm
    store.record_problem(KUBE_1, Problem(type="apply", title=ATTACK, detail=ATTACK))
    for output in ([], ["-o", "wide"]):
        printed = run(*output, "status").output
        assert not any(c in printed for c in "\x1b\x07\x9b"), repr(printed)
        assert SHOWN in printed.replace("\n", "").replace(" ", ""), printed


def test_an_error_naming_a_value_shows_its_escapes(capsys) -> None:
    print_error(f"cluster kube-1: {ATTACK}")
    printed = capsys.readouterr().err
    assert not any(c in printed for c in "\x1b\x07\x9b") and SHOWN in printed.replace("\n", "")
