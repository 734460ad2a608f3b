"""`make demo`'s program, end to end as a user runs it: sandbox up, CLM deployed, kube-1 provisioned, a new AMI
rolled over every node with 0 PDB violations; it ends with the summary, the timeline's path and one line for IAM (0
calls refused), the report of every call per function written to .demo/iam-report.txt."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.integration
def test_demo_provisions_and_rolls_the_example_cluster() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "clm_sandbox.demo", "--wait-scale", "0.2"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    output = result.stdout
    assert result.returncode == 0, output[-4000:] + result.stderr[-2000:]
    assert "demo finished" in output
    assert "[default-worker] SUCCEEDED" in output and "3/3 nodes replaced" in output
    assert re.search(r"nodes replaced\s+│ 3 ", output), output[-3000:]
    assert re.search(r"PDB violations \(Ready web pods < 2\)\s+│ 0 \(lowest [23],", output), output[-3000:]
    assert '"level"' not in output  # the Lambdas' logs go to .demo/sandbox.log, not the terminal
    timeline = (ROOT / ".demo" / "roll-timeline.html").read_text()
    assert timeline.count("<title>drain:") == 3 and timeline.count("<title>boot:") == 3
    ending = output[output.index("5. summary") :].splitlines()
    iam = next(i for i, line in enumerate(ending) if line.startswith("IAM in the sandbox:"))
    assert ending[iam - 1] == "timeline of the roll: .demo/roll-timeline.html", ending
    headline, details = ending[iam].split("; ")
    assert re.fullmatch(r"IAM in the sandbox: \d+ calls judged against the caller's role, 0 refused", headline)
    assert details == "details: .demo/iam-report.txt"
    assert next(line for line in ending[iam + 1 :] if line.strip("─ ")).startswith("demo finished in "), ending
    assert_the_iam_report_holds_every_call(headline)


def assert_the_iam_report_holds_every_call(headline: str) -> None:
    """.demo/iam-report.txt is the whole report of the demo's judgement log: the printed headline, then every
    function with its calls per action and outcome, the counts adding up to the headline's; the CDK CLI's roles
    (deploy, file publishing, CloudFormation's execution role) among them."""
    demo = ROOT / ".demo"
    report = (demo / "iam-report.txt").read_text()
    command = [sys.executable, "-m", "clm_sandbox.iam.report", str(demo / "iam-calls.jsonl")]
    assert report == subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert report.splitlines()[0] == headline
    functions = re.findall(r"^\S+ \(role \S+\): (\d+) calls of \d+ actions$", report, re.MULTILINE)
    assert len(functions) >= 4, report[:3000]
    assert sum(int(calls) for calls in functions) == int(headline.split()[4]) > 100
    actions = re.findall(r"^  \S+:\S+ +(\d+) (\w+)$", report, re.MULTILINE)
    assert sum(int(calls) for calls, _ in actions) == int(headline.split()[4])
    assert {outcome for _, outcome in actions} <= {"allowed", "unchecked", "skipped"}, report
    deployers = re.findall(r"^aws-cdk-root \(role cdk-hnb659fds-([a-z-]+)-123456789012-eu-central-1\)", report, re.M)
    assert sorted(deployers) == ["deploy-role", "file-publishing-role"], report  # `cdk deploy` deployed CLM
    assert "AWSCloudFormation (role cdk-hnb659fds-cfn-exec-role-" in report
