"""The IAM report (clm_sandbox.iam.report): calls per caller and role, and the grants no call used."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from clm_sandbox.iam import report
from clm_sandbox.iam.policy import Policy
from clm_sandbox.iam.record import Judgement

ROLE = "arn:aws:iam::123456789012:role/Clm-RunFunctionRole"


def judgement(action: str, outcome: str = "allowed") -> Judgement:
    return Judgement("Clm-RunFunction", ROLE, action, "*", outcome, "why")


def test_unexercised_lists_granted_actions_no_allowed_call_matched() -> None:
    policy = Policy(
        "p", {"Statement": [{"Effect": "Allow", "Action": ["dynamodb:GetItem", "s3:Get*", "s3:PutObject"]}]}
    )
    calls = [judgement("dynamodb:GetItem"), judgement("s3:GetObjectVersion"), judgement("s3:PutObject", "denied")]
    assert report.unexercised(calls, {ROLE: [policy]}) == {ROLE: ["s3:PutObject"]}


def test_the_report_counts_calls_per_caller_and_exits_1_on_a_refusal(tmp_path: Path, capsys) -> None:
    calls = [judgement("dynamodb:GetItem"), judgement("dynamodb:GetItem"), judgement("s3:PutObject", "denied")]
    log = tmp_path / "iam-calls.jsonl"
    log.write_text("".join(json.dumps(asdict(j)) + "\n" for j in calls))
    (tmp_path / report.POLICIES_FILE).write_text(
        json.dumps({ROLE: [{"Statement": [{"Effect": "Allow", "Action": "sqs:*"}]}]})
    )
    assert report.main([str(log)]) == 1
    printed = capsys.readouterr().out
    assert "3 calls judged against the caller's role, 1 refused" in printed
    assert "Clm-RunFunction (role Clm-RunFunctionRole): 3 calls of 2 actions" in printed
    assert "  dynamodb:GetItem" in printed and "2 allowed" in printed
    assert "granted, not called (logs:/xray: are the service's own): sqs:*" in printed
    assert "refused: Clm-RunFunction s3:PutObject on *: why" in printed
