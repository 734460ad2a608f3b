"""What starts CLM's workflows: registry changes (stream -> registry_events -> bus -> rule) and, once a
reconcile workflow exists, configuration changes and a schedule."""

from __future__ import annotations

from typing import Any

from aws_cdk import Duration
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.config_source import ConfigSource
from infra.functions import ClmFunction
from infra.nag import acknowledge_wildcards

CLUSTER_CHANGED = events.EventPattern(source=["clm.registry"], detail_type=["Cluster Changed"])
RECONCILE_EVERY = Duration.minutes(15)
STREAM_RETRIES = 10


class RegistryTrigger(Construct):
    """Registry stream -> `registry_events` (publishes `Cluster Changed` only for spec changes) -> bus -> rule
    -> provision with input `{cluster_id, reason}`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        registry: dynamodb.ITable,
        publisher: ClmFunction,
        bus: events.IEventBus,
        provision: sfn.IStateMachine,
    ) -> None:
        super().__init__(scope, construct_id)
        publisher.function.add_event_source(
            sources.DynamoEventSource(
                registry,
                starting_position=lambda_.StartingPosition.LATEST,
                batch_size=100,
                max_batching_window=Duration.seconds(1),
                retry_attempts=STREAM_RETRIES,
                bisect_batch_on_error=True,
            )
        )
        acknowledge_wildcards(publisher, ["*"], "dynamodb:ListStreams supports no resource scoping")
        bus.grant_put_events_to(publisher.role)
        self.rule = events.Rule(
            self,
            "ClusterChanged",
            event_bus=bus,
            event_pattern=CLUSTER_CHANGED,
            description="CLM: a cluster's spec changed in the registry -> provision it",
        )
        self.rule.add_target(
            targets.SfnStateMachine(
                provision,
                input=events.RuleTargetInput.from_object(
                    {
                        "cluster_id": events.EventField.from_path("$.detail.cluster_id"),
                        "reason": events.EventField.from_path("$.detail.reason"),
                    }
                ),
            )
        )


class ReconcileTriggers(Construct):
    """Configuration change (S3 Object Created under a source's prefix, or a push to a CodeCommit branch) ->
    reconcile with input `{reason, change}` (the change names bucket and key, or repository and branch: its
    channel's clusters are reconciled); a schedule (drift, retries) -> reconcile with input `{reason}`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: ConfigSource, reconcile: sfn.IStateMachine):
        super().__init__(scope, construct_id)
        for rule_id, pattern, change in config.change_rules():
            fields = {name: events.EventField.from_path(path) for name, path in change.items()}
            self._rule(
                rule_id,
                "the configuration changed",
                reconcile,
                {"reason": "config changed", "change": fields},
                pattern=pattern,
            )
        self._rule(
            "Schedule",
            "every 15 minutes",
            reconcile,
            {"reason": "schedule"},
            schedule=events.Schedule.rate(RECONCILE_EVERY),
        )

    def _rule(
        self,
        rule_id: str,
        description: str,
        reconcile: sfn.IStateMachine,
        payload: dict[str, Any],
        pattern: events.EventPattern | None = None,
        schedule: events.Schedule | None = None,
    ) -> None:
        events.Rule(
            self,
            rule_id,
            description=f"CLM: {description} -> reconcile",
            event_pattern=pattern,
            schedule=schedule,
            targets=[targets.SfnStateMachine(reconcile, input=events.RuleTargetInput.from_object(payload))],
        )
