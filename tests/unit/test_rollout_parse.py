"""clm.rollout.parse: a rollout.yaml read into a Policy, and every way a config writer can get it wrong refused with
the file and the line at fault (unknown keys, bad selectors, durations, percentages, counts, names, sizes)."""

from __future__ import annotations

import pytest

from clm.errors import ClmError, RolloutPolicyError
from clm.rollout.default import DEFAULT_POLICY, default_policy
from clm.rollout.parse import MAX_BYTES, MAX_WAVES, parse
from clm.rollout.policy import Concurrency, Selector

SOURCE = "config/cluster/rollout.yaml"
FULL = """\
max_concurrency: 5
environments: [e2e, test, production]
waves:
  - name: canary
    select:
      environment: test
      criticality: [0, 1]
      channel: beta
      account: aws:123456789012
      region: [eu-central-1, eu-west-1]
      clusters: ['aws:123456789012:eu-central-1:kube-1']
      config_items: {karpenter_pools_enabled: "true", team: [a, b]}
    exclude: {region: eu-west-1}
    size: 1
    concurrency: 1
    bake: 1h30m
    order: [-criticality, region]
  - name: rest
    concurrency: 25%
"""


def error(text: str) -> RolloutPolicyError:
    with pytest.raises(RolloutPolicyError) as raised:
        parse(text, SOURCE)
    return raised.value


def test_every_key_is_read():
    policy = parse(FULL, SOURCE)
    canary, rest = policy.waves
    assert (policy.max_concurrency, policy.environments, policy.source) == (5, ("e2e", "test", "production"), SOURCE)
    assert canary.selector == Selector(
        environment=frozenset({"test"}),
        criticality=frozenset({0, 1}),
        channel=frozenset({"beta"}),
        account=frozenset({"123456789012"}),
        region=frozenset({"eu-central-1", "eu-west-1"}),
        clusters=frozenset({"aws:123456789012:eu-central-1:kube-1"}),
        config_items={"karpenter_pools_enabled": frozenset({"true"}), "team": frozenset({"a", "b"})},
    )
    assert canary.exclude == Selector(region=frozenset({"eu-west-1"}))
    assert (canary.size, canary.concurrency, canary.bake_seconds) == (1, Concurrency(1), 5400)
    assert canary.order == ("-criticality", "region", "id")  # id always decides last
    assert (rest.selector, rest.concurrency, rest.bake_seconds, rest.size) == (
        Selector(),
        Concurrency(25, True),
        0,
        None,
    )


def test_the_default_is_a_valid_rollout_yaml_of_three_waves():
    policy = default_policy()
    assert parse(DEFAULT_POLICY, "x").waves == policy.waves
    assert [wave.name for wave in policy.waves] == ["canary", "pre-production", "production"]
    assert policy.max_concurrency == 3 and policy.source == "built-in default"


def test_the_error_is_a_clm_error_naming_file_and_line():
    problem = error("waves:\n  - name: a\n    colour: blue\n")
    assert isinstance(problem, ClmError)
    assert (problem.file, problem.line) == (SOURCE, 3)
    assert str(problem) == f"{SOURCE}:3: {problem.message}"
    assert problem.message.startswith("wave: unknown key 'colour' (known: name, select, exclude, size, concurrency")


