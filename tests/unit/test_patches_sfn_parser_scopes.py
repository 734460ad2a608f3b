"""Each ASL preprocessor keeps its own query-language scopes, so executions parsing at once in threads do not pop
each other's (ci15: an IndexError in one parser's thread, its execution RUNNING for ever with no state)."""

from __future__ import annotations

import json
import threading

from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

from clm_sandbox.patches import sfn_parser_scopes

DEFINITION = json.dumps({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Succeed"}}})


def test_preprocessors_do_not_share_their_scopes_and_parse_in_threads_at_once() -> None:
    sfn_parser_scopes.install()
    sfn_parser_scopes.install()
    assert Preprocessor()._query_language_per_scope is not Preprocessor()._query_language_per_scope
    failures: list[BaseException] = []

    def parse() -> None:
        try:
            for _ in range(20):
                AmazonStateLanguageParser.parse(DEFINITION)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=parse) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
