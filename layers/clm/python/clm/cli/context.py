"""What every command needs: AWS clients (real account or sandbox endpoint) and the output format."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clm.cli.aws_errors import record_failed_calls

if TYPE_CHECKING:
    from clm.targets import Target

DEFAULT_TABLE = "clm-registry"


@dataclass
class CliContext:
    """Options shared by all commands; clients are created on first use."""

    profile: str | None = None
    region: str | None = None
    endpoint_url: str | None = None
    table: str = DEFAULT_TABLE
    output: str = "table"
    _session: Any = field(default=None, repr=False)

    def client(self, service: str) -> Any:
        """A boto3 client for `service`, pointed at the sandbox when an endpoint is set; its failed calls name
        the resource and where the CLI looked (clm.cli.aws_errors)."""
        import boto3

        if self._session is None:
            self._session = boto3.Session(profile_name=self.profile, region_name=self.region)
        endpoint = self.endpoint_url or os.environ.get("AWS_ENDPOINT_URL") or None
        return record_failed_calls(self._session.client(service, endpoint_url=endpoint))

    def registry(self) -> Any:
        """The DynamoDB registry named by --table."""
        from clm.registry.dynamodb import DynamoRegistry

        return DynamoRegistry(self.client("dynamodb"), self.table)

    def placement(self) -> Target:
        """The caller's account (STS GetCallerIdentity of the session) and the region its registry is in (--region):
        where CLM acts on the clusters of this registry."""
        from clm.workflow.placement import of_caller

        return of_caller(self.client("sts"), self.client("dynamodb").meta.region_name)
