"""CDK assertions on the synthesized CLM stack, cdk-nag's AwsSolutions checks and cfn-lint on its template.

Two apps are synthesized (~10 s each, asset staging off): the defaults of cdk.json, and a variant with a CodeCommit
repository, Lambdas in a VPC and other context values. The layer directory is built once (cached by content).
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3
from aws_cdk.assertions import Match, Template

from clm.stacks import names
from infra import permissions, tags
from infra.context import ClmContext, ContextError
from infra.functions import function_id
from infra.layer_build import LAMBDA_VERSION, build_layer, build_layer_zip
from infra.nag import add_checks
from infra.stack import ClmStack
from infra.workflow import Workflow, WorkflowError
from infra.zips import zip_directory

DEFAULTS = json.loads((Path(__file__).parents[2] / "cdk.json").read_text())["context"]
NO_STAGING = {"aws:cdk:disable-asset-staging": True}
VARIANT = {
    "clm:codeCommitRepository": "clm-config",
    "clm:codeCommitBranch": "live",
    "clm:vpcId": "vpc-0123456789abcdef0",
    "clm:subnetIds": "subnet-0123456789abcdef0,subnet-0fedcba9876543210",
    "clm:logRetentionDays": 90,
    "clm:kubeSecretPrefix": "kube/",
    "clm:stateMachineName": "fleet-provision",
    "clm:clusterStackPolicyArns": ["arn:aws:iam::123456789012:policy/clm-cluster-extras"],
    "clm:decryptKeyArns": "arn:aws:kms:eu-central-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
    "clm:rollStepsPerExecution": 40,
    "clm:targetAccounts": "*",
    "clm:targetExclude": "9{12}",
    "clm:notify": True,
}
STEP_FOLDERS = {"run": (60, 256), "stacks": (60, 256), "kube": (120, 512), "roll": (120, 512)}
# CDK writes DependsOn for a role that a GetAtt of the same resource already references: redundant, harmless.
CFN_LINT_IGNORED = ["W3005"]


def synthesized(
    context: dict[str, Any], outdir: Path, kind: type[cdk.Stack] = ClmStack, name: str = "Clm"
) -> tuple[Template, dict[str, Any], Path]:
    """Synthesize the stack `kind` with cdk-nag's checks (an unacknowledged finding fails the synthesis)."""
    app = cdk.App(context={**context, **NO_STAGING}, outdir=str(outdir))
    stack = kind(app, name)
    add_checks(app)
    assembly = app.synth()
    path = Path(assembly.get_stack_artifact(stack.artifact_id).template_full_path)
    template = json.loads(path.read_text())
    return Template.from_json(template), template, path


@pytest.fixture(scope="module")
def default(tmp_path_factory) -> tuple[Template, dict[str, Any], Path]:
    return synthesized(DEFAULTS, tmp_path_factory.mktemp("cdk-default"))


@pytest.fixture(scope="module")
def template(default) -> Template:
    return default[0]


@pytest.fixture(scope="module")
def variant(tmp_path_factory) -> tuple[Template, dict[str, Any], Path]:
    return synthesized({**DEFAULTS, **VARIANT}, tmp_path_factory.mktemp("cdk-variant"))


def resources(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: body for name, body in raw["Resources"].items() if body["Type"] == kind}


def function_named(raw: dict[str, Any], folder: str) -> tuple[str, dict[str, Any]]:
    prefix = function_id(folder)
    [(name, body)] = [
        (name, body)
        for name, body in resources(raw, "AWS::Lambda::Function").items()
        if name.startswith(prefix) and "Role" not in name
    ]
    return name, body


def policy_statements(raw: dict[str, Any], role_prefix: str) -> list[dict[str, Any]]:
    """The statements of the policies attached to the role whose logical id starts with `role_prefix`: inline, and
    managed policies of the template that name it (their `Roles`)."""
    statements = []
    for kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
        for body in resources(raw, kind).values():
            if any(role["Ref"].startswith(role_prefix) for role in body["Properties"].get("Roles", [])):
                statements += body["Properties"]["PolicyDocument"]["Statement"]
    return statements


def actions_of(statements: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()
    for statement in statements:
        actions = statement["Action"]
        found |= {actions} if isinstance(actions, str) else set(actions)
    return found


def statement_for(statements: list[dict[str, Any]], action: str) -> dict[str, Any]:
    [statement] = [s for s in statements if action in actions_of([s])]
    return statement


# --- storage ------------------------------------------------------------------------------------------------------


def test_registry_table_has_stream_pitr_and_encryption(template):
    template.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "Properties": {
                "TableName": "clm-registry",
                "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
                "BillingMode": "PAY_PER_REQUEST",
                "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True},
            },
        },
    )


def test_config_bucket_is_versioned_private_and_tls_only(template):
    template.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "VersioningConfiguration": {"Status": "Enabled"},
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "NotificationConfiguration": {"EventBridgeConfiguration": {"EventBridgeEnabled": True}},
        },
    )
    template.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Action": "s3:*",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        )
                    ]
                )
            },
        },
    )


