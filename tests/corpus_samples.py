"""Sample clusters of Zalando's registry format for the translated corpus (../shared/corpus/kubernetes-on-aws),
rendered with CLM's values from EC2 (moto): one per provider CLM supports, shared by unit and integration tests
and bench/render.py.

- zalando-aws: CLM manages masters and etcd; a pool of each profile (master-default, worker-splitaz,
  worker-combined on arm64, worker-karpenter), Karpenter off (config-defaults.yaml's default).
- zalando-eks: CLM's ZalandoEKSProvisioner manages neither master pools nor the etcd stack (EKS is the control
  plane), so no master pool; the registry holds what CLM's EKS creation hook writes back (eks_endpoint,
  eks_certificate_authority_data, eks_oidc_issuer_url); Karpenter pools on, so provisioners.yaml and the
  z-karpenter component render too. The corpus (2024-10) does not branch on the provider itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

import boto3
from moto import mock_aws

from clm.config.tree import ConfigTree
from clm.migrate.tree import migrate_tree
from clm.model import Cluster, NodePool
from clm.render.account_lookups import AccountLookups
from clm.render.inputs import RenderInputs
from clm.render.lookups import Ec2Lookups
from clm.render.renderer import RenderedCluster, Renderer
from tests.unit.test_migrate_corpus import IMAGES, PEM_ITEMS, REGISTRY_ITEMS
from tests.unit.test_render_lookups import OWNER, register_image

# Values CLM computes that the renderer does not yet (the cluster stack's outputs, the node bootstrap files).
NOT_COMPUTED: dict[str, Any] = {
    "ClusterStackOutputs": {"EtcdEncryptionKey": "k"},
    "UserData": "user-data",
    "S3GeneratedFilesPath": "s3://bucket/files",
}
ACCOUNT = "123456789012"
REGION = "eu-central-1"
IMAGE_OWNER = OWNER
# What CLM's EKS creation hook writes to the registry from DescribeCluster (provisioner/zalando_eks.go).
EKS_ITEMS = {
    "eks_endpoint": "https://0123456789ABCDEF0123456789ABCDEF.gr7.eu-central-1.eks.amazonaws.com",
    "eks_certificate_authority_data": PEM_ITEMS["etcd_client_ca_cert"],
    "eks_oidc_issuer_url": "https://oidc.eks.eu-central-1.amazonaws.com/id/0123456789ABCDEF0123456789ABCDEF",
    "karpenter_pools_enabled": "true",
}
WORKER_POOLS = (
    NodePool("default-worker", "worker-splitaz", 3, 9, ["m5.large", "m5.xlarge"]),
    NodePool("arm-worker", "worker-combined", 1, 3, ["m6g.large"]),
    NodePool("karpenter", "worker-karpenter", 0, 10, ["default-for-karpenter"]),
)
MASTER_POOL = NodePool("default-master", "master-default", 2, 2, ["m5.large"])


def migrated_files(dest: Path, corpus: Path) -> dict[str, bytes]:
    """`clm migrate` of the corpus into `dest`: translated path -> text, links read through (as an upload of the
    tree to S3 reads them)."""
    report = migrate_tree(corpus, dest)
    return {name: (dest / name).read_bytes() for name in report.translated + report.linked}


def register_images(ec2: Any) -> dict[str, str]:
    """The images config-defaults.yaml names, registered on moto in their owner's account (the caller runs moto as
    IMAGE_OWNER: MOTO_ACCOUNT_ID): name -> image id."""
    return {name: register_image(ec2, name) for name in IMAGES}


def _cluster(name: str, provider: str, items: dict[str, str], pools: list[NodePool]) -> Cluster:
    return Cluster(
        f"aws:{ACCOUNT}:{REGION}:{name}", name, f"aws:{ACCOUNT}", REGION, provider,
        alias=name, environment="production", api_server_url=f"https://{name}.example.org",
        config_items=items, node_pools=pools,
    )  # fmt: skip


def sample_clusters(ec2: Any) -> dict[str, Cluster]:
    """The zalando-aws and zalando-eks samples (by provider), in the default VPC of moto's `ec2`."""
    [vpc] = ec2.describe_vpcs()["Vpcs"]
    items = dict.fromkeys(REGISTRY_ITEMS, "eA==") | PEM_ITEMS | {"vpc_id": vpc["VpcId"]}
    return {
        "zalando-aws": _cluster("kube-1", "zalando-aws", items, [MASTER_POOL, *WORKER_POOLS]),
        "zalando-eks": _cluster("kube-eks-1", "zalando-eks", items | EKS_ITEMS, list(WORKER_POOLS)),
    }


