"""Where a fleet's rollout policy comes from: `cluster/rollout.yaml` of the configuration's first source on the
default channel, or the built-in default when that has none (docs/rollouts.md: why there)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from clm.config.tree import ConfigTree
from clm.errors import RolloutPolicyError
from clm.rollout.default import default_policy
from clm.rollout.parse import parse
from clm.rollout.policy import Policy

# Under cluster/: the only folder every source reads (the S3 source reads `<prefix>[<channel>/]cluster/`).
POLICY_PATH = "cluster/rollout.yaml"


def policy_of(tree: ConfigTree) -> Policy:
    """The policy of a configuration snapshot (of a combined one, its first source's), the built-in one (its source
    saying where none was found) when it has none; RolloutPolicyError naming the file and line when it is invalid."""
    main = tree.parts()[0].tree
    if not main.exists(POLICY_PATH):
        return replace(default_policy(), source=f"built-in default (no {POLICY_PATH} in {main.source})")
    return parse(main.read(POLICY_PATH), f"{main.source.rstrip('/')}/{POLICY_PATH}")


_KEPT: dict[tuple[str, str], Policy | RolloutPolicyError] = {}
KEPT_AT_MOST = 8


def fleet_policy(config_uri: str, client: Callable[[str], Any]) -> Policy:
    """The policy of the configuration `config_uri` names (`policy_of` its first source on the default channel),
    read once per version of that source in this process (a reconcile looks every 30 s while a rollout rolls)."""
    from clm.config.uri import one_source, parse_sources

    source = one_source(parse_sources(config_uri)[0][1], client)
    key = (config_uri, source.version())
    if key not in _KEPT:
        if len(_KEPT) >= KEPT_AT_MOST:
            _KEPT.clear()
        try:
            _KEPT[key] = policy_of(source.fetch())
        except RolloutPolicyError as exc:
            _KEPT[key] = exc
    kept = _KEPT[key]
    if isinstance(kept, RolloutPolicyError):
        raise kept
    return kept
