"""The functions' runtime and the layer build's target Python are one version, supported long enough."""

from __future__ import annotations

from datetime import date

from cfnlint.data import AdditionalSpecs
from cfnlint.helpers import load_resource

from infra.layer import RUNTIME
from infra.layer_build import LAMBDA_VERSION, PIP_PLATFORM, lambda_python

SUPPORTED_UNTIL_AT_LEAST = date(2028, 11, 1)  # two years of support from 2026-11


def test_the_runtime_and_the_wheels_and_pycs_of_the_layer_are_for_one_python():
    assert RUNTIME.name == f"python{LAMBDA_VERSION}"
    assert PIP_PLATFORM[PIP_PLATFORM.index("--python-version") + 1] == LAMBDA_VERSION
    assert "--only-binary=:all:" in PIP_PLATFORM  # a requirement without a wheel for it fails the build


def test_the_runtime_is_supported_for_two_more_years():
    lifecycle = load_resource(AdditionalSpecs, "LmbdRuntimeLifecycle.json")[RUNTIME.name]
    assert date.fromisoformat(lifecycle["deprecated"]) >= SUPPORTED_UNTIL_AT_LEAST


def test_an_interpreter_of_the_runtimes_python_byte_compiles_the_layer():
    """Without one the layer would ship no pycs (cold starts compile from source): the machines have one."""
    assert lambda_python() is not None, f"no python{LAMBDA_VERSION} to byte-compile the layer"