def test_artefact_bucket_is_private_encrypted_tls_only_and_renderings_expire(default):
    template, raw, _ = default
    [(name, _body)] = [(n, b) for n, b in resources(raw, "AWS::S3::Bucket").items() if n.startswith("Artefacts")]
    template.has_resource(
        "AWS::S3::Bucket",
        {
            "DeletionPolicy": "Retain",
            "Properties": {
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {
                            "BucketKeyEnabled": True,
                            "ServerSideEncryptionByDefault": {
                                "SSEAlgorithm": "aws:kms",
                                "KMSMasterKeyID": {"Fn::GetAtt": [Match.string_like_regexp("^ArtefactsKey"), "Arn"]},
                            },
                        }
                    ]
                },
                "PublicAccessBlockConfiguration": Match.object_like({"BlockPublicAcls": True}),
                "LifecycleConfiguration": {
                    "Rules": Match.array_with(
                        [Match.object_like({"Prefix": "renderings/", "ExpirationInDays": 30, "Status": "Enabled"})]
                    )
                },
            },
        },
    )
    policies = [p for p in resources(raw, "AWS::S3::BucketPolicy").values() if p["Properties"]["Bucket"]["Ref"] == name]
    [tls] = [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_artefact_key_rotates_and_is_used_only_through_s3(default):
    """Least privilege: the key policy lets the account administer the key but use it only through S3 in this
    region (and IAM decides which principals: CLM's functions, test_functions_use_the_artefact_key_through_s3)."""
    _, raw, _ = default
    [key] = [b for n, b in resources(raw, "AWS::KMS::Key").items() if n.startswith("ArtefactsKey")]
    assert key["Properties"]["EnableKeyRotation"] is True and key["DeletionPolicy"] == "Retain"
    statements = key["Properties"]["KeyPolicy"]["Statement"]
    administer, use = (next(s for s in statements if s["Sid"] == sid) for sid in ("Administer", "UseThroughS3"))
    usage = {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:ReEncryptFrom", "kms:*"}
    assert not usage & set(administer["Action"]) and not any(
        a.startswith(("kms:ReEncrypt", "kms:Generate")) for a in administer["Action"]
    )
    assert set(use["Action"]) == {"kms:Decrypt", "kms:GenerateDataKey"}
    assert use["Condition"]["StringEquals"]["kms:ViaService"] == {
        "Fn::Join": ["", ["s3.", {"Ref": "AWS::Region"}, ".amazonaws.com"]]
    }
    assert use["Condition"]["StringEquals"]["kms:CallerAccount"] == {"Ref": "AWS::AccountId"}
    assert len(statements) == 2


@pytest.mark.parametrize(
    ("folder", "actions"),
    [
        ("run", ["kms:Decrypt", "kms:GenerateDataKey"]),
        ("stacks", ["kms:Decrypt", "kms:GenerateDataKey"]),
        ("kube", "kms:Decrypt"),
        ("roll", "kms:Decrypt"),
    ],
)
def test_functions_use_the_artefact_key_through_s3(default, folder, actions):
    _, raw, _ = default
    statements = policy_statements(raw, folder.title() + "FunctionRole")
    [grant] = [s for s in statements if "ArtefactsKey" in json.dumps(s["Resource"])]
    assert grant["Action"] == actions
    assert "kms:ViaService" in grant["Condition"]["StringEquals"]


def test_only_the_run_function_decrypts_config_items_and_only_with_the_keys_named(default, variant):
    key = VARIANT["clm:decryptKeyArns"]
    for folder in STEP_FOLDERS:
        statements = policy_statements(variant[1], folder.title() + "FunctionRole")
        decrypting = [s for s in statements if s["Resource"] == key]
        environment = function_named(variant[1], folder)[1]["Properties"]["Environment"]["Variables"]
        if folder == "run":  # with a config item's encryption context only (clm.render.secrets.encryption_context)
            assert [(s["Action"], s.get("Condition")) for s in decrypting] == [
                ("kms:Decrypt", permissions.config_item_context())
            ]
            assert environment[permissions.DECRYPT_KEYS_ENV] == key
        else:
            assert not decrypting and permissions.DECRYPT_KEYS_ENV not in environment
    _, run = function_named(default[1], "run")
    assert permissions.DECRYPT_KEYS_ENV not in run["Properties"]["Environment"]["Variables"]  # none named: none


# --- layer and functions ------------------------------------------------------------------------------------------


def test_layer_holds_clm_and_every_pinned_requirement():
    directory, digest = build_layer()  # cached: the synthesis above built it
    site = directory / "python"
    assert (site / "clm" / "workflow" / "registry_events.py").is_file()
    for module in (site / "clm" / "workflow" / "registry_events.py", site / "yaml" / "__init__.py"):
        [pyc] = (module.parent / "__pycache__").glob(f"{module.stem}.cpython-{LAMBDA_VERSION.replace('.', '')}.pyc")
        assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 1  # PEP 552: hash-based, source not checked
    requirements = Path(__file__).parents[2] / "requirements.txt"
    for line in requirements.read_text().splitlines():
        requirement = line.split("#")[0].strip()
        if requirement:
            name, version = requirement.split("==")
            normalized = name.lower().replace("-", "_")
            assert list(site.glob(f"{normalized}-{version}.dist-info")) or list(
                site.glob(f"{name.replace('-', '_')}-{version}.dist-info")
            ), f"{requirement} missing from the layer"
    assert build_layer() == (directory, digest)  # unchanged inputs: the same directory, not rebuilt


def test_the_layer_is_deployed_as_a_zip_of_its_directory_pycs_included_and_the_same_for_the_same_content(tmp_path):
    """The asset is the cached zip (the CLI uploads it as it is instead of zipping ~130 MB at every deployment)."""
    archive, digest = build_layer_zip()
    directory, _ = build_layer()
    assert archive == directory.with_suffix(".zip")
    files = sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())
    entries = zipfile.ZipFile(archive).namelist()
    assert sorted(entries) == files and any(entry.endswith(".pyc") for entry in entries)
    again = zip_directory(directory, tmp_path / "again.zip", keep_pyc=True)
    assert again.read_bytes() == archive.read_bytes()
    assert build_layer_zip() == (archive, digest)


@pytest.mark.parametrize("folder", [*STEP_FOLDERS, "reconcile", "registry_events"])
def test_function_runtime_layer_environment_tracing_and_logs(default, folder):
    _, raw, _ = default
    _, body = function_named(raw, folder)
    properties = body["Properties"]
    assert properties["Runtime"] == f"python{LAMBDA_VERSION}"
    assert properties["Handler"] == "handler.handler"
    assert properties["TracingConfig"] == {"Mode": "Active"}
    [layer] = properties["Layers"]
    assert layer["Ref"].startswith("Layer")
    variables = properties["Environment"]["Variables"]
    assert variables["POWERTOOLS_SERVICE_NAME"] == "clm"
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "CLM"
    assert variables["CLM_REGISTRY_TABLE"] == {"Ref": next(iter(resources(raw, "AWS::DynamoDB::Table")))}
    assert variables["CLM_ARTEFACT_BUCKET"]["Ref"].startswith("ArtefactsBucket")
    [scheme, bucket, prefix] = variables["CLM_CONFIG_SOURCE"]["Fn::Join"][1]
    assert (scheme, bucket["Ref"][: len("ConfigBucket")], prefix) == ("s3://", "ConfigBucket", "/config/")
    if folder in STEP_FOLDERS:
        assert (properties["Timeout"], properties["MemorySize"]) == STEP_FOLDERS[folder]
    log_group = properties["LoggingConfig"]["LogGroup"]["Ref"]
    assert raw["Resources"][log_group]["Properties"]["RetentionInDays"] == 30
    assert raw["Resources"][log_group]["DeletionPolicy"] == "Retain"


def test_functions_have_special_environment(default):
    _, raw, _ = default
    stacks = function_named(raw, "stacks")[1]["Properties"]["Environment"]["Variables"]
    assert stacks["CLM_CLOUDFORMATION_ROLE_ARN"]["Fn::GetAtt"][0].startswith("ClusterStackRole")
    reconcile = function_named(raw, "reconcile")[1]["Properties"]["Environment"]["Variables"]
    assert reconcile["CLM_PROVISION_STATE_MACHINE"]["Ref"].startswith("ProvisionStateMachine")
    assert reconcile["CLM_MAX_RUNNING"] == "10"
    roll = function_named(raw, "roll")[1]["Properties"]["Environment"]["Variables"]
    assert roll["CLM_ROLL_STEPS_PER_EXECUTION"] == "300"
    events = function_named(raw, "registry_events")[1]["Properties"]["Environment"]["Variables"]
    assert events["CLM_EVENT_BUS"]["Ref"].startswith("Bus")


# --- permissions --------------------------------------------------------------------------------------------------


def test_no_policy_grants_a_wildcard_action(variant, default):
    for _, raw, _ in (default, variant):
        documents = [p["Properties"]["PolicyDocument"] for p in resources(raw, "AWS::IAM::Policy").values()]
        for role in resources(raw, "AWS::IAM::Role").values():
            documents += [p["PolicyDocument"] for p in role["Properties"].get("Policies", [])]
        actions = actions_of([s for document in documents for s in document["Statement"]])
        assert actions
        assert not [action for action in actions if action == "*" or action.endswith(":*")]


def test_run_function_permissions(default):
    _, raw, _ = default
    statements = policy_statements(raw, "RunFunctionRole")
    assert {"dynamodb:UpdateItem", "dynamodb:GetItem", "s3:GetBucketVersioning", "s3:PutObject"} <= actions_of(
        statements
    )
    described = statement_for(statements, "states:DescribeExecution")
    assert described["Resource"]["Fn::Join"][1][-1] == ":execution:clm-provision:*"
    # Parked drains: SendTaskSuccess supports no resource-level permission (a grant scoped to the roll state
    # machine is refused by AWS, and by the sandbox's IAM enforcement); the task token names the task.
    woken = statement_for(statements, "states:SendTaskSuccess")
    assert (woken["Action"], woken["Resource"]) == ("states:SendTaskSuccess", "*")
    puts = [s for s in statements if "s3:PutObject" in actions_of([s])]
    assert sorted(json.dumps(put["Resource"]["Fn::Join"][1][-1]) for put in puts) == ['"/*"', '"/renderings/*"']
    listing = statement_for(statements, "s3:ListBucketVersions")
    assert listing["Condition"] == {"StringLike": {"s3:prefix": ["config/*"]}}
    # Node files (clm.render.node_files): the cluster stack's outputs only, no change to any stack, no IAM.
    cloudformation = {action for action in actions_of(statements) if action.startswith(("cloudformation:", "iam:"))}
    assert cloudformation == {"cloudformation:DescribeStacks"}
    encrypt = statement_for(statements, "kms:Encrypt")
    assert encrypt["Condition"] == {"StringEquals": {"aws:ResourceTag/clm:managed-by": "clm"}}
    # What templates ask EC2 at render (clm.render.lookups): read-only, unscoped by AWS; nothing else of EC2.
    looked_up = statement_for(statements, "ec2:DescribeImages")
    lookups = ["ec2:DescribeImages", "ec2:DescribeInstanceTypes", "ec2:DescribeSubnets", "ec2:DescribeVpcs"]
    assert (sorted(looked_up["Action"]), looked_up["Resource"]) == (lookups, "*")
    assert {action for action in actions_of(statements) if action.startswith("ec2:")} == set(lookups)


def test_only_the_functions_that_find_node_pool_stacks_may_list_stacks(default):
    _, raw, _ = default
    for folder in ("stacks", "roll"):  # the pools step; resume_all
        statements = policy_statements(raw, folder.title() + "FunctionRole")
        assert statement_for(statements, "cloudformation:ListStacks")["Resource"] == "*"
    for role in ("RunFunctionRole", "KubeFunctionRole", "ReconcileFunctionRole", "RegistryEventsFunctionRole"):
        assert "cloudformation:ListStacks" not in actions_of(policy_statements(raw, role))


def test_reconcile_lists_the_executions_of_provision_and_of_itself_only(default):
    _, raw, _ = default
    statements = [s for s in policy_statements(raw, "ReconcileFunctionRole") if "states:ListExecutions" in s["Action"]]
    resources_listed = [json.dumps(s["Resource"]) for s in statements]
    assert len(resources_listed) == 2
    assert any("ProvisionStateMachine" in r for r in resources_listed)
    assert any(r.endswith(':stateMachine:clm-reconcile"]]}') for r in resources_listed), resources_listed


def test_reconcile_run_and_roll_publish_their_events_on_clms_bus_only(default):
    _, raw, _ = default
    for folder in ("reconcile", "run", "roll"):  # rollout events; node events (Drain Blocked, Node Replaced)
        variables = function_named(raw, folder)[1]["Properties"]["Environment"]["Variables"]
        assert variables["CLM_EVENT_BUS"] == {"Ref": next(n for n in resources(raw, "AWS::Events::EventBus"))}
        put = statement_for(policy_statements(raw, folder.title() + "FunctionRole"), "events:PutEvents")
        assert put["Resource"] == {"Fn::GetAtt": [next(n for n in resources(raw, "AWS::Events::EventBus")), "Arn"]}
    for role in ("StacksFunctionRole", "KubeFunctionRole"):
        assert "events:PutEvents" not in actions_of(policy_statements(raw, role))


def test_reconcile_writes_rollouts_items_only_never_a_clusters(default):
    from clm.rollout.state import KEY_PREFIX

    _, raw, _ = default
    statements = policy_statements(raw, "ReconcileFunctionRole")
    writes = [s for s in statements if {"dynamodb:PutItem", "dynamodb:UpdateItem"} & set(actions_of([s]))]
    assert len(writes) == 1
    assert sorted(actions_of(writes)) == ["dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:UpdateItem"]
    assert writes[0]["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [f"{KEY_PREFIX}*"]}}


def test_stacks_function_manages_stacks_and_passes_only_the_cluster_stack_role(default):
    _, raw, _ = default
    statements = policy_statements(raw, "StacksFunctionRole")
    manage = statement_for(statements, "cloudformation:CreateStack")
    assert manage["Resource"]["Fn::Join"][1][-1] == ":stack/*"
    pass_role = statement_for(statements, "iam:PassRole")
    assert pass_role["Resource"]["Fn::GetAtt"][0].startswith("ClusterStackRole")
    assert pass_role["Condition"] == {"StringEquals": {"iam:PassedToService": "cloudformation.amazonaws.com"}}
    assert "dynamodb:UpdateItem" not in actions_of(statements)  # registry: read only
    cluster_role = next(b for n, b in resources(raw, "AWS::IAM::Role").items() if n.startswith("ClusterStackRole"))
    assert cluster_role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "cloudformation.amazonaws.com"
    }


def test_stacks_function_changes_only_stacks_tagged_managed_by_clm_and_only_with_the_cluster_stack_role(default):
    _, raw, _ = default
    statements = policy_statements(raw, "StacksFunctionRole")
    role = statement_for(statements, "iam:PassRole")["Resource"]  # the ClusterStackRole's ARN
    assert tags.MANAGED_BY_TAG == names.MANAGED_BY_TAG == "clm:managed-by"  # the tag CLM writes
    owned = {"aws:ResourceTag/clm:managed-by": "false"}
    requested = {"aws:RequestTag/clm:managed-by": "false"}
    # The one kind of stack CLM did not create that it may delete: kube-ingress-aws-controller's (decommission).
    assert (tags.INGRESS_APP_TAG, tags.INGRESS_CONTROLLER) == (
        names.INGRESS_APP_TAG,
        names.INGRESS_CONTROLLER,
    )
    ingress = {"aws:ResourceTag/kubernetes:application": "kube-ingress-aws-controller"}
    expected = {
        "cloudformation:CreateStack": [{"StringEquals": {"cloudformation:RoleArn": role}, "Null": requested}],
        "cloudformation:UpdateStack": [{"StringEquals": {"cloudformation:RoleArn": role}, "Null": owned | requested}],
        "cloudformation:DeleteStack": [
            {"StringEquals": {"cloudformation:RoleArn": role}, "Null": owned},
            {"StringEquals": {"cloudformation:RoleArn": role} | ingress},
        ],
        "cloudformation:ContinueUpdateRollback": [{"StringEquals": {"cloudformation:RoleArn": role}, "Null": owned}],
        "cloudformation:UpdateTerminationProtection": [{"Null": owned}, {"StringEquals": ingress}],
    }
    granted = {action: [s.get("Condition") for s in statements if action in actions_of([s])] for action in expected}
    assert granted == expected
    unconditioned = actions_of([s for s in statements if "Condition" not in s])
    assert {a for a in unconditioned if a.startswith("cloudformation:")} == {  # reads only
        "cloudformation:DescribeStacks",
        "cloudformation:DescribeStackResources",
        "cloudformation:ListStackResources",
        "cloudformation:DescribeStackEvents",
        "cloudformation:GetTemplate",
        "cloudformation:ListStacks",
    }


def test_kube_and_roll_reach_clusters_through_prefixed_secrets_and_eks(default, variant):
    for (_, raw, _), prefix in ((default, "clm/"), (variant, "kube/")):
        for role in ("KubeFunctionRole", "RollFunctionRole"):
            statements = policy_statements(raw, role)
            secret = statement_for(statements, "secretsmanager:GetSecretValue")
            assert secret["Resource"]["Fn::Join"][1][-1] == f":secret:{prefix}*"
            assert actions_of([secret]) == {"secretsmanager:DescribeSecret", "secretsmanager:GetSecretValue"}
            assert secret["Condition"] == {"Null": {"secretsmanager:ResourceTag/clm:cluster-id": "false"}}
            assert statement_for(statements, "eks:DescribeCluster")["Resource"]["Fn::Join"][1][-1] == ":cluster/*"
            assert statement_for(statements, "sts:GetCallerIdentity")["Resource"] == "*"


def test_run_and_stacks_only_describe_eks_clusters(default):
    """The run function's EKS hook (clm.workflow.eks_hook, CLM's zalando_eks.go) and the decommission's proof of a
    zalando-eks cluster's alias read EKS clusters: DescribeCluster only, on clusters of the stack's account and
    region, and nothing else of EKS."""
    _, raw, _ = default
    for role in ("RunFunctionRole", "StacksFunctionRole"):
        statements = policy_statements(raw, role)
        describe = statement_for(statements, "eks:DescribeCluster")
        assert actions_of([describe]) == {"eks:DescribeCluster"}
        assert describe["Resource"]["Fn::Join"][1][-1] == ":cluster/*"
        assert {a for a in actions_of(statements) if a.startswith("eks:")} == {"eks:DescribeCluster"}


def test_roll_changes_only_node_pool_groups(default):
    _, raw, _ = default
    statements = policy_statements(raw, "RollFunctionRole")
    change = statement_for(statements, "autoscaling:TerminateInstanceInAutoScalingGroup")
    assert {
        "autoscaling:SuspendProcesses",
        "autoscaling:ResumeProcesses",
        "autoscaling:UpdateAutoScalingGroup",
        "autoscaling:CreateOrUpdateTags",
        "autoscaling:DeleteTags",
    } <= actions_of([change])
    assert change["Condition"] == {"Null": {"aws:ResourceTag/kubernetes.io/node-pool": "false"}}
    assert change["Resource"]["Fn::Join"][1][-1] == ":autoScalingGroup:*"
    assert statement_for(statements, "ec2:DescribeInstances")["Resource"] == "*"
    assert "cloudformation:CreateStack" not in actions_of(statements)


def test_the_functions_may_assume_their_target_roles_only_in_the_accounts_allowed(default, variant):
    """No clm:targetAccounts: each function its own target role in the hub's own account only (its other regions),
    the role's name in the environment; `*`: in any account, and the settings in the environment (clm.targets)."""
    _, raw, _ = default
    for folder in STEP_FOLDERS:
        assume = statement_for(policy_statements(raw, function_id(folder) + "Role"), "sts:AssumeRole")
        assert assume["Resource"]["Fn::Join"][1][-3:] == [
            ":iam::",
            {"Ref": "AWS::AccountId"},
            f":role/clm-target-*-{folder}",
        ]
        variables = function_named(raw, folder)[1]["Properties"]["Environment"]["Variables"]
        assert {name: value for name, value in variables.items() if name.startswith("CLM_TARGET_")} == {
            "CLM_TARGET_ROLE": f"clm-target-{{region}}-{folder}"
        }
    _, raw, _ = variant
    for folder in STEP_FOLDERS:
        assume = statement_for(policy_statements(raw, function_id(folder) + "Role"), "sts:AssumeRole")
        assert assume["Resource"]["Fn::Join"][1][-1] == f":iam::*:role/clm-target-*-{folder}"
        variables = function_named(raw, folder)[1]["Properties"]["Environment"]["Variables"]
        assert (variables["CLM_TARGET_ACCOUNTS"], variables["CLM_TARGET_EXCLUDE"]) == ("*", "9{12}")
        assert "CLM_TARGET_INCLUDE" not in variables
    for folder in ("reconcile", "registry_events"):
        assert "sts:AssumeRole" not in actions_of(policy_statements(raw, function_id(folder) + "Role"))
    variables = function_named(raw, "reconcile")[1]["Properties"]["Environment"]["Variables"]  # starts no run outside
    assert (variables["CLM_TARGET_ACCOUNTS"], variables["CLM_TARGET_EXCLUDE"]) == ("*", "9{12}")


@pytest.mark.parametrize("role", ["RollFunctionRole", "StacksFunctionRole"])
def test_only_instances_karpenter_launched_may_be_terminated(default, role):
    """A Karpenter pool's roll (roll) and a decommission (stacks) terminate through EC2, never other instances."""
    _, raw, _ = default
    terminate = statement_for(policy_statements(raw, role), "ec2:TerminateInstances")
    assert actions_of([terminate]) == {"ec2:TerminateInstances"}
    assert terminate["Condition"] == {"Null": {"ec2:ResourceTag/karpenter.sh/nodepool": "false"}}
    assert terminate["Resource"]["Fn::Join"][1][-1] == ":instance/*"


SYNC_START = {
    "states:StartExecution",
    "states:DescribeExecution",
    "states:StopExecution",
    "events:PutTargets",
    "events:PutRule",
    "events:DescribeRule",
}


def test_state_machine_roles_invoke_only_their_functions_and_start_only_their_children(default):
    _, raw, _ = default
    for role, functions, children in (
        ("ProvisionRole", STEP_FOLDERS, {"RollNodePool", "Decommission"}),
        ("DecommissionRole", {"stacks": None, "kube": None}, {"RollNodePool"}),  # kube: scale kube-system down
        ("RollNodePoolRole", {"stacks": None, "roll": None, "run": None}, set()),
        ("ReconcileRole", {"reconcile": None}, set()),
    ):
        statements = policy_statements(raw, role)
        invokes = [s for s in statements if "lambda:InvokeFunction" in actions_of([s])]
        assert actions_of(invokes) == {"lambda:InvokeFunction"}
        targets = {r["Fn::GetAtt"][0] for s in invokes for r in s["Resource"] if "Fn::GetAtt" in r}
        assert targets == {function_named(raw, folder)[0] for folder in functions}
        starts = [s for s in statements if "states:StartExecution" in actions_of([s])]
        started = {s["Resource"]["Ref"] for s in starts}
        assert len(started) == len(children)
        assert all(any(ref.startswith(f"{child}StateMachine") for ref in started) for child in children)
        others = actions_of([s for s in statements if s not in invokes])
        allowed = SYNC_START if children else set()
        assert all(action.startswith(("logs:", "xray:")) or action in allowed for action in others), others


# --- workflows, triggers, alarms, outputs -------------------------------------------------------------------------


def test_provision_state_machine(default):
    template, raw, _ = default
    template.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineName": "clm-provision",
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {
                "Level": "ERROR",
                "IncludeExecutionData": False,
                "Destinations": Match.any_value(),
            },
            "DefinitionS3Location": Match.any_value(),
        },
    )
    [provision] = [
        b["Properties"]
        for b in resources(raw, "AWS::StepFunctions::StateMachine").values()
        if b["Properties"]["StateMachineName"] == "clm-provision"
    ]
    substitutions = provision["DefinitionSubstitutions"]
    children = {key: substitutions.pop(key) for key in ("RollNodePoolStateMachine", "DecommissionStateMachine")}
    assert substitutions == {
        f"{folder.title()}Function": {"Fn::GetAtt": [function_named(raw, folder)[0], "Arn"]} for folder in STEP_FOLDERS
    }
    assert all(value["Ref"].startswith(key) for key, value in children.items())


