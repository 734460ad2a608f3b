"""``AWS::EKS::Cluster`` in moto's CloudFormation, as AWS creates it, with an API endpoint that works.

moto 5.2.5 skips the resource type, so a cluster stack's EKS cluster did not exist (only the stack role's calls were
judged). ``install()`` registers it: the cluster is created in moto's EKS backend with the template's ``Name`` (else
a generated one), ``KubernetesNetworkConfig`` and ``Tags``, plus the stack's tags (CloudFormation propagates them,
e.g. CLM's `kubernetes.io/cluster/<id>=owned`). While clm_sandbox.eks_endpoint is ``serving``, its endpoint and CA
are a front door to the session's control plane that accepts EKS IAM tokens for its name only; else moto's made-up
ones. `Ref` is its name; `Fn::GetAtt` gives `Arn`, `Endpoint`, `CertificateAuthorityData` and
`OpenIdConnectIssuerUrl`. Deleting the resource deletes the cluster and closes its door. A cluster whose name is
taken fails the resource, as on AWS (ResourceInUseException).
"""

from __future__ import annotations

import base64
from typing import Any

from moto.core.common_models import CloudFormationModel
from moto.eks.models import eks_backends

RESOURCE_TYPE = "AWS::EKS::Cluster"
_ATTRIBUTES = ("Arn", "Endpoint", "CertificateAuthorityData", "OpenIdConnectIssuerUrl")


class EksCluster(CloudFormationModel):
    """An EKS cluster created by CloudFormation (its state is the backend's)."""

    def __init__(self, cluster: Any):
        self.cluster = cluster

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @staticmethod
    def cloudformation_type() -> str:
        return RESOURCE_TYPE

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> EksCluster:
        from clm_sandbox.eks_endpoint import open_door

        properties = cloudformation_json.get("Properties") or {}
        name = properties.get("Name") or resource_name
        tags = {**_stack_tags(account_id, region_name, kwargs.get("StackId", "")), **_tags(properties.get("Tags"))}
        cluster = eks_backends[account_id][region_name].create_cluster(
            name=name,
            role_arn=properties.get("RoleArn", ""),
            resources_vpc_config=properties.get("ResourcesVpcConfig") or {},
            version=properties.get("Version"),
            kubernetes_network_config=_network(properties.get("KubernetesNetworkConfig")),
            tags=tags,
        )
        door = open_door(account_id, region_name, name)
        if door is not None:
            cluster.endpoint = door.url
            cluster.certificate_authority = {"data": base64.b64encode(door.ca_pem).decode()}
        return cls(cluster)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        from clm_sandbox.eks_endpoint import close_door

        backend = eks_backends[account_id][region_name]
        if resource_name in backend.clusters:
            backend.delete_cluster(resource_name)
        close_door(account_id, region_name, resource_name)

    @property
    def physical_resource_id(self) -> str:
        return str(self.cluster.name)

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in _ATTRIBUTES

    def get_cfn_attribute(self, attribute_name: str) -> str:
        values = {
            "Arn": self.cluster.arn,
            "Endpoint": self.cluster.endpoint,
            "CertificateAuthorityData": self.cluster.certificate_authority["data"],
            "OpenIdConnectIssuerUrl": self.cluster.identity["oidc"]["issuer"],
        }
        return str(values[attribute_name])


def _network(config: Any) -> dict[str, str] | None:
    """The template's KubernetesNetworkConfig in the API's shape (None: EKS's default)."""
    if not isinstance(config, dict):
        return None
    names = {"ServiceIpv4Cidr": "serviceIpv4Cidr", "IpFamily": "ipFamily"}
    return {names[key]: str(value) for key, value in config.items() if key in names} or None


def _tags(tags: Any) -> dict[str, str]:
    """The template's Tags (EKS's are a map; a list of Key/Value is accepted too)."""
    if isinstance(tags, dict):
        return {str(k): str(v) for k, v in tags.items()}
    if isinstance(tags, list):
        return {str(t["Key"]): str(t["Value"]) for t in tags if isinstance(t, dict) and "Key" in t}
    return {}


def _stack_tags(account_id: str, region_name: str, stack_id: str) -> dict[str, str]:
    from moto.cloudformation.models import cloudformation_backends

    stack = cloudformation_backends[account_id][region_name].stacks.get(stack_id)
    return dict(stack.tags) if stack is not None and stack.tags else {}


def install() -> None:
    """Make moto's CloudFormation see the type (its model lists are cached on first use)."""
    from moto.cloudformation import parsing

    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()