def sample_renderer(files: dict[str, bytes], ec2: Any) -> Renderer:
    """A renderer of the translated corpus whose lookups ask `ec2` and moto's ACM and KMS in its region."""
    tree = ConfigTree(version="v", files=files, source="corpus")
    account = AccountLookups(lambda: boto3.client("acm", region_name=REGION), lambda: boto3.client("kms", REGION))
    return Renderer(tree, RenderInputs(lookups=Ec2Lookups(lambda: ec2), account=account))


def register_account_values() -> tuple[str, str]:
    """An issued ACM certificate for the samples' API servers (*.example.org) and CLM's etcd key behind
    alias/etcd-cluster, on moto: their ARNs."""
    acm, kms = boto3.client("acm", region_name=REGION), boto3.client("kms", region_name=REGION)
    authority = f"arn:aws:acm-pca:{REGION}:{ACCOUNT}:certificate-authority/samples"  # moto issues these at once
    certificate = acm.request_certificate(DomainName="*.example.org", CertificateAuthorityArn=authority)
    key = kms.create_key()["KeyMetadata"]
    kms.create_alias(AliasName="alias/etcd-cluster", TargetKeyId=key["KeyId"])
    return certificate["CertificateArn"], key["Arn"]


def render_samples(files: dict[str, bytes], ec2: Any) -> dict[str, RenderedCluster]:
    """Every sample cluster rendered from the translated corpus with one renderer, by provider."""
    renderer = sample_renderer(files, ec2)
    return {provider: renderer.render(cluster, NOT_COMPUTED) for provider, cluster in sample_clusters(ec2).items()}


def stack_bodies(rendered: RenderedCluster) -> dict[str, str]:
    """Every stack body of a rendering, by a readable name."""
    bodies = {"cluster stack": rendered.cluster_stack.body}
    bodies.update({f"node pool {name}": stack.body for name, stack in sorted(rendered.node_pool_stacks.items())})
    return bodies


def cfn_lint(
    bodies: dict[str, str], region: str, reviewed: dict[tuple[str, str], str]
) -> tuple[dict[str, str], set[tuple[str, str]], list[str]]:
    """The pinned cfn-lint on each named template: the errors outside `reviewed` ((rule, resource) -> why), the
    reviewed ones found, and the warnings, each located as `<name> line <n>: <rule> <resource>`."""
    from cfnlint.api import lint
    from cfnlint.core import get_rules

    rules = get_rules([], [], [])
    errors, allowed, warnings = {}, set(), []
    for name, body in bodies.items():
        for match in lint(body, rules=rules, regions=[region]):
            resource = match.path[1] if len(match.path) > 1 and match.path[0] == "Resources" else ""
            where = f"{name} line {match.linenumber}: {match.rule.id} {resource}"
            if not match.rule.id.startswith("E"):
                warnings.append(f"{where}: {match.message[:160]}")
            elif (match.rule.id, resource) in reviewed:
                allowed.add((match.rule.id, resource))
            else:
                errors[where] = match.message
    return errors, allowed, warnings


@dataclass(frozen=True)
class Samples:
    """The samples rendered on in-process moto: its EC2 client, the images registered (name -> id), the renderings,
    the certificate and etcd key the renderings name."""

    ec2: Any
    images: dict[str, str]
    rendered: dict[str, RenderedCluster]
    certificate: str  # the ACM certificate's ARN
    etcd_key: str  # the etcd KMS key's ARN


@contextmanager
def samples_on_moto(files: dict[str, bytes]) -> Iterator[Samples]:
    """In-process moto (fake credentials, running as the images' owner) with the images registered and both samples
    rendered from `files`; the environment is restored after."""
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "MOTO_ACCOUNT_ID": IMAGE_OWNER}
    with mock.patch.dict(os.environ, env), mock_aws():
        os.environ.pop("AWS_ENDPOINT_URL", None)
        ec2 = boto3.client("ec2", region_name=REGION)
        images = register_images(ec2)
        certificate, etcd_key = register_account_values()
        yield Samples(ec2, images, render_samples(files, ec2), certificate, etcd_key)