def test_cluster_changed_rule_starts_provision_with_cluster_id_and_reason(default):
    template, raw, _ = default
    template.has_resource_properties("AWS::Events::EventBus", {"Name": "clm"})
    [rule] = [b for b in resources(raw, "AWS::Events::Rule").values() if "EventBusName" in b["Properties"]]
    properties = rule["Properties"]
    assert properties["EventPattern"] == {"source": ["clm.registry"], "detail-type": ["Cluster Changed"]}
    [target] = properties["Targets"]
    assert target["Arn"]["Ref"].startswith("ProvisionStateMachine")
    transformer = target["InputTransformer"]
    assert json.loads(
        transformer["InputTemplate"].replace("<detail-cluster_id>", '"c"').replace("<detail-reason>", '"r"')
    ) == {"cluster_id": "c", "reason": "r"}
    assert sorted(transformer["InputPathsMap"].values()) == ["$.detail.cluster_id", "$.detail.reason"]
    starter = policy_statements(raw, target["RoleArn"]["Fn::GetAtt"][0])
    assert actions_of(starter) == {"states:StartExecution"}
    template.has_resource_properties(
        "AWS::Lambda::EventSourceMapping",
        {
            "EventSourceArn": {"Fn::GetAtt": [Match.any_value(), "StreamArn"]},
            "FunctionName": {"Ref": function_named(raw, "registry_events")[0]},
            "StartingPosition": "LATEST",
            "BisectBatchOnFunctionError": True,
        },
    )
    assert actions_of(policy_statements(raw, "RegistryEventsFunctionRole")) >= {"events:PutEvents"}


