"""CLM's EC2-backed template values on moto: `amiID` (provisioner/template_test.go TestAmiID), instance types
(pkg/aws/instance_info_test.go TestInstanceInfo, TestSyntheticInstanceInfo, TestMemoryFraction) and how the
renderer gives them to templates (`values.InstanceInfo`, instanceTypeCPUQuantity/MemoryQuantity)."""

from __future__ import annotations

import dataclasses
from typing import Any

import boto3
import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.model import Cluster, NodePool
from clm.render.environment import TemplateEnvironment
from clm.render.inputs import RenderInputs
from clm.render.instance_types import MEBIBYTE, InstanceInfo, InstanceTypes
from clm.render.lookups import Ec2Lookups
from clm.render.renderer import Renderer

OWNER = "861068367966"  # the owner of Zalando's images in the corpus


def register_image(ec2: Any, name: str) -> str:
    """An AMI named `name` in moto's account (the test runs as the owner's account: MOTO_ACCOUNT_ID)."""
    instance = ec2.run_instances(ImageId="ami-12c6146b", MinCount=1, MaxCount=1)["Instances"][0]["InstanceId"]
    return ec2.create_image(InstanceId=instance, Name=name)["ImageId"]


class CountingEc2:
    """The EC2 client, counting calls by operation."""

    def __init__(self, client: Any):
        self.client, self.calls = client, []
        client.meta.events.register("before-call.ec2.*", lambda model, **_: self.calls.append(model.name))


@pytest.fixture
def ec2(aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> CountingEc2:
    monkeypatch.setenv("MOTO_ACCOUNT_ID", OWNER)
    return CountingEc2(aws.client("ec2"))


# TestAmiID: "basic", "multiple images" (and no image, as amiID's error path)
def test_ami_id_describes_the_one_image_of_that_name_and_owner(ec2: CountingEc2) -> None:
    image = register_image(ec2.client, "kubernetes-image-ami")
    lookups = Ec2Lookups(lambda: ec2.client)
    assert lookups.ami_id("kubernetes-image-ami", OWNER) == image
    assert lookups.ami_id("kubernetes-image-ami", OWNER) == image
    assert ec2.calls.count("DescribeImages") == 1  # cached for the run
    with pytest.raises(ValueError, match="no image found with name: kubernetes-image-ami and owner: 8085"):
        lookups.ami_id("kubernetes-image-ami", "8085")
    register_image(ec2.client, "twice")
    register_image(ec2.client, "twice")
    with pytest.raises(ValueError, match="more than one image found with name: twice"):
        lookups.ami_id("twice", OWNER)


def test_ami_id_in_a_template_and_without_ec2(ec2: CountingEc2) -> None:
    image = register_image(ec2.client, "zalando-ubuntu-etcd-production-v3.5.13-amd64-main-34")
    template = b'{{ ami_id("zalando-ubuntu-etcd-production-v3.5.13-amd64-main-34", "861068367966") }}'
    env = TemplateEnvironment({"foo.yaml": template}, Ec2Lookups(lambda: ec2.client))
    assert env.render("foo.yaml", {}) == image
    with pytest.raises(RenderError, match=r"foo\.yaml:1: error: the ec2 client is not available"):
        TemplateEnvironment({"foo.yaml": template}).render("foo.yaml", {})


# pkg/aws TestInstanceInfo (from DescribeInstanceTypes: memory in MiB, disks in decimal GB, CLM's architectures)
@pytest.mark.parametrize(
    ("name", "vcpu", "memory", "devices", "size", "architecture"),
    [
        ("m4.xlarge", 4, 17179869184, 0, 0, "amd64"),
        ("i3.4xlarge", 16, 130996502528, 2, 1900 * 1000**3, "amd64"),
        ("m6g.xlarge", 4, 17179869184, 0, 0, "arm64"),
    ],
)
def test_instance_info_from_ec2(
    ec2: CountingEc2, name: str, vcpu: int, memory: int, devices: int, size: int, architecture: str
) -> None:
    info = Ec2Lookups(lambda: ec2.client).prefetch([name]).info(name)
    assert (info.VCPU, info.Memory, info.InstanceStorageDevices, info.InstanceStorageDeviceSize) == (
        vcpu,
        memory,
        devices,
        size,
    )
    assert info.Architecture == architecture


def test_unknown_instance_types_are_left_out_and_fail_when_asked(ec2: CountingEc2) -> None:
    """TestInstanceInfoError: a batch with an unknown name is described name by name; asking for it fails."""
    types = Ec2Lookups(lambda: ec2.client).prefetch(["m5.large", "invalid.type"])
    assert "m5.large" in types
    with pytest.raises(ValueError, match=r"unknown instance type: invalid\.type"):
        types.info("invalid.type")


def _info(name: str, vcpu: int, memory: int, devices: int = 0, size: int = 0, arch: str = "amd64") -> InstanceInfo:
    return InstanceInfo(name, vcpu, memory, devices, size, arch)


TYPES = InstanceTypes(
    [
        _info("m4.xlarge", 4, 17179869184),
        _info("m5.xlarge", 4, 17179869184),
        _info("m5d.xlarge", 4, 17179869184, 1, 161061273600),
        _info("m5d.4xlarge", 16, 68719476736, 2, 322122547200),
        _info("c5d.xlarge", 4, 8589934592, 1, 107374182400),
        _info("r5d.large", 2, 17179869184, 1, 80530636800),
        _info("m6g.xlarge", 4, 17179869184, arch="arm64"),
    ]
)


# TestSyntheticInstanceInfo
@pytest.mark.parametrize(
    ("names", "expected"),
    [
        (["m4.xlarge"], _info("m4.xlarge", 4, 17179869184)),  # one type
        ([], None),  # no types
        (["invalid.type"], None),  # invalid type (only one)
        (["invalid.type", "m4.xlarge"], None),  # invalid type (first)
        (["m4.xlarge", "invalid.type"], None),  # invalid type (second)
        (["c5d.xlarge", "r5d.large"], _info("<multiple>", 2, 8589934592, 1, 75 * 1024 * MEBIBYTE)),
        (["m5d.xlarge", "m5d.4xlarge"], _info("<multiple>", 4, 17179869184, 1, 150 * 1024 * MEBIBYTE)),
        (["m5d.xlarge", "m5.xlarge"], _info("<multiple>", 4, 17179869184)),  # some with storage, some without
        (["m6g.xlarge"], _info("m6g.xlarge", 4, 17179869184, arch="arm64")),  # one type with arm64
        (["m5.xlarge", "m6g.xlarge"], _info("<multiple>", 4, 17179869184)),  # amd64 first
        (["m6g.xlarge", "m5.xlarge"], _info("<multiple>", 4, 17179869184, arch="arm64")),  # arm64 first
    ],
)
def test_synthetic_instance_info(names: list[str], expected: InstanceInfo | None) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="instance type"):
            TYPES.synthetic(names)
    else:
        assert TYPES.synthetic(names) == expected


