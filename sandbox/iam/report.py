"""The report of what each function called: calls per action and outcome, and the grants no call exercised.

    python -m clm_sandbox.iam.report LOG [--policies POLICIES]

LOG is a judgement log (``$CLM_SANDBOX_IAM_LOG``, e.g. ``.demo/iam-calls.jsonl``); POLICIES the roles' policies
as :func:`save_policies` wrote them (default: ``iam-policies.json`` beside the log). Exits 1 if any call was
refused.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from clm_sandbox.iam import principals, record
from clm_sandbox.iam.policy import Policy, wildcard_match

POLICIES_FILE = "iam-policies.json"


def save_policies(judgements: Iterable[record.Judgement], path: Path) -> None:
    """Write the identity policies of every role that made a call (from moto's IAM) for a later report."""
    roles = sorted({j.role_arn for j in judgements})
    documents = {role: [p.document for p in principals.role_policies(role)[0]] for role in roles}
    path.write_text(json.dumps(documents, indent=1), encoding="utf-8")


def unexercised(
    judgements: Sequence[record.Judgement], policies: Mapping[str, Sequence[Policy]]
) -> dict[str, list[str]]:
    """Per role, the actions its Allow statements grant that no allowed call used (candidates to remove)."""
    used: dict[str, set[str]] = defaultdict(set)
    for judgement in judgements:
        if judgement.outcome == "allowed":
            used[judgement.role_arn].add(judgement.action)
    unused: dict[str, list[str]] = {}
    for role, role_policies in policies.items():
        granted = {
            action
            for policy in role_policies
            for statement in policy.statements()
            if statement.get("Effect") == "Allow"
            for action in _as_list(statement.get("Action", []))
        }
        unused[role] = sorted(a for a in granted if not any(wildcard_match(a, u, False) for u in used[role]))
    return unused


def render(judgements: Sequence[record.Judgement], unused: Mapping[str, Sequence[str]]) -> str:
    """The report as text: per function (role session) its calls, each action's calls by outcome, unused grants."""
    by_caller: dict[tuple[str, str], Counter[tuple[str, str]]] = defaultdict(Counter)
    for judgement in judgements:
        by_caller[(judgement.session, judgement.role_arn)][(judgement.action, judgement.outcome)] += 1
    lines = [headline(judgements)]
    for (session, role), counts in sorted(by_caller.items()):
        actions = len({action for action, _ in counts})
        lines.append(f"{session} (role {role.rsplit('/', 1)[-1]}): {sum(counts.values())} calls of {actions} actions")
        lines += [f"  {action:<52} {count:>6} {outcome}" for (action, outcome), count in sorted(counts.items())]
        if unused.get(role):
            lines.append(f"  granted, not called (logs:/xray: are the service's own): {', '.join(unused[role])}")
    lines += [f"\n{line}" for line in refusals(judgements)]
    return "\n".join(lines)


def headline(judgements: Sequence[record.Judgement]) -> str:
    """The report's first line: how many calls were judged and how many of them refused."""
    refused = sum(1 for j in judgements if j.refused)
    return f"IAM in the sandbox: {len(judgements)} calls judged against the caller's role, {refused} refused"


def refusals(judgements: Sequence[record.Judgement]) -> list[str]:
    """A line per refused call: the caller, the action, the resource and why."""
    return [f"refused: {j.session} {j.action} on {j.resource}: {j.reason}" for j in judgements if j.refused]


def _as_list(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the report of a judgement log; 1 if any call was refused."""
    parser = argparse.ArgumentParser(prog="python -m clm_sandbox.iam.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="judgement log ($CLM_SANDBOX_IAM_LOG)")
    parser.add_argument("--policies", type=Path, help=f"the roles' policies (default: {POLICIES_FILE} beside the log)")
    args = parser.parse_args(argv)
    judgements = record.read_log(args.log)
    policies_path = args.policies or args.log.with_name(POLICIES_FILE)
    documents = json.loads(policies_path.read_text(encoding="utf-8")) if policies_path.exists() else {}
    policies = {role: [Policy(f"policy {i}", d) for i, d in enumerate(docs)] for role, docs in documents.items()}
    print(render(judgements, unexercised(judgements, policies)))
    return 1 if any(j.refused for j in judgements) else 0


if __name__ == "__main__":
    sys.exit(main())
