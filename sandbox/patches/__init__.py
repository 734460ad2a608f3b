"""Small, tested patches that fill moto 5.2.5's gaps for the sandbox (see DESIGN.md "The sandbox").

Each module listed in ``PATCHES`` (named in this package, or by its full name) has an idempotent
``install()``. Importing this package imports nothing else
(a Lambda child process starts from ``clm_sandbox.patches.lambda_runtime``).
"""

from __future__ import annotations

import importlib
from typing import Any

PATCHES = (
    "lambda_invoke",
    "lambda_metrics",
    "lambda_logging",
    "events_targets",
    "events_cfn",
    "cfn_stepfunctions",
    "execution_names",
    "sfn_execution_status",
    "wait_scale",
    "codecommit",
    "cfn_lambda",
    "events_input_template",
    "cloudformation_api",
    "cloudformation_inplace_updates",
    "autoscaling_launch",
    "autoscaling_atomic",
    "ec2_timestamps",
    "cfn_s3_bucket",
    "cfn_iam_role",
    "cfn_no_value",
    "cfn_elbv2",
    "cfn_codecommit",
    "cfn_sns_topic_policy",
    "cfn_eks_cluster",
    "sfn_child_workflows",
    "sfn_map_errors",
    "sfn_parser_scopes",
    "dynamodb_atomic",
    "iam_listing",
    "clm_sandbox.iam.enforcement",  # IAM as AWS enforces it, for the roles of the functions the sandbox runs
    "clm_sandbox.iam.interpreter",  # Step Functions' calls signed with the execution's role
)


def apply_all() -> None:
    """Install every patch in ``PATCHES`` into moto (calling it again changes nothing)."""
    for name in PATCHES:
        patch_module(name).install()


def patch_module(name: str) -> Any:
    """The module of a ``PATCHES`` entry."""
    return importlib.import_module(name if "." in name else f"{__name__}.{name}")
