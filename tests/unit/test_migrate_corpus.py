"""`clm migrate` on Zalando's production configuration (../shared/corpus/kubernetes-on-aws): every file is
translated, nothing is left marked, every translation compiles in the renderer, and lines are kept."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from clm.migrate.tree import migrate_tree, report_lines
from clm.render.environment import TemplateEnvironment
from clm.render.lookups import Ec2Lookups
from tests.unit.test_render_clm_functions import CERTIFICATE, PRIVATE_KEY
from tests.unit.test_render_lookups import OWNER, register_image

CORPUS = Path(__file__).parents[3] / "shared" / "corpus" / "kubernetes-on-aws"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/kubernetes-on-aws")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    if not CORPUS.is_dir():
        pytest.skip("the corpus (../shared/corpus/kubernetes-on-aws) is not here")
    dest = tmp_path_factory.mktemp("migrated")
    return dest, migrate_tree(CORPUS, dest)


def test_every_corpus_file_is_translated_and_none_is_marked(migrated: tuple[Path, object]) -> None:
    _, report = migrated
    print("\n".join(report_lines(report)))  # the figures: run with -s to see them
    assert len(report.translated) >= 260
    assert report.errors == []
    assert [str(problem) for problem in report.marked] == []


def test_every_translation_compiles_and_keeps_its_lines(migrated: tuple[Path, object]) -> None:
    dest, report = migrated
    files = {name: (dest / name).read_bytes() for name in report.translated}
    env = TemplateEnvironment(files)
    moved = []
    for name, text in files.items():
        env._env.get_template(name)  # a Jinja syntax error would raise here
        original = (CORPUS / name).read_bytes()
        if b"clm migrate: template" in text:  # a macro moved to the top: lines after it shift uniformly
            moved.append(name)
            continue
        assert text.count(b"\n") == original.count(b"\n"), name
    assert moved == ["cluster/manifests/skipper/deployment.yaml"]


def test_the_report_names_what_the_renderer_lacks(migrated: tuple[Path, object]) -> None:
    _, report = migrated
    assert report.functions == {}  # every function the corpus calls is the renderer's
    assert report.fields == {}  # node_pool.taints, karpenter_requirements: clm.pool_fields


# Config items that Zalando's registry sets per cluster (secrets, certificates, endpoints): not in config-defaults.
REGISTRY_ITEMS = (  # noqa: SIM905
    "vpc_id ca_cert_decompressed skipper_ingress_encryption_key emergency_access_service_opsgenie_api_key "
    "etcd_s3_backup_bucket skipper_oauth2_redirect_uri_path etcd_client_ca_cert etcd_endpoints skipper_oauth2_auth_url "
    "vpa_webhook_cert worker_cert zmon_root_account_role apiserver_etcd_prefix etcd_client_server_cert "
    "skipper_oauth2_token_url vpa_webhook_key worker_key apiserver_business_partner_ids apiserver_cert_decompressed "
    "etcd_client_server_key skipper_oauth2_cookie_name apiserver_key_decompressed proxy_client_cert proxy_client_key "
    "kubelet_client_key kubelet_client_cert admission_controller_key admission_controller_cert "
    "service_account_private_key"
).split()
# Registry items that CLM's functions parse: PEM certificates and keys (base64), as the registry holds them.
PEM_ITEMS = {
    "etcd_client_ca_cert": base64.b64encode(CERTIFICATE.encode()).decode(),
    "etcd_client_server_cert": base64.b64encode(CERTIFICATE.encode()).decode(),
    "service_account_private_key": base64.b64encode(PRIVATE_KEY.encode()).decode(),
    "etcd_endpoints": "https://etcd-server.etcd.example.org:2379",
}
# The images config-defaults.yaml names (amiID), registered on moto in their owner's account.
IMAGES = (
    "zalando-ubuntu-etcd-production-v3.5.13-amd64-main-34",
    "zalando-ubuntu-jammy-22.04-kubernetes-production-v1.31.0-amd64-master-347",
    "zalando-ubuntu-jammy-22.04-kubernetes-production-v1.31.0-arm64-master-347",
)


def test_the_translated_corpus_renders_for_a_cluster(
    migrated: tuple[Path, object], aws: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every translated template renders with CLM's renderer for a cluster whose items come from the translated
    config-defaults.yaml plus the registry's own, images and instance types from EC2 (moto)."""
    import dataclasses

    import yaml

    from clm.model import Cluster, NodePool
    from clm.render.origins import registry_view
    from clm.yamlutil import scalar_text

    dest, report = migrated
    monkeypatch.setenv("MOTO_ACCOUNT_ID", OWNER)
    ec2 = aws.client("ec2")
    for image in IMAGES:
        register_image(ec2, image)
    lookups = Ec2Lookups(lambda: ec2)
    env = TemplateEnvironment({name: (dest / name).read_bytes() for name in report.translated}, lookups)
    pool = NodePool("default-worker", "worker-splitaz", 1, 3, ["m5.large"])
    cluster = Cluster(
        "aws:123456789012:eu-central-1:kube-1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws",
        alias="kube-1", environment="production", node_pools=[pool],
    )  # fmt: skip
    values = {
        "availability_zones": ["eu-central-1a"],
        "subnets": {"eu-central-1a": "subnet-1"},
        "hosted_zone": "example.org",
        "vpc_ipv4_cidr": "172.31.0.0/16",
        "InstanceInfo": lookups.prefetch(["m5.large"]).synthetic(["m5.large"]),
        "UserData": "user-data",
        "S3GeneratedFilesPath": "s3://bucket/files",
        "ClusterStackOutputs": {"EtcdEncryptionKey": "key"},
        "load_balancer_certificate": "arn:cert",
        "supports_t2_unlimited": True,
        "etcd_kms_key_arn": "arn:key",
    }
    defaults = yaml.safe_load(env.render("cluster/config-defaults.yaml", {"cluster": registry_view(cluster)}))
    items = {key: scalar_text(value) for key, value in defaults.items()}
    items.update(dict.fromkeys(REGISTRY_ITEMS, "eA=="))
    items.update(PEM_ITEMS)
    cluster = dataclasses.replace(
        cluster, config_items=items, node_pools=[dataclasses.replace(pool, config_items=dict(items))]
    )
    view = registry_view(cluster)
    context = {"cluster": view, "node_pool": view.node_pools[0], "values": values}
    rendered = [env.render(name, context) for name in report.translated if name != "cluster/config-defaults.yaml"]
    assert len(rendered) == len(report.translated) - 1
    assert "kube-1" in env.render("cluster/manifests/infrastructure-configs/cluster-config.yaml", context)