# TestMemoryFraction, and AvailableStorage as worker-splitaz/stack.yaml calls it
def test_memory_fraction_and_available_storage() -> None:
    info = _info("<multiple>", 2, 8589934592, 1, 75 * 1024 * MEBIBYTE)
    assert info.MemoryFraction(50) == 4294967296
    assert info.AvailableStorage(0.9, 50, 858993459) == int(0.9 * 75 * 1024 * MEBIBYTE)
    assert _info("m5.xlarge", 4, 1).AvailableStorage(0.9, 50, 858993459) == 50 * 858993459


def _tree() -> ConfigTree:
    files = {
        "cluster/config-defaults.yaml": b'image: {{ ami_id("kuberuntu-1", "861068367966") }}\n',
        "cluster/stack.yaml": b"Resources: {}\n",
        "cluster/node-pools/worker-splitaz/stack.yaml": (
            b"Resources: {}\n"
            b"Metadata:\n"
            b"  image: {{ node_pool.config_items.image }}\n"
            b"  arch: {{ values.InstanceInfo.Architecture }}\n"
            b"  storage: {{ values.InstanceInfo.AvailableStorage(0.9, 50, 858993459) }}\n"
            b"  t2: {{ values.supports_t2_unlimited }}\n"
            b"  memory: {{ scale_quantity(instance_type_memory_quantity(node_pool.instance_types[0]), 0.5) }}\n"
        ),
    }
    return ConfigTree(version="test", files=files, source="test-tree")


def _cluster(*pools: NodePool) -> Cluster:
    return Cluster(
        "aws:123456789012:eu-central-1:kube-1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws",
        node_pools=list(pools),
    )  # fmt: skip


def test_the_renderer_gives_node_pools_their_instance_info(ec2: CountingEc2) -> None:
    image = register_image(ec2.client, "kuberuntu-1")
    ec2.calls.clear()
    pools = [
        NodePool("arm", "worker-splitaz", 1, 3, ["m6g.xlarge"]),
        NodePool("d", "worker-splitaz", 1, 3, ["m5d.xlarge"]),
    ]
    renderer = Renderer(_tree(), RenderInputs(lookups=Ec2Lookups(lambda: ec2.client)))
    rendered = renderer.render(_cluster(*pools))
    arm, local = (rendered.node_pool_stacks[name].template["Metadata"] for name in ("arm", "d"))
    assert arm == {"image": image, "arch": "arm64", "storage": 50 * 858993459, "t2": False, "memory": "8Gi"}
    assert local["storage"] == int(0.9 * 150 * 1000**3)
    once = ["DescribeImages", "DescribeInstanceTypes", "DescribeSubnets", "DescribeVpcs"]
    assert sorted(ec2.calls) == once  # one call each
    renderer.render(_cluster(*pools))
    assert len(ec2.calls) == len(once)  # a second cluster of the run: all cached


def test_a_pool_of_an_unknown_instance_type_fails_where_a_template_reads_its_info(ec2: CountingEc2) -> None:
    register_image(ec2.client, "kuberuntu-1")
    pool = NodePool("odd", "worker-splitaz", 1, 3, ["m5.large", "invalid.type"])
    with pytest.raises(RenderError, match=r"node-pools/worker-splitaz/stack.yaml:4: .*unknown instance type"):
        Renderer(_tree(), RenderInputs(lookups=Ec2Lookups(lambda: ec2.client))).render(_cluster(pool))
    with pytest.raises(RenderError, match="the ec2 client is not available"):
        Renderer(_tree()).render(_cluster(dataclasses.replace(pool, instance_types=["m5.large"])))


def test_images_and_instance_types_are_asked_only_when_a_template_needs_them(
    ec2: CountingEc2, example_tree, example_clusters
) -> None:
    """The example configuration reads no instance info nor image: rendering it with lookups describes only the
    network (once per VPC for the run, as CLM's Provision does)."""
    renderer = Renderer(example_tree, RenderInputs(lookups=Ec2Lookups(lambda: ec2.client)))
    for cluster in example_clusters:
        renderer.render(cluster)
    assert ec2.calls == ["DescribeVpcs", "DescribeSubnets"]
