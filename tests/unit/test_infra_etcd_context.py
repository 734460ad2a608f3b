"""Context `clm:manageEtcdStack`: off by default, true/false as JSON or text, anything else named."""

from __future__ import annotations

import pytest
from aws_cdk import App

from infra.context import ClmContext, ContextError


@pytest.mark.parametrize(
    ("value", "expected"), [(None, False), (True, True), (False, False), ("true", True), ("False", False)]
)
def test_the_setting_is_off_unless_set_true(value: object, expected: bool) -> None:
    context = {} if value is None else {"clm:manageEtcdStack": value}
    assert ClmContext.of(App(context=context)).manage_etcd_stack is expected


def test_a_value_that_is_not_true_or_false_is_named() -> None:
    with pytest.raises(ContextError, match="clm:manageEtcdStack: expected true or false, got 'yes'"):
        ClmContext.of(App(context={"clm:manageEtcdStack": "yes"}))
