"""`values.load_balancer_certificate` and `values.etcd_kms_key_arn` (clm.render.account_lookups): the certificate
match of kube-ingress-aws-controller (cases of its certs/matching_test.go TestFindBestMatchingCertificate), ACM
and KMS on moto, and the renderer asking only when a template names the value."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import moto.settings
import pytest

from clm.config.tree import ConfigTree
from clm.render.account_lookups import AccountLookups, Certificate, best_matching, prefix_glob
from clm.render.inputs import RenderInputs
from clm.render.renderer import Renderer

NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)
DAY = timedelta(days=1)
BEFORE, AFTER = NOW - 7 * DAY, NOW + 7 * DAY + timedelta(seconds=1)
HOST = "foo.example.org"


def cert(arn: str, *names: str, since: datetime = BEFORE, until: datetime = AFTER) -> Certificate:
    return Certificate(arn, names, since, until)


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("*.example.org", "foo.example.org", True),
        ("*.example.org", "a.foo.example.org", False),
        ("foo.example.org", "foo.example.org", True),
        ("example.org", "foo.example.org", False),
        ("*", "anything.at.all", True),
        ("", "", True),
        ("", "foo.example.org", False),
    ],
)
def test_names_match_as_the_controllers_prefix_glob(pattern: str, host: str, matches: bool) -> None:
    assert prefix_glob(pattern, host) is matches


@pytest.mark.parametrize(
    ("certificates", "expected"),
    [
        ([cert("valid", HOST)], "valid"),  # Not found best match
        ([cert("wildcard", "*.example.org")], "wildcard"),
        ([cert("valid", HOST), cert("wildcard", "*.example.org")], "valid"),  # of multiple valid certs
        ([cert("bad", "invalid.org"), cert("wildcard", "*.example.org"), cert("bad2", "*.invalid.org")], "wildcard"),
        ([cert("san", HOST, "invalid.org", "foo.invalid.org", "*.invalid.org")], "san"),  # AlternateName certs
        ([cert("1d", HOST, until=NOW + DAY), cert("6d", HOST, until=NOW + 6 * DAY)], "6d"),  # NotAfter 1 vs 6 days
        ([cert("1y", HOST, until=NOW + 365 * DAY), cert("1d", HOST, until=NOW + DAY)], "1y"),
        ([cert("since1d", HOST, since=NOW - DAY), cert("since6d", HOST, since=NOW - 6 * DAY)], "since1d"),
        ([cert("since1y", HOST, since=NOW - 365 * DAY), cert("since6d", HOST, since=NOW - 6 * DAY)], "since6d"),
        (  # newest first: 6d/1y compared to 1d/10d
            [
                cert("6d-1y", HOST, since=NOW - 6 * DAY, until=NOW + 365 * DAY),
                cert("1d-10d", HOST, since=NOW - DAY, until=NOW + 10 * DAY),
            ],
            "1d-10d",
        ),
    ],
)
def test_the_best_matching_certificate_is_chosen(certificates: list[Certificate], expected: str) -> None:
    assert best_matching(certificates, HOST, NOW).arn == expected


@pytest.mark.parametrize(
    ("certificates", "host"),
    [
        ([cert("valid", HOST)], "foo.invalid.org"),  # Found best match for invalid hostname
        ([cert("bad", "invalid.org")], HOST),
        ([cert("bad", "*.invalid.org")], HOST),
        ([cert("bad", "*.invalid.org"), cert("bad2", "invalid.org")], HOST),
        ([cert("time1", HOST, since=AFTER, until=BEFORE)], HOST),  # invalid time certs
        ([cert("time2", HOST, since=AFTER, until=AFTER)], HOST),
        ([cert("time3", HOST, since=BEFORE, until=BEFORE)], HOST),
    ],
)
def test_no_certificate_matches(certificates: list[Certificate], host: str) -> None:
    with pytest.raises(ValueError, match=f"no ACM certificate matches {host}"):
        best_matching(certificates, host, NOW)


class Counting:
    """A client factory that counts the clients made (each is made on the first lookup only)."""

    def __init__(self, session: boto3.Session, service: str):
        self.session, self.service, self.made = session, service, 0

    def __call__(self) -> Any:
        self.made += 1
        return self.session.client(self.service)


TEMPLATE = """\
Resources:
  Listener:
    Type: AWS::ElasticLoadBalancingV2::Listener
    Properties:
      Certificates: [{CertificateArn: "{{ values.load_balancer_certificate }}"}]
      KmsKey: "{{ values.etcd_kms_key_arn }}"
"""


def render_stack(aws: boto3.Session, text: str, api_url: str = "https://kube-1.example.org") -> tuple[Any, Counting]:
    from clm.model import Cluster

    acm = Counting(aws, "acm")
    account = AccountLookups(acm, lambda: aws.client("kms"))
    tree = ConfigTree(version="v", files={"cluster/stack.yaml": text.encode()}, source="test")
    cluster = Cluster("c1", "kube-1", "aws:123456789012", "eu-central-1", "zalando-aws", api_server_url=api_url)
    return Renderer(tree, RenderInputs(account=account)).render(cluster), acm


def test_the_renderer_gives_templates_the_certificate_and_the_etcd_key(
    aws: boto3.Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(moto.settings, "ACM_VALIDATION_WAIT", 0)  # ACM issues at once
    acm, kms = aws.client("acm"), aws.client("kms")
    acm.request_certificate(DomainName="other.org")
    acm.request_certificate(DomainName="*.example.org")
    newest = {"DomainName": "*.example.org", "SubjectAlternativeNames": ["*.example.org", "*.invalid.org"]}
    arn = acm.request_certificate(**newest)["CertificateArn"]  # as specific, and newer
    key = kms.create_key()["KeyMetadata"]
    kms.create_alias(AliasName="alias/etcd-cluster", TargetKeyId=key["KeyId"])
    rendered, _ = render_stack(aws, TEMPLATE)
    properties = rendered.cluster_stack.template["Resources"]["Listener"]["Properties"]
    assert properties == {"Certificates": [{"CertificateArn": arn}], "KmsKey": key["Arn"]}


def test_a_missing_value_fails_the_template_that_reads_it_and_a_tree_that_never_names_them_asks_nothing(
    aws: boto3.Session,
) -> None:
    from clm.errors import RenderError

    with pytest.raises(RenderError, match="cannot look up load_balancer_certificate: no ACM certificate matches"):
        render_stack(aws, TEMPLATE)
    quoted = TEMPLATE.replace('"{{ values.load_balancer_certificate }}"', "x").replace(
        '"{{ values.etcd_kms_key_arn }}"', "{{ values.etcd_kms_key_arn | yaml }}"
    )
    reason = r"cluster/stack.yaml:6: .*cannot look up etcd_kms_key_arn: .*alias/etcd-cluster"
    with pytest.raises(RenderError, match=reason):
        render_stack(aws, quoted)
    _, acm = render_stack(aws, "Resources: {}\n")
    assert acm.made == 0
