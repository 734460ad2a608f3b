"""In-process containers do not share powertools' metric sets: one call's flush no longer empties another's
metrics mid-call (a roll step failed so in a suite: "SchemaValidationError: Must contain at least one metric")."""

from __future__ import annotations

import warnings

from aws_lambda_powertools import Metrics
from aws_lambda_powertools.metrics import MetricUnit

from clm_sandbox.patches import lambda_metrics


def test_a_flush_of_one_containers_metrics_leaves_anothers(capsys) -> None:
    lambda_metrics.install()
    lambda_metrics.install()
    first, second = Metrics(namespace="CLM", service="a"), Metrics(namespace="CLM", service="b")
    first.add_metric(name="StepInvocations", unit=MetricUnit.Count, value=1)
    second.add_metric(name="StepInvocations", unit=MetricUnit.Count, value=1)
    second.flush_metrics()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty set would warn, or raise with raise_on_empty_metrics
        first.flush_metrics(raise_on_empty_metrics=True)
    assert capsys.readouterr().out.count('"StepInvocations":[1.0]') == 2
