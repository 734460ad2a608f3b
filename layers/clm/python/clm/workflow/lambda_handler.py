"""One way to build every CLM Lambda handler: powertools logging, tracing and metrics around a step table.

A handler module is two lines: the table of steps it serves and ``handler = step_handler(name, steps)``.
The Step Functions task passes ``{"step": <name>, "cluster_id": ..., ...}``; every log line carries the
cluster id, the execution and the step. Errors propagate with their class name as Lambda's errorType, which
is what Retry and Catch in the state machines match on; an error that may pass by itself (an API server that
is unreachable, throttling or unavailable: the error's `transient` is true) is raised as TransientError, which
the state machines retry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from clm.errors import ClmError

Step = Callable[[dict[str, Any]], dict[str, Any]]
NAMESPACE = "CLM"
# What X-Ray traces: AWS calls (botocore) and HTTP (http.client, under urllib3 and so the Kubernetes client). The
# default, every library the SDK knows, imports `requests` and others that CLM never calls, at each cold start.
TRACED_MODULES = ("botocore", "httplib")


class UnknownStep(ClmError):
    """The event names a step this function does not serve (a state machine / handler mismatch)."""

    asl_name = "UnknownStep"


class TransientError(ClmError):
    """A step failed for a reason that may pass by itself; its message is the original error's."""

    asl_name = "TransientError"


def step_handler(function: str, steps: Mapping[str, Step]) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    """A Lambda handler serving `steps`, instrumented with aws-lambda-powertools."""
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from aws_lambda_powertools.metrics import MetricUnit

    logger = Logger(service="clm", child=False)
    tracer = Tracer(service="clm", patch_modules=TRACED_MODULES)
    metrics = Metrics(namespace=NAMESPACE, service="clm")

    @logger.inject_lambda_context(log_event=False, clear_state=True)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        step = event.get("step", "")
        logger.append_keys(
            function=function, step=step, cluster_id=event.get("cluster_id"), execution=event.get("execution")
        )
        metrics.add_metric(name="StepInvocations", unit=MetricUnit.Count, value=1)
        if step not in steps:
            raise UnknownStep(f"function {function} has no step {step!r} (serves: {', '.join(sorted(steps))})")
        try:
            result = steps[step](event)
        except ClmError as error:
            logger.warning("step failed", extra={"error": type(error).__name__, "reason": str(error)})
            metrics.add_metric(name="StepErrors", unit=MetricUnit.Count, value=1)
            if getattr(error, "transient", False):
                raise TransientError(str(error)) from error
            raise
        logger.info("step done", extra={"result": result})
        return result

    return handler
