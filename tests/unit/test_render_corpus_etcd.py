"""The corpus's etcd stack (Zalando's cluster/etcd/stack.yaml and files.yaml, `clm migrate`d) rendered as CLM's
etcd stack for the zalando-aws sample of tests/corpus_samples.py (clm:manageEtcdStack on), on moto: its archive's
path in the nodes' user data, the etcd key's ARN in the role's policy, and cfn-lint clean but for reviewed upstream
errors. The zalando-eks sample gets none (CLM's EKS provisioner has no etcd stack)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import boto3
import pytest

from clm.config.tree import ConfigTree
from clm.render.account_lookups import AccountLookups
from clm.render.inputs import RenderInputs
from clm.render.lookups import Ec2Lookups
from clm.render.node_files import PlannedFiles, bucket_name
from clm.render.renderer import RenderedCluster, Renderer
from tests.corpus_samples import (
    ACCOUNT,
    NOT_COMPUTED,
    REGION,
    cfn_lint,
    migrated_files,
    sample_clusters,
    samples_on_moto,
)
from tests.unit.test_migrate_corpus import CORPUS

# cfn-lint errors in Zalando's own etcd template, reviewed: (rule, resource) -> why it stays. Anything else fails.
# A registry item of Zalando's clusters (the samples fill registry items with base64 placeholders): a bucket name.
BUCKET = {"etcd_s3_backup_bucket": "zalando-etcd-backup-kube-1"}
CFN_LINT_ALLOWED: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, RenderedCluster], str]]:
    """Both samples rendered with the etcd stack managed; and the etcd key's ARN."""
    if not CORPUS.is_dir():
        pytest.skip("the corpus (../shared/corpus/kubernetes-on-aws) is not here")
    files = migrated_files(tmp_path_factory.mktemp("migrated-etcd"), CORPUS)
    with samples_on_moto(files) as samples:
        tree = ConfigTree(version="v", files=files, source="corpus")
        account = AccountLookups(lambda: boto3.client("acm", region_name=REGION), lambda: boto3.client("kms", REGION))
        store = PlannedFiles(bucket_name(ACCOUNT, REGION))
        renderer = Renderer(
            tree, RenderInputs(lookups=Ec2Lookups(lambda: samples.ec2), account=account, etcd_store=store)
        )
        clusters = {
            provider: dataclasses.replace(c, config_items={**c.config_items, **BUCKET})
            for provider, c in sample_clusters(samples.ec2).items()
        }
        yield {p: renderer.render(c, NOT_COMPUTED) for p, c in clusters.items()}, samples.etcd_key


def test_the_corpus_etcd_stack_renders_for_zalando_aws_only(rendered) -> None:
    results, etcd_key = rendered
    assert results["zalando-eks"].etcd_stack is None
    stack = results["zalando-aws"].etcd_stack
    assert stack is not None and stack.file == "cluster/etcd/stack.yaml"
    resources = stack.template["Resources"]
    assert {"AppServer", "LaunchTemplate", "EtcdRole", "EtcdBackupBucket"} <= set(resources)
    path = f"s3://{bucket_name(ACCOUNT, REGION)}/kube-1/etcd/"
    assert f'S3_CERTS_BUCKET="{path}' in stack.body
    [decrypt] = [p for p in resources["EtcdRole"]["Properties"]["Policies"] if p["PolicyName"] == "KMSDecrypt"]
    assert decrypt["PolicyDocument"]["Statement"][0]["Resource"] == [etcd_key]


def test_the_corpus_etcd_stack_passes_cfn_lint(rendered) -> None:
    stack = rendered[0]["zalando-aws"].etcd_stack
    errors, allowed, warnings = cfn_lint({"etcd stack": stack.body}, REGION, CFN_LINT_ALLOWED)
    print("\n".join(warnings))
    assert errors == {}
    assert allowed == set(CFN_LINT_ALLOWED)
