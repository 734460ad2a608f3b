"""The EC2 facts CLM's templates ask for, looked up for a run and cached: images by name and owner (`amiID`,
DescribeImages), instance types (`.Values.InstanceInfo`, `instanceTypeCPUQuantity`, DescribeInstanceTypes) and the
cluster's VPC and subnets (`.Values.subnets`, `lb_subnets`, `vpc_ipv6_cidrs`...: DescribeVpcs, DescribeSubnets).

Images and instance types are asked only when a template needs them: the first read of a pool's
`values.InstanceInfo` (or `etcd_instance_type_info`) describes every instance type of the cluster in one call
(:class:`LazyInstanceInfo`), an
image is described the first time a template names it; the network is described once per cluster before
rendering, as CLM does. Answers are kept for the run. The run function's role may make these calls
(infra.cluster_permissions.grant_lookups); none supports resource-level permissions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from clm.render.instance_types import InstanceTypes, from_describe

LOOKUP_FUNCTIONS = ("ami_id", "instance_type_cpu_quantity", "instance_type_memory_quantity")
DESCRIBE_TYPES_BATCH = 100  # DescribeInstanceTypes' InstanceTypes filter takes at most 100 names


class Ec2Lookups:
    """EC2 lookups for the renderer; `ec2` is a factory of the EC2 client, called on the first lookup only."""

    def __init__(self, ec2: Callable[[], Any]):
        self._factory = ec2
        self._client: Any = None
        self._images: dict[tuple[str, str], str] = {}
        self.instance_types = InstanceTypes()
        self._described: set[str] = set()
        self._networks: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}

    def _ec2(self) -> Any:
        if self._client is None:
            self._client = self._factory()
        return self._client

    def ami_id(self, name: str, owner: str) -> str:
        """CLM's amiID: the one image of that name and owner account; ValueError if none or several."""
        key = (str(name), str(owner))
        if key not in self._images:
            filters = [{"Name": "name", "Values": [key[0]]}, {"Name": "owner-id", "Values": [key[1]]}]
            try:
                images = self._ec2().describe_images(Filters=filters)["Images"]
            except Exception as exc:  # botocore's ClientError and connection errors alike
                raise ValueError(f"failed to describe image with name {name} and owner {owner}: {exc}") from None
            if len(images) > 1:
                raise ValueError(f"more than one image found with name: {name} and owner: {owner}")
            if not images:
                raise ValueError(f"no image found with name: {name} and owner: {owner}")
            self._images[key] = images[0]["ImageId"]
        return self._images[key]

    def network(self, vpc_id: str | None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The VPC `vpc_id` (the account's default VPC if None) and its subnets as EC2 describes them, as CLM's
        Provision reads them (DescribeVpcs, DescribeSubnets)."""
        key = vpc_id or ""
        if key not in self._networks:
            ec2 = self._ec2()
            if vpc_id:
                vpcs = ec2.describe_vpcs(VpcIds=[vpc_id])["Vpcs"]
            else:
                vpcs = ec2.describe_vpcs(Filters=[{"Name": "isDefault", "Values": ["true"]}])["Vpcs"]
            if len(vpcs) != 1:
                raise ValueError(f"found {len(vpcs)} default VPCs, expected 1 (set the config item vpc_id)")
            pages = ec2.get_paginator("describe_subnets").paginate(
                Filters=[{"Name": "vpc-id", "Values": [vpcs[0]["VpcId"]]}]
            )
            self._networks[key] = (vpcs[0], [subnet for page in pages for subnet in page["Subnets"]])
        return self._networks[key]

    def prefetch(self, names: Iterable[str]) -> InstanceTypes:
        """Describe the instance types not described yet (unknown names are left out: a template that asks for
        one gets `unknown instance type`, as in CLM)."""
        wanted = sorted({str(name) for name in names} - self._described)
        for start in range(0, len(wanted), DESCRIBE_TYPES_BATCH):
            self._describe(wanted[start : start + DESCRIBE_TYPES_BATCH])
        return self.instance_types

    def _describe(self, names: list[str]) -> None:
        from botocore.exceptions import ClientError

        try:
            pages = self._ec2().get_paginator("describe_instance_types").paginate(InstanceTypes=names)
            infos = [info for page in pages for info in page["InstanceTypes"]]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "InvalidInstanceType":
                raise
            if len(names) > 1:  # one unknown name refuses the batch: describe them one by one
                for name in names:
                    self._describe([name])
            self._described.update(names)  # an unknown name is left out
            return
        self.instance_types.add(found for found in map(from_describe, infos) if found is not None)
        self._described.update(names)


class LazyInstanceInfo:
    """`values.InstanceInfo` of a node pool (CLM's SyntheticInstanceInfo of its instance types) or
    `values.etcd_instance_type_info`, described the first time a template reads it, together with every type of the
    cluster (one EC2 call for the run); a failure or an unknown type fails the template's line, naming `what`
    (`node pool 'x'`)."""

    def __init__(self, lookups: Ec2Lookups, what: str, types: list[str], cluster_types: Iterable[str]):
        self._lookups, self._what, self._types, self._cluster_types = lookups, what, types, list(cluster_types)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            info = self._lookups.prefetch([*self._cluster_types, *self._types]).synthetic(self._types)
        except Exception as exc:  # an unknown type, or EC2 refused or unreachable
            raise ValueError(f"{self._what}: {exc}") from None
        return getattr(info, name)


def template_functions(lookups: Ec2Lookups | None) -> dict[str, Callable[..., str]]:
    """CLM's functions that need EC2 (`ami_id`, `instance_type_cpu_quantity`, `instance_type_memory_quantity`);
    without lookups they fail as CLM's do without an EC2 client."""

    def unavailable(*_: Any) -> str:
        raise ValueError("the ec2 client is not available")

    if lookups is None:
        return dict.fromkeys(LOOKUP_FUNCTIONS, unavailable)

    def cpu(name: str) -> str:
        return lookups.prefetch([name]).cpu_quantity(name)

    def memory(name: str) -> str:
        return lookups.prefetch([name]).memory_quantity(name)

    return {"ami_id": lookups.ami_id, "instance_type_cpu_quantity": cpu, "instance_type_memory_quantity": memory}
