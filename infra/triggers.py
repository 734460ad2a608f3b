"""What starts CLM's workflows: registry changes (stream -> registry_events -> bus -> rule) and, once a
reconcile workflow exists, configuration changes and a schedule."""

from __future__ import annotations

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
    """Configuration change (S3 Object Created under the prefix, or a push to the CodeCommit branch) and a
    schedule (drift, retries) -> reconcile with input `{reason}`."""

    def __init__(self, scope: Construct, construct_id: str, *, config: ConfigSource, reconcile: sfn.IStateMachine):
        super().__init__(scope, construct_id)
        for rule_id, description, pattern, schedule, reason in (
            ("ConfigChanged", "the configuration changed", config.change_pattern(), None, "config changed"),
            ("Schedule", "every 15 minutes", None, events.Schedule.rate(RECONCILE_EVERY), "schedule"),
        ):
            events.Rule(
                self,
                rule_id,
                description=f"CLM: {description} -> reconcile",
                event_pattern=pattern,
                schedule=schedule,
                targets=[
                    targets.SfnStateMachine(reconcile, input=events.RuleTargetInput.from_object({"reason": reason}))
                ],
            )
