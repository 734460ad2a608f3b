"""apply_all installs every patch, and installing again changes nothing."""

from __future__ import annotations

from moto.awslambda.models import LambdaFunction
from moto.events.models import Rule
from moto.stepfunctions.models import StateMachine

from clm_sandbox.patches import PATCHES, _patching, apply_all, patch_module


def test_apply_all_is_idempotent_and_keeps_the_originals() -> None:
    apply_all()
    patched = (LambdaFunction.invoke, Rule.send_to_targets, vars(StateMachine)["create_from_cloudformation_json"])
    apply_all()
    assert (
        LambdaFunction.invoke,
        Rule.send_to_targets,
        vars(StateMachine)["create_from_cloudformation_json"],
    ) == patched
    assert _patching.original(LambdaFunction, "invoke").__module__ == "moto.awslambda.models"
    assert _patching.original(Rule, "send_to_targets").__module__ == "moto.events.models"


def test_every_listed_patch_has_an_install() -> None:
    for name in PATCHES:
        assert callable(patch_module(name).install)