WAVE = "waves:\n  - name: a\n"
CASES = {
    "unknown top-level key": ("waves: [{name: a}]\nspeed: fast\n", 2, "policy: unknown key 'speed'"),
    "unknown wave key": (WAVE + "    colour: blue\n", 3, "wave: unknown key 'colour'"),
    "unknown selector key": (WAVE + "    select: {team: x}\n", 3, "wave a: select: unknown key 'team'"),
    "selector not a mapping": (WAVE + "    select: [test]\n", 3, "wave a: select: a mapping"),
    "empty selector list": (WAVE + "    select: {environment: []}\n", 3, "an empty list selects nothing"),
    "criticality not a number": (WAVE + "    select: {criticality: high}\n", 3, "'high' is not a whole number"),
    "criticality a bool": (WAVE + "    select: {criticality: true}\n", 3, "True is not a whole number"),
    "environment a number": (WAVE + "    select: {environment: 1}\n", 3, "1 is not text (quote numbers)"),
    "account unquoted": (WAVE + "    select: {account: 123456789012}\n", 3, "is not text (quote numbers)"),
    "account malformed": (WAVE + "    select: {account: 'aws:12'}\n", 3, "account 'aws:12' is not aws:<12 digits>"),
    "config_items not a mapping": (WAVE + "    select: {config_items: x}\n", 3, "config_items: a mapping"),
    "config item a list of lists": (WAVE + "    select: {config_items: {a: [[1]]}}\n", 3, "is not text"),
    "exclude not a mapping": (WAVE + "    exclude: prod\n", 3, "wave a: exclude: a mapping"),
    "duration unknown unit": (WAVE + "    bake: 2 days\n", 3, "bake '2 days' is not a duration like 30m"),
    "duration a bare number": (WAVE + "    bake: 30\n", 3, "bake 30 is not a duration"),
    "duration negative": (WAVE + "    bake: -30m\n", 3, "bake '-30m' is not a duration"),
    "bake of years": (WAVE + "    bake: 17520h\n", 3, "bake '17520h' is longer than a week"),
    "percentage zero": (WAVE + "    concurrency: 0%\n", 3, "concurrency '0%' is not a percentage 1-100%"),
    "percentage over 100": (WAVE + "    concurrency: 150%\n", 3, "concurrency '150%' is not a percentage"),
    "percentage not a number": (WAVE + "    concurrency: half%\n", 3, "concurrency 'half%' is not a percentage"),
    "concurrency zero": (WAVE + "    concurrency: 0\n", 3, "concurrency 0 is not a whole number 1 to 1000"),
    "concurrency negative": (WAVE + "    concurrency: -2\n", 3, "concurrency -2 is not a whole number"),
    "concurrency huge": (WAVE + "    concurrency: 1000000\n", 3, "concurrency 1000000 is not a whole number 1 to"),
    "concurrency fractional": (WAVE + "    concurrency: 1.5\n", 3, "concurrency 1.5 is not a whole number"),
    "size zero": (WAVE + "    size: 0\n", 3, "size 0 is not a whole number at least 1"),
    "max_concurrency zero": ("max_concurrency: 0\n" + WAVE, 1, "policy: max_concurrency 0 is not a whole number"),
    "order unknown field": (WAVE + "    order: [age]\n", 3, "order 'age': one of criticality"),
    "order a field twice": (WAVE + "    order: [criticality, -criticality]\n", 3, "order names a field twice"),
    "environments not text": ("environments: [1]\n" + WAVE, 1, "policy: environments: 1 is not text"),
    "no waves key": ("max_concurrency: 2\n", 1, "waves: a non-empty list of waves"),
    "empty wave list": ("waves: []\n", 1, "waves: a non-empty list of waves"),
    "waves not a list": ("waves: canary\n", 1, "waves: a non-empty list of waves"),
    "wave not a mapping": ("waves:\n  - canary\n", 2, "a wave is a mapping"),
    "wave without a name": ("waves:\n  - concurrency: 1\n", 2, "wave name None"),
    "wave name not a slug": ("waves:\n  - name: Canary Wave\n", 2, "wave name 'Canary Wave'"),
    "wave name reserved": ("waves:\n  - name: unmatched\n", 2, "wave name 'unmatched' is the clusters no wave"),
    "duplicate wave names": (WAVE + "  - name: b\n  - name: a\n", 4, "wave 'a' is named twice (first at line 2)"),
    "not a mapping": ("- name: a\n", 1, "expected a mapping with `waves`"),
    "empty file": ("", 1, "expected a mapping with `waves`"),
    "YAML syntax": ("waves:\n  - name: a\n   bake: [\n", 3, ""),
    "duplicate key": ("waves: []\nwaves: []\n", 2, "duplicate key 'waves'"),
}


@pytest.mark.parametrize("text, line, message", CASES.values(), ids=CASES.keys())
def test_refused_naming_the_line(text, line, message):
    problem = error(text)
    assert (problem.file, problem.line) == (SOURCE, line)
    assert message in problem.message


def test_ten_thousand_waves_are_refused_by_size_and_more_than_max_waves_at_the_list():
    problem = error("waves:\n" + "".join(f"  - name: w{n}\n" for n in range(10_000)))
    assert problem.line is None and "a rollout policy is at most" in problem.message
    problem = error("waves:\n" + "".join(f"  - name: w{n}\n" for n in range(MAX_WAVES + 1)))
    assert (problem.line, problem.message) == (2, f"{MAX_WAVES + 1} waves: at most {MAX_WAVES}")
    assert parse("waves:\n" + "".join(f"  - name: w{n}\n" for n in range(MAX_WAVES)), SOURCE).waves[-1].name == "w99"


def test_a_huge_file_is_refused_before_parsing():
    problem = error("waves:\n" + "  - name: a\n" * 10_000)
    assert problem.line is None and problem.message.endswith(f"a rollout policy is at most {MAX_BYTES:,}")


def test_a_billion_laughs_is_refused_by_the_yaml_bounds():
    laughs = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    laughs += [f"{chr(98 + n)}: &{chr(98 + n)} [{', '.join([f'*{chr(97 + n)}'] * 9)}]" for n in range(8)]
    problem = error("\n".join(laughs) + "\nwaves: [{name: a}]\n")
    assert "aliases add" in problem.message and problem.line is not None


def test_a_bake_of_exactly_a_week_and_a_bake_of_zero_are_accepted():
    policy = parse(WAVE + "    bake: 168h\n  - name: b\n    bake: 0\n  - name: c\n    bake: 250ms\n", SOURCE)
    assert [wave.bake_seconds for wave in policy.waves] == [604800, 0, 1]
