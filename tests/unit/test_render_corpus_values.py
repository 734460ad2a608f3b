"""The translated corpus (Zalando's kubernetes-on-aws) through the whole renderer with CLM's values and functions
from EC2 on moto: images by name (amiID in config-defaults.yaml), instance types (values.InstanceInfo choosing each
pool's image by architecture), the VPC's zones and subnets (one auto scaling group per zone)."""

from __future__ import annotations

import base64

import boto3
import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.migrate.tree import migrate_tree
from clm.model import Cluster, NodePool
from clm.render.lookups import Ec2Lookups
from clm.render.renderer import Renderer
from tests.unit.test_migrate_corpus import CORPUS, IMAGES, REGISTRY_ITEMS
from tests.unit.test_render_clm_functions import CERTIFICATE, PRIVATE_KEY
from tests.unit.test_render_lookups import OWNER, register_image

# The corpus itself has `env:` twice in one container (kubectl keeps the last); the renderer refuses it.
DUPLICATE_KEY = "cluster/manifests/cluster-lifecycle-controller/deployment.yaml"
# Values CLM computes that the renderer does not yet (ACM, KMS, the cluster stack, the node bootstrap files).
NOT_COMPUTED = {
    "load_balancer_certificate": "arn:aws:acm:eu-central-1:123456789012:certificate/c",
    "etcd_kms_key_arn": "arn:aws:kms:eu-central-1:123456789012:key/k",
    "ClusterStackOutputs": {"EtcdEncryptionKey": "k"},
    "UserData": "user-data",
    "S3GeneratedFilesPath": "s3://bucket/files",
}


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    if not CORPUS.is_dir():
        pytest.skip("the corpus (../shared/corpus/kubernetes-on-aws) is not here")
    dest = tmp_path_factory.mktemp("migrated")
    report = migrate_tree(CORPUS, dest)
    return {name: (dest / name).read_bytes() for name in report.translated}


def test_the_corpus_renders_with_clms_values_from_ec2(
    corpus_files: dict[str, bytes], aws: boto3.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MOTO_ACCOUNT_ID", OWNER)
    ec2 = aws.client("ec2")
    images = {name: register_image(ec2, name) for name in IMAGES}
    [vpc] = ec2.describe_vpcs()["Vpcs"]
    zones = sorted({s["AvailabilityZone"] for s in ec2.describe_subnets()["Subnets"]})
    items = dict.fromkeys(REGISTRY_ITEMS, "eA==")
    items.update(
        vpc_id=vpc["VpcId"],
        etcd_client_ca_cert=base64.b64encode(CERTIFICATE.encode()).decode(),
        etcd_client_server_cert=base64.b64encode(CERTIFICATE.encode()).decode(),
        service_account_private_key=base64.b64encode(PRIVATE_KEY.encode()).decode(),
        etcd_endpoints="https://etcd-server.etcd.example.org:2379",
    )
    pools = [
        NodePool("default-master", "master-default", 2, 2, ["m5.large"]),
        NodePool("default-worker", "worker-splitaz", 3, 9, ["m5.large", "m5.xlarge"]),
        NodePool("arm-worker", "worker-combined", 1, 3, ["m6g.large"]),
        NodePool("karpenter", "worker-karpenter", 0, 10, ["default-for-karpenter"]),
    ]
    cluster = Cluster(
        "aws:123456789012:eu-central-1:kube-1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws",
        alias="kube-1", environment="production", api_server_url="https://kube-1.example.org",
        config_items=items, node_pools=pools,
    )  # fmt: skip
    lookups = Ec2Lookups(lambda: ec2)
    tree = ConfigTree(version="v", files=corpus_files, source="corpus")
    with pytest.raises(RenderError, match=f"{DUPLICATE_KEY}:55: rendered YAML is invalid: duplicate key 'env'"):
        Renderer(tree, lookups=lookups).render(cluster, NOT_COMPUTED)
    files = {name: text for name, text in corpus_files.items() if name != DUPLICATE_KEY}
    rendered = Renderer(ConfigTree(version="v", files=files, source="corpus"), lookups=lookups).render(
        cluster, NOT_COMPUTED
    )

    assert rendered.cluster.config_items["etcd_ami"] == images[IMAGES[0]]  # amiID in config-defaults.yaml
    stacks = {name: stack.template for name, stack in rendered.node_pool_stacks.items()}
    assert sorted(stacks) == ["arm-worker", "default-master", "default-worker"]
    machine_image = {
        name: template["Mappings"]["Images"]["eu-central-1"]["MachineImage"] for name, template in stacks.items()
    }
    assert machine_image == {
        "default-master": images[IMAGES[1]],
        "default-worker": images[IMAGES[1]],
        "arm-worker": images[IMAGES[2]],
    }
    groups = [name for name in stacks["default-worker"]["Resources"] if name.startswith("AutoScalingGroup")]
    assert len(groups) == len(zones)  # worker-splitaz: one group per zone of the VPC
    assert rendered.manifest_count > 300 and len(rendered.components) == 54
    assert rendered.node_pool_manifests == {"karpenter": []}  # its objects only with karpenter_pools_enabled
