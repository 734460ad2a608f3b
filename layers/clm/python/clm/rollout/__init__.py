"""Rollouts across the fleet: a policy (cluster/rollout.yaml of the configuration, or the built-in default) that
orders clusters into waves, and the plan it makes of a registry (docs/rollouts.md)."""
