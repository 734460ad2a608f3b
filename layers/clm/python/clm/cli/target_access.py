"""The CLI's AWS in a cluster's account and region (its target), for read-only commands such as `clm plan`: the
caller's own session when the cluster is the caller's, else a profile of that account (`--target-profile`) or a role
there assumed with the caller's credentials (`--target-role`); checked to be in the cluster's account."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import click

from clm.cli.context import CliContext
from clm.cli.errors import CliError
from clm.targets import Target

F = TypeVar("F", bound=Callable[..., Any])
SESSION_NAME = "clm-cli"


def target_options(function: F) -> F:
    """Add `--target-profile` and `--target-role`: how the CLI reaches a cluster in another account or region."""
    function = click.option(
        "--target-role",
        metavar="ARN",
        help="For a cluster in another account: a role there (read-only suffices) the caller may assume.",
    )(function)
    return click.option(
        "--target-profile",
        metavar="PROFILE",
        help="For a cluster in another account: an AWS profile of that account (e.g. an SSO profile).",
    )(function)


@dataclass
class TargetContext(CliContext):
    """A CliContext in `target`, its session opened on first use (a template error is shown before any call)."""

    target: Target = field(default_factory=lambda: Target("", ""))
    role_arn: str | None = None
    caller: CliContext | None = None
    cluster_id: str = ""

    def client(self, service: str) -> Any:
        if self._session is None:
            self._session = self._open()
        return super().client(service)

    def _open(self) -> Any:
        import boto3

        if self.role_arn and self.caller is not None:
            answer = self.caller.client("sts").assume_role(RoleArn=self.role_arn, RoleSessionName=SESSION_NAME)
            credentials = answer["Credentials"]
            session = boto3.Session(
                aws_access_key_id=credentials["AccessKeyId"],
                aws_secret_access_key=credentials["SecretAccessKey"],
                aws_session_token=credentials["SessionToken"],
                region_name=self.target.region,
            )
        else:
            session = boto3.Session(profile_name=self.profile, region_name=self.target.region)
        self._session = session
        landed = super().client("sts").get_caller_identity()["Account"]
        if landed != self.target.account:
            self._session = None  # every later call is refused too
            how = f"role {self.role_arn}" if self.role_arn else f"profile {self.profile}"
            raise CliError(f"cluster {self.cluster_id}: {how} is in account {landed}, not the cluster's {self.target}")
        return session


def in_target(cli: CliContext, cluster_id: str, target: Target, profile: str | None, role: str | None) -> CliContext:
    """`cli` itself when `target` is the caller's account and region, else a TargetContext there (the caller's own
    credentials in another region of its account); CliError naming the options when the cluster is in another account
    and neither is given."""
    home = cli.placement()
    if target == home:
        return cli
    if profile is None and role is None and target.account == home.account:  # another region: the caller's own
        profile = cli.profile
    elif profile is None and role is None:
        raise CliError(
            f"cluster {cluster_id} is in {target}, not the caller's ({home}): give --target-profile (a profile of "
            "that account) or --target-role (a role there you may assume); nothing was changed"
        )
    return TargetContext(
        profile=profile,
        region=target.region,
        endpoint_url=cli.endpoint_url,
        table=cli.table,
        output=cli.output,
        target=target,
        role_arn=role,
        caller=cli,
        cluster_id=cluster_id,
    )
