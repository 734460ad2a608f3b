"""The translated corpus (Zalando's kubernetes-on-aws) through the whole renderer with CLM's values and functions
from EC2 on moto, for the two sample clusters of tests/corpus_samples.py (zalando-aws, zalando-eks): images by
name (amiID in config-defaults.yaml), instance types (values.InstanceInfo choosing each pool's image by
architecture), the VPC's zones and subnets (one auto scaling group per zone). Every stack and manifest renders,
every object has apiVersion, kind and metadata.name."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from clm.cli import run_history
from clm.errors import RenderError
from clm.render.artefacts import summary
from clm.render.manifests import split_manifests
from clm.render.renderer import RenderedCluster
from tests.corpus_samples import Samples, cfn_lint, migrated_files, samples_on_moto, stack_bodies
from tests.unit.test_migrate_corpus import CORPUS, IMAGES

# The corpus itself has a key twice in one mapping: kubectl and CLM (yaml.v2, non-strict) keep the last value;
# so does the renderer, with a warning naming file, line and key. z-karpenter renders with Karpenter pools only.
DUPLICATE_ENV = "cluster/manifests/cluster-lifecycle-controller/deployment.yaml:55: duplicate key 'env'"
# cfn-lint errors in Zalando's own templates, reviewed: (rule, resource) -> why it stays. Anything else fails.
_INGRESS_TAGS = (
    "Zalando's cluster.yaml tags AWS::EC2::SecurityGroupIngress, whose schema has no Tags property; the template "
    "is deployed as is in Zalando's production (the corpus's commit), CLM passes it to CloudFormation unchanged"
)
CFN_LINT_ALLOWED = {
    ("E3002", resource): _INGRESS_TAGS
    for resource in (  # noqa: SIM905
        "MasterKubeletToMasterKubeletSecurityGroup MasterSecurityGroupIngressFromFlannelToMaster "
        "MasterSecurityGroupIngressFromMasterFlannelToMaster MasterSecurityGroupIngressFromMaster "
        "MasterSecurityGroupIngressFromWorker MasterSecurityGroupIngressFromWorkerToMasterKubeletAndKubeProxy "
        "MasterSecurityGroupIngressFromWorkerToNodeMonitor MasterSecurityGroupIngressFromWorkerToSkipperMetrics "
        "WorkerSecurityGroupIngressFromMasterToFlannel WorkerSecurityGroupIngressFromMasterToKubelet "
        "WorkerSecurityGroupIngressFromWorkerToFlannel WorkerSecurityGroupIngressFromWorkerToWorkerKubeletAndKubeProxy "
        "WorkerSecurityGroupIngressFromWorkerToWorkerSkipperMetrics "
        "WorkerSecurityGroupIngressFromWorkerToWorkerSkipperTokeninfoMetrics "
        "WorkerSecurityGroupIngressFromWorkerToNodeMonitor EFSSecurityGroupIngressFromWorkerSecurityGroup"
    ).split()
}
EMPTY_KARPENTER_POOL = (  # Zalando's provisioners.yaml wraps itself in karpenter_pools_enabled, "false" here
    "Karpenter node pool 'karpenter': cluster/node-pools/worker-karpenter/provisioners.yaml renders no objects, "
    "nothing is applied for it"
)
DUPLICATE_DNS_POLICY = "cluster/manifests/z-karpenter/deployment.yaml:39: duplicate key 'dnsPolicy'"


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    if not CORPUS.is_dir():
        pytest.skip("the corpus (../shared/corpus/kubernetes-on-aws) is not here")
    return migrated_files(tmp_path_factory.mktemp("migrated"), CORPUS)


@pytest.fixture(scope="module")
def samples(corpus_files: dict[str, bytes]) -> Iterator[Samples]:
    with samples_on_moto(corpus_files) as result:
        yield result


@pytest.fixture(scope="module")
def rendered(samples: Samples) -> dict[str, RenderedCluster]:
    return samples.rendered


def manifest_files(files: dict[str, bytes]) -> list[str]:
    """The files of the components (folders under manifests/), as the renderer finds them."""
    return [name for name in files if name.startswith("cluster/manifests/") and name.count("/") > 2]


def test_the_corpus_renders_for_both_sample_clusters(samples: Samples) -> None:
    rendered, images = samples.rendered, samples.images
    aws, eks = rendered["zalando-aws"], rendered["zalando-eks"]

    assert aws.cluster.config_items["etcd_ami"] == images[IMAGES[0]]  # amiID in config-defaults.yaml
    listeners = [
        r["Properties"] for r in aws.cluster_stack.template["Resources"].values() if "Certificates" in r["Properties"]
    ]
    assert listeners and all(p["Certificates"] == [{"CertificateArn": samples.certificate}] for p in listeners)
    machine_image = {
        provider: {
            name: stack.template["Mappings"]["Images"]["eu-central-1"]["MachineImage"]
            for name, stack in result.node_pool_stacks.items()
        }
        for provider, result in rendered.items()
    }
    assert machine_image == {
        "zalando-aws": {"default-master": images[IMAGES[1]], "default-worker": images[IMAGES[1]],
                        "arm-worker": images[IMAGES[2]]},
        "zalando-eks": {"default-worker": images[IMAGES[1]], "arm-worker": images[IMAGES[2]]},
    }  # fmt: skip
    zones = {subnet["AvailabilityZone"] for subnet in samples.ec2.describe_subnets()["Subnets"]}
    for result in rendered.values():
        groups = [
            n
            for n in result.node_pool_stacks["default-worker"].template["Resources"]
            if n.startswith("AutoScalingGroup")
        ]
        assert len(groups) == len(zones)  # worker-splitaz: one group per zone of the VPC
        assert len(result.components) == 54
    assert aws.node_pool_manifests == {"karpenter": []}  # Karpenter off: provisioners.yaml renders nothing
    karpenter = {m.kind: m.body for m in eks.node_pool_manifests["karpenter"]}
    assert set(karpenter) == {"EC2NodeClass", "NodePool"}
    # CLM hands Karpenter the user data in plain text (encodeUserData false), naming the pool's files archive.
    user_data = karpenter["EC2NodeClass"]["spec"]["userData"]
    assert user_data.startswith("#cloud-config\n")
    archive = re.search(r"S3_CERTS_BUCKET=s3://cluster-lifecycle-manager-\d{12}-[a-z0-9-]+/(\S+)", user_data)
    assert archive and re.fullmatch(r"[a-z0-9-]+/worker/[0-9a-f]{128}\.userdata", archive[1]), user_data[:400]


def test_every_manifest_file_renders_and_every_object_has_its_identity(rendered, corpus_files) -> None:
    """Count rendered / total: the renderer renders every manifest file of each component or fails the cluster, so
    a rendering is all 250 files; each object has apiVersion, kind and metadata.name."""
    assert len(manifest_files(corpus_files)) == 250
    for result in rendered.values():
        objects = [m for c in result.components for m in c.manifests] + result.node_pool_manifests["karpenter"]
        assert all(m.body["apiVersion"] and m.kind and m.name for m in objects)
    assert {p: r.manifest_count for p, r in rendered.items()} == {"zalando-aws": 342, "zalando-eks": 361}


def test_a_duplicate_key_in_a_manifest_keeps_the_last_value_with_a_warning(rendered) -> None:
    """As kubectl and CLM (yaml.v2, non-strict), deliberately: the corpus works with CLM, so it renders here."""
    aws, eks = rendered["zalando-aws"], rendered["zalando-eks"]
    last = ": the last value is used, as kubectl does"
    assert aws.warnings == [EMPTY_KARPENTER_POOL, DUPLICATE_ENV + last, *role_warnings(aws)]
    assert eks.warnings == [DUPLICATE_ENV + last, DUPLICATE_DNS_POLICY + last, *role_warnings(eks)]
    [deployment] = [m for c in aws.components for m in c.manifests if m.file == DUPLICATE_ENV.split(":", maxsplit=1)[0]]
    [container] = deployment.body["spec"]["template"]["spec"]["containers"]
    assert container["env"] == [{"name": "AWS_REGION", "value": "eu-central-1"}]  # the second `env`
    assert summary(aws)["warnings"] == aws.warnings[:20] and summary(aws)["warning_count"] == len(aws.warnings)
    line, style = run_history._render(
        {}, summary(eks)
    )  # the render step's result, as `clm provision --follow` shows it
    assert (
        style == "yellow"
        and f"; {len(eks.warnings)} warning(s): cluster/manifests/cluster-lifecycle-controller/" in line
    )


def role_warnings(result: RenderedCluster) -> list[str]:
    """The rendering's warnings about roles and instance profiles without CLM's path or boundary."""
    return [warning for warning in result.warnings if ": AWS::IAM::" in warning]


def test_every_role_without_clms_path_or_boundary_is_named(rendered) -> None:
    """Zalando's roles have no permissions boundary: the ClusterStackRole would refuse to create or change any of
    them; each is named with its file and logical id (clm.render.bounded_roles), instance profiles without a path
    too."""
    for result in rendered.values():
        roles = {
            (stack.file, logical_id)
            for stack in result.stacks
            for logical_id, resource in stack.template["Resources"].items()
            if resource["Type"] == "AWS::IAM::Role"
        }
        named = {(w.split(": ", 1)[0], w.split(" ")[2]) for w in role_warnings(result) if "AWS::IAM::Role " in w}
        assert named == roles and len(roles) >= 5, (named, roles)
    assert {provider: len(role_warnings(result)) for provider, result in rendered.items()} == {
        "zalando-aws": 22,  # with the instance profiles without a path
        "zalando-eks": 23,
    }
    assert "cluster/cluster.yaml: AWS::IAM::Role WorkerIAMRole has no PermissionsBoundary: set `Path: " in "\n".join(
        role_warnings(rendered["zalando-aws"])
    )


def test_every_stack_passes_cfn_lint(rendered: dict[str, RenderedCluster]) -> None:
    """The pinned cfn-lint on every rendered stack of both samples: no error outside the reviewed CFN_LINT_ALLOWED
    (each allowed one is still found: the list stays exact); warnings are printed (-s), not failures."""
    errors, allowed, warnings = {}, set(), []
    for provider, result in rendered.items():
        bodies = {f"{provider} {name}": body for name, body in stack_bodies(result).items()}
        found = cfn_lint(bodies, result.cluster.region, CFN_LINT_ALLOWED)
        errors.update(found[0])
        allowed |= found[1]
        warnings += found[2]
    print("\n".join(warnings))
    assert errors == {}
    assert allowed == set(CFN_LINT_ALLOWED)
    assert {p: len(stack_bodies(r)) for p, r in rendered.items()} == {"zalando-aws": 4, "zalando-eks": 3}


def test_outside_a_rendering_a_duplicate_key_is_still_refused() -> None:
    """split_manifests without a warnings list (a caller with nowhere to report) refuses, as before."""
    with pytest.raises(RenderError, match=r"f\.yaml:3: rendered YAML is invalid: duplicate key 'a'"):
        split_manifests("kind: X\na: 1\na: 2\n", "f.yaml")


def test_a_key_overriding_a_merged_one_is_no_duplicate() -> None:
    """YAML merge keys (`<<`): a key set beside the merge overrides the merged one, as yaml.v2 does; no warning."""
    warnings: list[str] = []
    text = "apiVersion: v1\nkind: X\nmetadata: {name: x}\nbase: &b {k: 1, j: 2}\nover: {<<: *b, k: 3}\n"
    [manifest] = split_manifests(text, "f.yaml", warnings=warnings)
    assert manifest.body["over"] == {"k": 3, "j": 2} and warnings == []
