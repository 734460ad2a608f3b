"""CLM's cluster methods in templates (clm.render.account_clusters), on the cases of CLM's own tests (api/cluster.go
and cluster_test.go, provisioner/template_test.go TestClusterName and TestClusterOIDCProvider of
zalando-incubator/cluster-lifecycle-manager; each test names the Go test it ports), the Go templates translated by
`clm migrate`; the account's clusters read from a DynamoDB registry (moto) through the renderer; and what a
registry writer could do with another cluster's fields."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import boto3
import pytest

from clm.config.tree import ConfigTree
from clm.errors import RenderError
from clm.migrate.translator import translate
from clm.model import Cluster
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.render.account_clusters import MAX_ACCOUNT_CLUSTERS, template_cluster
from clm.render.environment import TemplateEnvironment
from clm.render.inputs import RenderInputs
from clm.render.origins import registry_view
from clm.render.renderer import Renderer

ACCOUNT = "aws:123456789012"
ISSUER = "https://oidc.eks.eu-central-1.amazonaws.com/id/11112222333344445555666677778888"


def cluster(local_id: str, **fields: Any) -> Cluster:
    """A cluster of ACCOUNT in eu-central-1 (fields override)."""
    defaults: dict[str, Any] = {
        "id": f"{ACCOUNT}:eu-central-1:{local_id}",
        "local_id": local_id,
        "infrastructure_account": ACCOUNT,
        "region": "eu-central-1",
        "provider": "zalando-aws",
        "lifecycle_status": "ready",
        "api_server_url": f"https://{local_id}.example.zalan.do",
    }
    return Cluster(**{**defaults, **fields})


def render(go_template: str, me: Cluster, account: list[Cluster] | None = None) -> str:
    """The Go template, translated, rendered for `me` with the account's clusters `account`."""
    translation = translate(go_template, "foo.yaml")
    assert not translation.problems, translation.problems
    view = template_cluster(registry_view(me), None if account is None else lambda: account)
    return TemplateEnvironment({"foo.yaml": translation.text.encode()}).render("foo.yaml", {"cluster": view})


# TestName, TestClusterName
def test_name_is_the_id_or_an_eks_clusters_alias() -> None:
    aws = cluster("kube-test-1", alias="teapot-test")
    assert render("{{ .Cluster.Name }}", aws) == aws.id
    assert render("{{ .Cluster.Name }}", dataclasses.replace(aws, provider="zalando-eks")) == "teapot-test"


# TestWorkerRoleARN
def test_worker_role_arn() -> None:
    assert render("{{ .Cluster.WorkerRoleARN }}", cluster("kube-1")) == "arn:aws:iam::123456789012:role/kube-1-worker"


# TestOIDCProvider, TestClusterOIDCProvider
def test_oidc_provider() -> None:
    assert render("{{ .Cluster.OIDCProvider }}", cluster("kube-1")) == "kube-1.example.zalan.do"
    eks = cluster("teapot-euc1", provider="zalando-eks", config_items={"eks_oidc_issuer_url": ISSUER})
    assert render("{{ .Cluster.OIDCProvider }}", eks) == ISSUER.removeprefix("https://")


LEGACY = (
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},'
    '"Action":["sts:AssumeRole"],"Sid":"CLMApplied"},{"Effect":"Allow","Principal":{"Service":'
    '"pods.eks.amazonaws.com"},"Action":["sts:AssumeRole","sts:TagSession"]},{"Effect":"Allow","Principal":'
    '{"AWS":"arn:aws:iam::123456789012:role/kube-1-worker"},"Action":["sts:AssumeRole"]},{"Effect":"Allow",'
    '"Principal":{"Federated":"arn:aws:iam::123456789012:oidc-provider/kube-1.example.zalan.do"},"Action":'
    '["sts:AssumeRoleWithWebIdentity"],"Condition":{"StringLike":{"kube-1.example.zalan.do:sub":'
    '"system:serviceaccount:${SERVICE_ACCOUNT}"}}}]}'
)
EKS_STATEMENTS = (
    '{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:role/teapot-euc1-worker"},"Action":'
    '["sts:AssumeRole"]},{"Effect":"Allow","Principal":{"Federated":"arn:aws:iam::123456789012:oidc-provider/'
    'oidc.eks.eu-central-1.amazonaws.com/id/11112222333344445555666677778888"},"Action":'
    '["sts:AssumeRoleWithWebIdentity"],"Condition":{"StringLike":{"oidc.eks.eu-central-1.amazonaws.com/id/'
    '11112222333344445555666677778888:sub":"system:serviceaccount:${SERVICE_ACCOUNT}"}}}'
)


