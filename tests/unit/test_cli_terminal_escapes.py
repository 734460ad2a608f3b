"""What a cluster workload or an API says reaches an operator's terminal as text, never as the terminal's
commands: a problem recorded from a Kubernetes or AWS message carrying escape sequences (clear the screen, write the
clipboard with OSC 52) is printed with its control characters shown as escapes, in the table, in `-o wide`, in
errors and in `clm plan` (its diffs line by line), and rich markup in it as it is (--follow: test_cli_follow_escapes).
(Registry fields themselves refuse control characters: clm.validation.)"""

from __future__ import annotations

from clm.cli.output import print_error
from clm.cli.plan_cmd import show
from clm.model import Problem
from clm.stacks.diff import StackDiff, ValueChange
from clm.stacks.plan import PlannedInstance, PoolPlan, StacksPlan
from tests.unit.test_cli_helpers import KUBE_1, clm  # noqa: F401  (the `clm` fixture)

ATTACK = "webhook said: \x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\x9b31m"
SHOWN = "\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\x9b31m"
MARKUP = "[red]x[/red]"  # rich markup in a value is printed as it is


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


def test_a_plan_shows_the_escapes_and_markup_of_what_stacks_and_the_cluster_say(capsys) -> None:
    untrusted = ATTACK + MARKUP  # a deployed template, a stack's status reason, a pod's drain blocker...
    diff = f"--- kube-1 (deployed)\n+++ stack.yaml\n@@ -1 +1 @@\n-Description: {untrusted}\n+Description: b\n"
    stack = StackDiff(
        "kube-1",
        None,
        "stack.yaml",
        "update",
        "UPDATE_COMPLETE",
        diff,
        parameters=[ValueChange("Image", untrusted, "ami-1")],
        tags=[ValueChange("team", "a", untrusted)],
        launch_changes=[f"ImageId: {untrusted} -> ami-1"],
        problem=untrusted,
    )
    instance = PlannedInstance("i-1", "eu-central-1a", "InService", "m5.large", "1", [untrusted])
    pools = [PoolPlan("default-worker", "pool", asg_name=untrusted, instances=[instance])]
    pools.append(PoolPlan("b", "b", error=untrusted))
    node = {"node": "node-1", "node_pool": "default-worker", "instance": "i-1", "evictable": 1}
    node |= {"blockers": [{"pod": "a/b", "reason": untrusted}], "warnings": [{"pod": "a/c", "reason": untrusted}]}
    data = {
        **StacksPlan(KUBE_1, [stack], pools).to_dict(),
        "version": "v",
        "config": {"source": "s3://config", "version": "c"},
        "drain_preflight": {"checked": True, "warning": "", "nodes": [node]},
    }
    show(data, "wide")
    printed = capsys.readouterr().out
    assert not any(c in printed for c in "\x1b\x07\x9b"), repr(printed)
    assert printed.count(SHOWN + MARKUP) == 10, printed  # every field above, markup printed as it is
    diff_lines = printed.splitlines()[5:8]  # each line of the diff on a line of its own, escaped within it
    assert diff_lines == ["  @@ -1 +1 @@", f"  -Description: webhook said: {SHOWN}{MARKUP}", "  +Description: b"]