def test_config_change_and_schedule_start_reconcile(default, variant):
    for (_, raw, _), pattern in (
        (
            default,
            {
                "source": ["aws.s3"],
                "detail-type": ["Object Created"],
                "detail": {"bucket": {"name": [Match.any_value()]}, "object": {"key": [{"prefix": "config/"}]}},
            },
        ),
        (
            variant,
            {
                "source": ["aws.codecommit"],
                "detail-type": ["CodeCommit Repository State Change"],
                "resources": [Match.any_value()],
                # any branch: a branch per channel (the change names it, reconcile maps it to its clusters)
                "detail": {"referenceType": ["branch"], "event": ["referenceCreated", "referenceUpdated"]},
            },
        ),
    ):
        template = Template.from_json(raw)
        for rule in ({"EventPattern": pattern}, {"ScheduleExpression": "rate(15 minutes)"}):
            template.has_resource_properties(
                "AWS::Events::Rule",
                {**rule, "Targets": [Match.object_like({"Arn": {"Ref": Match.string_like_regexp("^Reconcile")}})]},
            )
    paths = {
        path
        for raw in (default[1], variant[1])
        for rule in resources(raw, "AWS::Events::Rule").values()
        for target in rule["Properties"]["Targets"]
        for path in target.get("InputTransformer", {}).get("InputPathsMap", {}).values()
    }
    assert {"$.detail.object.key", "$.detail.referenceName"} <= paths