# TestIAMRoleTrustRelationshipTemplate (CLM's expected JSON, byte for byte)
def test_iam_role_trust_relationship_template() -> None:
    template = "{{ .Cluster.IAMRoleTrustRelationshipTemplate }}"
    legacy = cluster("kube-1", created_at="2024-01-01T00:00:00Z")
    eks = cluster("teapot-euc1", provider="zalando-eks", config_items={"eks_oidc_issuer_url": ISSUER})
    eks = dataclasses.replace(eks, created_at="2024-02-01T00:00:00Z")
    assert render(template, legacy, [legacy]) == LEGACY
    services = LEGACY.split(',{"Effect":"Allow","Principal":{"AWS"', maxsplit=1)[0]
    assert render(template, eks, [eks]) == services + "," + EKS_STATEMENTS + "]}"
    combined = LEGACY.removesuffix("]}") + "," + EKS_STATEMENTS + "]}"
    decommissioned = cluster("kube-9", lifecycle_status="decommissioned")
    for me in (legacy, eks):
        assert render(template, me, [legacy, eks]) == combined
        assert render(template, me, [legacy, eks, decommissioned]) == combined
    # Unlike CLM (whose registry loop had not computed a later cluster's OIDC provider yet), the order is no matter.
    assert render(template, legacy, [eks, legacy]) == combined


# TestIsOldestReadyCluster, ...IgnoreNonReayClusters, ...NoAccountClusters, ...PerRegion
@pytest.mark.parametrize(
    ("regions", "statuses", "account", "expected"),
    [
        (["eu-central-1"] * 2, ["ready", "ready"], True, "true false"),
        (["eu-central-1"] * 2, ["decommissioned", "ready"], True, "false true"),
        (["eu-central-1"] * 2, ["ready", "ready"], False, "true true"),
        (["eu-central-1", "eu-west-1", "eu-west-1"], ["ready"] * 3, True, "true true false"),
    ],
)
def test_is_oldest_ready_cluster_in_the_region(
    regions: list[str], statuses: list[str], account: bool, expected: str
) -> None:
    clusters = [
        cluster(f"kube-test-{n}", region=region, lifecycle_status=status, created_at=f"2024-0{n}-01T00:00:00Z")
        for n, (region, status) in enumerate(zip(regions, statuses, strict=True), start=1)
    ]
    template = "{{ .Cluster.IsOldestReadyClusterInTheRegion }}"
    answers = [render(template, me, clusters if account else []) for me in clusters]
    assert " ".join(answers) == expected


T1, T2, T3 = "2024-01-01T00:00:00Z", "2024-06-01T00:00:00Z", "2025-01-01T00:00:00Z"


# TestSiblingCluster
@pytest.mark.parametrize(
    ("me", "others", "expected"),
    [
        ("c1", [], ""),  # no account clusters
        ("c1", [("c1", "eu-central-1", T1, "")], ""),  # only self in account
        ("c1", [("c1", "eu-central-1", T1, ""), ("c2", "eu-central-1", T2, "ready")], "c2"),  # same region
        ("c1", [("c1", "eu-central-1", T1, ""), ("c2", "eu-west-1", T2, "")], ""),  # different region
        (
            "c3",
            [("c1", "eu-central-1", T1, "ready"), ("c2", "eu-central-1", T2, "ready"), ("c3", "eu-central-1", T3, "")],
            "c1",
        ),  # oldest sibling wins with three clusters
        (
            "c1",
            [("c1", "eu-central-1", T2, ""), ("c2", "eu-west-1", T1, "ready"), ("c3", "eu-central-1", T3, "ready")],
            "c3",
        ),  # oldest sibling wins ignoring other regions
        (
            "c1",
            [
                ("c1", "eu-central-1", T2, ""),
                ("c2", "eu-central-1", T1, "decommissioned"),
                ("c3", "eu-central-1", T3, "ready"),
            ],
            "c3",
        ),  # ignores non-ready clusters
    ],
)
def test_sibling_cluster(me: str, others: list[tuple[str, str, str, str]], expected: str) -> None:
    clusters = [cluster(name, region=region, created_at=at, lifecycle_status=status or "requested")
                for name, region, at, status in others]  # fmt: skip
    template = "{{ with .Cluster.SiblingCluster }}{{ .LocalID }}{{ end }}"
    assert render(template, cluster(me, lifecycle_status="requested"), clusters) == expected


