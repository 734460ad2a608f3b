"""The CLM stack: registry, configuration, artefacts, the `clm` layer, the step functions, the workflows, the
triggers and alarms, with the settings of infra.context."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_events as events
from constructs import Construct

from infra import permissions
from infra.alarms import executions_failed_alarm
from infra.artefacts import ArtefactBucket
from infra.cluster_permissions import CLUSTER_FUNCTIONS, grant_cluster_side
from infra.cluster_stack_denials import ClmsOwn
from infra.cluster_stack_role import ClusterStackRole
from infra.config_source import ConfigSource
from infra.config_store import ConfigStore
from infra.context import ClmContext
from infra.etcd_permissions import MANAGE_ETCD_ENV
from infra.functions import RECONCILE, REGISTRY_EVENTS, STEP_FUNCTIONS, ClmFunction, function_id
from infra.layer import ClmLayer
from infra.network import FunctionNetwork
from infra.node_files import NodeFilesBucket
from infra.notify import Notifications, wanted
from infra.registry import RegistryTable
from infra.target_roles import grant_target_access, tell_target_accounts
from infra.triggers import ReconcileTriggers, RegistryTrigger
from infra.workflow import Workflow, definition_file

BUS_NAME = "clm"
RECONCILE_STATE_MACHINE = "clm-reconcile"


class ClmStack(Stack):
    """Everything CLM needs in one account and region."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any):
        super().__init__(scope, construct_id, **kwargs)
        context = ClmContext.of(self)
        self.registry = RegistryTable(self, "Registry", table_name=context.registry_table_name)
        self.config = ConfigStore(self, "Config")
        self.config_source = ConfigSource(self, "ConfigSource", self.config.bucket, context)
        self.artefacts = ArtefactBucket(self, "Artefacts")
        self.node_files = NodeFilesBucket(self, "NodeFiles")
        self.bus = events.EventBus(self, "Bus", event_bus_name=BUS_NAME)
        self.cluster_stack_role = ClusterStackRole.of_context(self, "ClusterStackRole", context)

        layer = ClmLayer(self, "Layer").layer
        network = FunctionNetwork(self, "Network", context) if context.vpc_id else None
        environment = {
            "CLM_REGISTRY_TABLE": self.registry.table.table_name,
            "CLM_CONFIG_SOURCE": self.config_source.uri,
            "CLM_ARTEFACT_BUCKET": self.artefacts.bucket.bucket_name,
        }
        self.functions = {
            spec.folder: ClmFunction(
                self,
                function_id(spec.folder),
                spec=spec,
                layer=layer,
                environment=environment,
                context=context,
                network=network,
            )
            for spec in (*STEP_FUNCTIONS, RECONCILE, REGISTRY_EVENTS)
        }
        self.functions["stacks"].function.add_environment(
            "CLM_CLOUDFORMATION_ROLE_ARN", self.cluster_stack_role.role.role_arn
        )
        # Cluster Changed (registry_events); the rollouts' events (reconcile: progress, run: a halt); the clusters'
        # update events (run); node events (roll: Drain Blocked, Node Replaced). docs/events.md
        for publisher in ("registry_events", "reconcile", "run", "roll"):
            self.functions[publisher].function.add_environment("CLM_EVENT_BUS", self.bus.event_bus_name)
        for publisher in ("reconcile", "run", "roll"):
            self.bus.grant_put_events_to(self.functions[publisher].role)
        # A roll-node-pool execution hands over to a successor after this many steps (history events are bounded).
        self.functions["roll"].function.add_environment(
            "CLM_ROLL_STEPS_PER_EXECUTION", str(context.roll_steps_per_execution)
        )
        self._grant(context)

        step_functions = {spec.folder.title(): self.functions[spec.folder].function for spec in STEP_FUNCTIONS}
        self.roll_node_pool = Workflow(
            self,
            "RollNodePool",
            definition=definition_file("roll-node-pool"),
            state_machine_name=context.roll_state_machine_name,
            context=context,
            functions=step_functions,
        )
        self.decommission = Workflow(
            self,
            "Decommission",
            definition=definition_file("decommission"),
            state_machine_name=f"{context.state_machine_name}-decommission",
            context=context,
            functions=step_functions,
            children={"RollNodePool": self.roll_node_pool},
        )
        self.provision = Workflow(
            self,
            "Provision",
            definition=definition_file("provision"),
            state_machine_name=context.state_machine_name,
            context=context,
            functions=step_functions,
            children={
                "RollNodePool": self.roll_node_pool,
                "Decommission": self.decommission,
            },
        )
        RegistryTrigger(
            self,
            "RegistryTrigger",
            registry=self.registry.table,
            publisher=self.functions["registry_events"],
            bus=self.bus,
            provision=self.provision.state_machine,
        )
        # Configuration changes and the schedule start reconcile, never provision directly (a config change
        # concerns every cluster; reconcile starts provision for those that need it, bounded by CLM_MAX_RUNNING).
        reconciler = self.functions["reconcile"]
        reconciler.function.add_environment(
            "CLM_PROVISION_STATE_MACHINE", self.provision.state_machine.state_machine_arn
        )
        reconciler.function.add_environment("CLM_MAX_RUNNING", str(context.max_running))
        permissions.grant_reconcile(
            reconciler, self.registry.table, self.config_source, self.provision.state_machine, RECONCILE_STATE_MACHINE
        )
        self.reconcile = Workflow(
            self,
            "Reconcile",
            definition=definition_file("reconcile"),
            state_machine_name=RECONCILE_STATE_MACHINE,
            context=context,
            functions={"Reconcile": reconciler.function},
        )
        ReconcileTriggers(self, "ReconcileTriggers", config=self.config_source, reconcile=self.reconcile.state_machine)
        self.cluster_stack_role.deny(
            ClmsOwn(
                buckets=(self.config.bucket, self.artefacts.bucket, self.node_files.bucket),
                functions=[f.function for f in self.functions.values()],
                layers=[layer],
                state_machines=[
                    w.state_machine for w in (self.provision, self.decommission, self.roll_node_pool, self.reconcile)
                ],
                bus=self.bus,
                table=self.registry.table,
                keys=[self.artefacts.key],
                secret_prefix=context.kube_secret_prefix,
            )
        )
        if wanted(context):
            Notifications(self, "Notify", bus=self.bus, context=context)
        executions_failed_alarm(self, "ProvisionFailed", self.provision.state_machine)
        executions_failed_alarm(self, "ReconcileFailed", self.reconcile.state_machine)

        CfnOutput(self, "RegistryTableName", value=self.registry.table.table_name)
        CfnOutput(self, "ConfigBucketName", value=self.config.bucket.bucket_name)
        CfnOutput(self, "ConfigSourceUri", value=self.config_source.uri)
        CfnOutput(self, "ArtefactBucketName", value=self.artefacts.bucket.bucket_name)
        CfnOutput(self, "NodeFilesBucketName", value=self.node_files.bucket.bucket_name)
        CfnOutput(  # read by `clm plan` and `clm render` (clm.cli.deployment_settings)
            self, "ManageEtcdStack", value="true" if context.manage_etcd_stack else "false"
        )
        if context.decrypt_key_arns:  # the keys `clm encrypt` encrypts config items with (clm.cli.encrypt_cmd)
            CfnOutput(self, "DecryptKeyArns", value=",".join(context.decrypt_key_arns))
        CfnOutput(self, "ProvisionStateMachineArn", value=self.provision.state_machine.state_machine_arn)
        CfnOutput(self, "ReconcileStateMachineArn", value=self.reconcile.state_machine.state_machine_arn)
        CfnOutput(self, "EventBusName", value=self.bus.event_bus_name)
        CfnOutput(  # `clm targets` invokes it, `clm registry import|set` read its target settings (clm.cli.hub)
            self, "RunFunctionName", value=self.functions["run"].function.function_name
        )
        for folder, output in (("kube", "KubeFunctionRoleArn"), ("roll", "RollFunctionRoleArn")):
            CfnOutput(
                self,
                output,
                value=self.functions[folder].function.role.role_arn,
                description="give it access to each cluster (an EKS access entry, or RBAC for its kubeconfig)",
            )

    def _grant(self, context: ClmContext) -> None:
        table, artefacts = self.registry.table, self.artefacts.bucket
        run = self.functions["run"]
        permissions.grant_run(run, table, self.config_source, artefacts, context)
        permissions.grant_decrypt(run, context.decrypt_key_arns)
        permissions.grant_node_files(run, self.node_files.bucket, artefacts)
        permissions.grant_stacks(self.functions["stacks"], table, artefacts)
        if context.manage_etcd_stack:
            run.function.add_environment(MANAGE_ETCD_ENV, "true")
        if context.apply_only:  # every cluster's runs roll no node pool, unless its item apply_only says "false"
            run.function.add_environment("CLM_APPLY_ONLY", "true")  # clm.workflow.apply_only.APPLY_ONLY_ENV
        for folder in ("kube", "roll"):
            permissions.grant_kube(self.functions[folder], table, artefacts, context.kube_secret_prefix)
        for folder in ("roll", "stacks"):  # the fleet's freezes (clm.workflow.maintenance)
            self.config_source.grant_read(self.functions[folder].role)
        # The cluster side, for the hub's own account and region; other targets: their target stacks' roles.
        on_clusters = {folder: self.functions[folder] for folder in CLUSTER_FUNCTIONS}
        grant_cluster_side(
            on_clusters, self.node_files.bucket, self.cluster_stack_role.role, etcd=context.manage_etcd_stack
        )
        grant_target_access(on_clusters, context)
        tell_target_accounts(self.functions["reconcile"], context)