def test_alarms_on_failed_executions(template):
    template.resource_count_is("AWS::CloudWatch::Alarm", 2)
    template.has_resource_properties(
        "AWS::CloudWatch::Alarm",
        {
            "Namespace": "AWS/States",
            "MetricName": "ExecutionsFailed",
            "Dimensions": [{"Name": "StateMachineArn", "Value": {"Ref": Match.string_like_regexp("^Provision")}}],
            "Threshold": 1,
            "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        },
    )


def test_outputs(default):
    _, raw, _ = default
    assert set(raw["Outputs"]) == {
        "RegistryTableName",
        "ConfigBucketName",
        "NodeFilesBucketName",
        "ManageEtcdStack",  # clm:manageEtcdStack, for `clm plan` and `clm render`
        "ConfigSourceUri",
        "ArtefactBucketName",
        "ProvisionStateMachineArn",
        "ReconcileStateMachineArn",
        "EventBusName",
        "KubeFunctionRoleArn",
        "RollFunctionRoleArn",
        "RunFunctionName",  # `clm targets` invokes it, `clm registry import|set` read its target settings
        "ClusterRolePath",  # exported for the cluster stacks' templates (infra.cluster_role_boundary)
        "ClusterRoleBoundaryArn",
    }
    assert raw["Outputs"]["ManageEtcdStack"]["Value"] == "false"
    assert raw["Outputs"]["RunFunctionName"]["Value"] == {"Ref": function_named(raw, "run")[0]}


# --- context variants ---------------------------------------------------------------------------------------------


def test_clms_events_go_to_an_sns_topic_only_when_the_context_asks(default, variant):
    _, plain, _ = default
    assert not resources(plain, "AWS::SNS::Topic") and "NotifyTopicArn" not in plain["Outputs"]
    template, raw, _ = variant  # clm:notify (infra.notify; the topic's policy: tests/unit/test_infra_notify.py)
    [topic] = resources(raw, "AWS::SNS::Topic")
    template.has_resource_properties(
        "AWS::Events::Rule",
        {
            "EventBusName": {"Ref": next(iter(resources(raw, "AWS::Events::EventBus")))},
            "EventPattern": {"source": ["clm.rollout", "clm.cluster", "clm.node"]},
            "Targets": [{"Arn": {"Ref": topic}, "Id": "Target0"}],
        },
    )
    assert raw["Outputs"]["NotifyTopicArn"]["Value"] == {"Ref": topic}


def test_codecommit_vpc_and_retention_from_context(variant):
    template, raw, _ = variant
    template.has_resource_properties("AWS::CodeCommit::Repository", {"RepositoryName": "clm-config"})
    _, run = function_named(raw, "run")
    uri = run["Properties"]["Environment"]["Variables"]["CLM_CONFIG_SOURCE"]
    assert uri["Fn::Join"][1][0] == "codecommit://" and uri["Fn::Join"][1][-1] == "@live"
    roll = function_named(raw, "roll")[1]["Properties"]["Environment"]["Variables"]
    assert roll["CLM_ROLL_STEPS_PER_EXECUTION"] == "40"
    assert actions_of(policy_statements(raw, "RunFunctionRole")) >= {
        "codecommit:GetBranch",
        "codecommit:GetCommit",
        "codecommit:GetFolder",
        "codecommit:GetFile",
        "codecommit:GetBlob",
    }
    for folder in (*STEP_FOLDERS, "reconcile", "registry_events"):
        properties = function_named(raw, folder)[1]["Properties"]
        assert properties["VpcConfig"]["SubnetIds"] == [
            "subnet-0123456789abcdef0",
            "subnet-0fedcba9876543210",
        ]
        log_group = properties["LoggingConfig"]["LogGroup"]["Ref"]
        assert raw["Resources"][log_group]["Properties"]["RetentionInDays"] == 90
    template.has_resource_properties("AWS::StepFunctions::StateMachine", {"StateMachineName": "fleet-provision"})
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": Match.object_like(
                {"Statement": [Match.object_like({"Principal": {"Service": "cloudformation.amazonaws.com"}})]}
            ),
            "ManagedPolicyArns": ["arn:aws:iam::123456789012:policy/clm-cluster-extras"],
        },
    )


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ({"clm:logRetentionDays": 31}, "clm:logRetentionDays: 31 is not one of 1, 3"),
        ({"clm:logRetentionDays": "a month"}, "clm:logRetentionDays: expected a whole number"),
        ({"clm:vpcId": "vpc-1"}, "clm:vpcId and clm:subnetIds: give both"),
        ({"clm:configPrefix": "/config/"}, "clm:configPrefix: '/config/' must not start with '/'"),
        ({"clm:subnetIds": 5, "clm:vpcId": "vpc-1"}, "clm:subnetIds: expected a list of strings"),
        ({"clm:maxRunning": 0}, "clm:maxRunning: 0 must be at least 1"),
        ({"clm:decryptKeyArns": "alias/config"}, "clm:decryptKeyArns: 'alias/config' is not a KMS key ARN"),
        ({"clm:rollStepsPerExecution": 1}, "clm:rollStepsPerExecution: 1 must be at least 2"),
        ({"clm:targetAccounts": "*,222222222222"}, "clm:targetAccounts: .* nor `\\*` alone"),
        ({"clm:targetAccounts": ["2222"]}, "clm:targetAccounts: '2222' is not a list of 12-digit account ids"),
        ({"clm:targetInclude": "[2"}, "clm:targetInclude: '\\[2' is not a regular expression"),
        ({"clm:targetExclude": "("}, "clm:targetExclude: '\\(' is not a regular expression"),
    ],
)
def test_unusable_context_is_an_error_naming_the_key(context, message):
    with pytest.raises(ContextError, match=message):
        ClmContext.of(cdk.App(context=context))


