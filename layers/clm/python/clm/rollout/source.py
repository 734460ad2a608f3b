"""Where a fleet's rollout policy comes from: `cluster/rollout.yaml` of the configuration's first source on the
default channel, or the built-in default when that has none (docs/rollouts.md: why there)."""

from __future__ import annotations

from dataclasses import replace

from clm.config.tree import ConfigTree
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
