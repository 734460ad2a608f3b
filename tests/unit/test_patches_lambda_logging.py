"""In-process containers keep their own powertools log keys: one call's keys no longer replace another's, and a
call adding keys no longer fails another formatting a line (a racing provision run failed so in a suite:
"RuntimeError: dictionary changed size during iteration")."""

from __future__ import annotations

import io
import json
import logging
import threading

from aws_lambda_powertools import Logger

from clm_sandbox.patches import lambda_logging


def test_two_calls_at_once_each_log_their_own_keys() -> None:
    lambda_logging.install()
    lambda_logging.install()
    out = io.StringIO()
    Logger(service="clm-logging-test", child=False, logger_handler=logging.StreamHandler(out))
    both_set = threading.Barrier(2)

    def call(cluster: str) -> None:
        logger = Logger(service="clm-logging-test", child=False)  # a second container's: the same formatter
        logger.clear_state()
        logger.append_keys(cluster_id=cluster)
        both_set.wait()
        logger.info("step done", extra={"call": cluster})

    calls = [threading.Thread(target=call, args=(cluster,)) for cluster in ("kube-a", "kube-b")]
    for thread in calls:
        thread.start()
    for thread in calls:
        thread.join()
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted((line["call"], line["cluster_id"]) for line in lines) == [("kube-a", "kube-a"), ("kube-b", "kube-b")]
    assert all(line["service"] == "clm-logging-test" for line in lines)


def test_a_thread_that_set_nothing_logs_the_keys_the_logger_was_built_with() -> None:
    lambda_logging.install()
    out = io.StringIO()
    logger = Logger(service="clm-logging-base", child=False, logger_handler=logging.StreamHandler(out))
    thread = threading.Thread(target=logger.info, args=("from elsewhere",))
    thread.start()
    thread.join()
    line = json.loads(out.getvalue())
    assert (line["message"], line["service"], line["level"]) == ("from elsewhere", "clm-logging-base", "INFO")