def test_workflow_with_a_placeholder_nobody_provides_names_the_file(tmp_path):
    definition = tmp_path / "odd.asl.json"
    definition.write_text(
        '{"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "${OddFunction}", "End": true}}}'
    )
    stack = cdk.Stack(cdk.App())
    with pytest.raises(WorkflowError, match=r"odd\.asl\.json: no value for OddFunction \(known: none\)"):
        Workflow(stack, "Odd", definition=definition, state_machine_name="odd", context=ClmContext(), functions={})


# --- linters ------------------------------------------------------------------------------------------------------


def test_cdk_nag_checks_fail_the_synthesis_on_an_unacknowledged_finding(tmp_path):
    """Why the two synthesized apps above prove zero unacknowledged findings: a finding fails synthesis."""
    app = cdk.App(outdir=str(tmp_path))
    s3.Bucket(cdk.Stack(app, "Plain"), "Bucket")
    add_checks(app)
    with pytest.raises(RuntimeError, match=r"(?s)ValidationFailed: .*AwsSolutions-S1"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    assert "AwsSolutions-S1" in {
        violation["ruleName"] for plugin in report["pluginReports"] for violation in plugin["violations"]
    }


def test_cdk_nag_has_no_unacknowledged_findings(default, variant):
    for _, _, path in (default, variant):
        report = path.parent / "validation-report.json"
        assert not report.exists() or all(
            plugin["conclusion"] == "success" for plugin in json.loads(report.read_text())["pluginReports"]
        )


def test_cfn_lint_is_clean(default, variant):
    cfn_lint = Path(sys.executable).with_name("cfn-lint")
    for _, _, path in (default, variant):
        result = subprocess.run(
            [str(cfn_lint), "--ignore-checks", *CFN_LINT_IGNORED, "--", str(path)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