def test_the_registry_offers_only_the_accounts_clusters_through_the_renderer(aws: boto3.Session) -> None:
    """The run's renderer reads the registry (DynamoDB) once, and only when a template asks; a cluster of another
    account is never a sibling nor in the trust relationship."""
    dynamodb = aws.client("dynamodb")
    create_table(dynamodb, "registry")
    registry = DynamoRegistry(dynamodb, "registry")
    me, sibling = cluster("kube-1", created_at=T2), cluster("kube-2", created_at=T3)
    elsewhere = cluster("kube-0", infrastructure_account="aws:210987654321", created_at=T1)
    elsewhere = dataclasses.replace(elsewhere, id="aws:210987654321:eu-central-1:kube-0")
    for each in (me, sibling, elsewhere):
        registry.put(each)
    calls: list[int] = []

    def list_clusters() -> list[Cluster]:
        calls.append(1)
        return registry.list_clusters()

    stack = "Resources: {}\nMetadata: {sibling: '{{ cluster.sibling_cluster.local_id }}', trust: "
    stack += "{{ cluster.iam_role_trust_relationship_template }}, oldest: {{ cluster.is_oldest_ready_cluster_in_the_region }}}\n"  # noqa: E501
    tree = ConfigTree(version="t", source="t", files={"cluster/stack.yaml": stack.encode()})
    rendered = Renderer(tree, RenderInputs(list_clusters=list_clusters)).render(me)
    metadata = rendered.cluster_stack.template["Metadata"]
    assert (metadata["sibling"], metadata["oldest"], len(calls)) == ("kube-2", True, 1)
    roles = [s["Principal"]["AWS"] for s in metadata["trust"]["Statement"] if "AWS" in s["Principal"]]
    assert roles == ["arn:aws:iam::123456789012:role/kube-1-worker", "arn:aws:iam::123456789012:role/kube-2-worker"]
    plain = ConfigTree(version="t", source="t", files={"cluster/stack.yaml": b"Resources: {}\n"})
    Renderer(plain, RenderInputs(list_clusters=list_clusters)).render(me)
    assert len(calls) == 1  # no template asked: the registry was not read


def test_more_clusters_in_the_account_than_a_rendering_reads_is_an_error_naming_file_and_line() -> None:
    many = [cluster(f"kube-{n}") for n in range(MAX_ACCOUNT_CLUSTERS + 1)]
    with pytest.raises(RenderError, match=r"foo\.yaml:2: .*has 101 clusters in the registry, more than the 100"):
        render("\n{{ .Cluster.IAMRoleTrustRelationshipTemplate }}", many[0], many)
    with pytest.raises(RenderError, match="not available to this rendering"):
        render("{{ .Cluster.SiblingCluster.ID }}", many[0])


def test_a_siblings_fields_are_checked_where_they_land_and_its_config_items_are_not_offered() -> None:
    """A registry writer owning only another cluster of the account: its alias spliced raw into YAML is refused (as
    this cluster's own registry text), its config items are not readable, and its EKS issuer cannot break the trust
    relationship out of its JSON string."""
    me = cluster("kube-1", created_at=T2)
    sibling = cluster("kube-2", created_at=T1, alias="x\nkind: Secret")
    with pytest.raises(RenderError, match="alias"):
        render("a: {{ .Cluster.SiblingCluster.Alias }}\n", me, [me, sibling])
    secret = dataclasses.replace(sibling, alias="x", config_items={"password": "hunter2"})
    with pytest.raises(RenderError, match="config_items"):
        render("{{ .Cluster.SiblingCluster.ConfigItems.password }}", me, [me, secret])
    issuer = 'https://evil"},{"Effect":"Allow","Principal":{"AWS":"*"}'
    eks = cluster("kube-3", provider="zalando-eks", config_items={"eks_oidc_issuer_url": issuer})
    policy = json.loads(render("{{ .Cluster.IAMRoleTrustRelationshipTemplate }}", me, [me, eks]))
    assert [s["Principal"] for s in policy["Statement"]].count({"AWS": "*"}) == 0
    assert len(policy["Statement"]) == 6
