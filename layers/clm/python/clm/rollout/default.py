"""The built-in rollout policy, used when the configuration has no cluster/rollout.yaml (docs/rollouts.md: why
each choice). It is itself a rollout.yaml, shown by `clm rollout plan --help` as a starting point."""

from __future__ import annotations

from functools import cache

from clm.rollout.parse import parse
from clm.rollout.policy import Policy

DEFAULT_POLICY = """\
# Never more than 3 clusters changing at once, whatever a wave allows.
max_concurrency: 3
# The `environment` order: test, then staging, then production; any other environment after production.
environments: [test, staging, production]
waves:
  # One cluster first: the least critical of the earliest environment, then 30 minutes to see it work.
  - name: canary
    size: 1
    order: [criticality, environment]
    concurrency: 1
    bake: 30m
  # Every cluster outside production, least critical first, two at a time; an hour before production.
  - name: pre-production
    exclude: {environment: production}
    order: [criticality, environment]
    concurrency: 2
    bake: 1h
  # Production, least critical first, two at a time.
  - name: production
    order: [criticality]
    concurrency: 2
"""


@cache
def default_policy() -> Policy:
    """The built-in policy, parsed."""
    return parse(DEFAULT_POLICY, "built-in default")
