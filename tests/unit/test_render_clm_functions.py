"""CLM's template functions in the renderer, on the cases of CLM's own tests (provisioner/template_test.go of
zalando-incubator/cluster-lifecycle-manager; each test names the Go test it ports). Templates are the Jinja2 that
`clm migrate` makes of the Go test's template."""

from __future__ import annotations

from typing import Any

import pytest

from clm.errors import RenderError
from clm.model import NodePool
from clm.render.environment import TemplateEnvironment


def render(template: str, data: Any = None) -> str:
    """CLM's renderSingle: `template` with `values.data` = data."""
    return TemplateEnvironment({"foo.yaml": template.encode()}).render("foo.yaml", {"values": {"data": data}})


# TestASGSize, TestASGSizeError
def test_asg_size() -> None:
    assert render("{{ asg_size(9, 3) }}") == "3"
    with pytest.raises(RenderError, match="exact multiple of 3"):
        render("{{ asg_size(8, 3) }}")


# TestAWSValidID
def test_aws_valid_id() -> None:
    data = {"id": "aws:12345678910:eu-central-1:kube-1"}
    assert render("{{ values.data.id | aws_valid_id }}", data) == "aws__12345678910__eu-central-1__kube-1"


# TestNodeCIDRMaxNodes (nodeCIDRMaxNodesPodCIDR pod_cidr cidr reserved)
@pytest.mark.parametrize(
    ("pod_cidr", "cidr", "reserved", "expected"),
    [
        (16, 24, 0, "256"),  # basic
        (16, 24, 10, "246"),  # basic+reserved
        (16, 27, 0, "2048"),  # large
        (16, 19, 0, None),  # error: too small
        (16, 29, 0, None),  # error: too large
        (13, 24, 0, None),  # error: pod CIDR too small
        (17, 24, 0, None),  # error: pod CIDR too large
        (15, 26, 0, "2048"),  # large podCIDR
        (15, 25, 0, "1024"),  # large podCIDR, small node CIDR
        (14, 26, 0, "4096"),  # very large podCIDR
    ],
)
def test_node_cidr_max_nodes_pod_cidr(pod_cidr: int, cidr: int, reserved: int, expected: str | None) -> None:
    template = "{{ node_cidr_max_nodes_pod_cidr(values.data.pod_cidr, values.data.cidr, values.data.reserved) }}"
    data = {"pod_cidr": pod_cidr, "cidr": cidr, "reserved": reserved}
    if expected is None:
        with pytest.raises(RenderError, match="invalid"):
            render(template, data)
    else:
        assert render(template, data) == expected


def test_node_cidr_max_nodes_is_a_16_pod_cidr() -> None:
    """CLM's older nodeCIDRMaxNodes (kept in its FuncMap): nodeCIDRMaxNodes(16, ...)."""
    assert render("{{ node_cidr_max_nodes(24, 10) }}") == "246"


# TestNodeCIDRMaxPods
@pytest.mark.parametrize(
    ("cidr", "extra", "expected"),
    [(24, 0, "110"), (24, 10, "110"), (25, 0, "64"), (27, 5, "21"), (19, 0, None), (29, 0, None)],
)
def test_node_cidr_max_pods(cidr: int, extra: int, expected: str | None) -> None:
    template = "{{ node_cidr_max_pods(values.data.cidr, values.data.extra_capacity) }}"
    data = {"cidr": cidr, "extra_capacity": extra}
    if expected is None:
        with pytest.raises(RenderError, match="invalid value for maskSize"):
            render(template, data)
    else:
        assert render(template, data) == expected


SG_TEMPLATE = """{%- if values.data.sgIngressRanges -%}
{%- for element in sg_ingress_ranges(values.data.sgIngressRanges) -%}
- CidrIp: {{ element.CIDR }}
  FromPort: {{ element.FromPort }}
  IpProtocol: {{ element.Protocol }}
  ToPort: {{ element.ToPort }}
{% endfor -%}
{%- endif -%}"""


# TestParseSGIngressRanges
def test_sg_ingress_ranges() -> None:
    ranges = "10.0.0.0/8:0-100,0.0.0.0/0:300-400,127.0.0.1/32:500,udp:0.0.0.0/0:53"
    assert render(SG_TEMPLATE, {"sgIngressRanges": ranges}) == (
        "- CidrIp: 10.0.0.0/8\n  FromPort: 0\n  IpProtocol: tcp\n  ToPort: 100\n"
        "- CidrIp: 0.0.0.0/0\n  FromPort: 300\n  IpProtocol: tcp\n  ToPort: 400\n"
        "- CidrIp: 127.0.0.1/32\n  FromPort: 500\n  IpProtocol: tcp\n  ToPort: 500\n"
        "- CidrIp: 0.0.0.0/0\n  FromPort: 53\n  IpProtocol: udp\n  ToPort: 53\n"
    )
    assert render(SG_TEMPLATE, {"sgIngressRanges": ""}) == ""


@pytest.mark.parametrize(
    "ranges", ["0.0.0.0/0:0-1-2", "0.0.0.0/0:0-1,-2", "0.0.0.0/0:30-20", "0.0.0.0/0:0-200000", "10.0.0:0-1"]
)
def test_sg_ingress_ranges_errors(ranges: str) -> None:
    with pytest.raises(RenderError):
        render("{{ sg_ingress_ranges(values.data) }}", ranges)


def test_sg_ingress_ranges_go_parsing() -> None:
    """net.ParseCIDR gives the network (host bits cleared) and wants a prefix length; ports are Go integers."""
    assert render("{{ sg_ingress_ranges(values.data)[0].CIDR }}", "10.1.2.3/8:80") == "10.0.0.0/8"
    for bad in ("10.0.0.1:80", "10.0.0.0/255.0.0.0:80", "10.0.0.0/8: 80", "sctp:10.0.0.0/8:80"):
        with pytest.raises(RenderError):
            render("{{ sg_ingress_ranges(values.data) }}", bad)


# TestStupsNATSubnets, TestStupsNATSubnetsErrors
@pytest.mark.parametrize(
    ("vpc", "subnets"),
    [
        ("172.31.0.0/16", "172.31.64.0/28 172.31.64.16/28 172.31.64.32/28 "),
        ("10.153.192.0/19", "10.153.200.0/28 10.153.200.16/28 10.153.200.32/28 "),
        ("10.149.64.0/19", "10.149.72.0/28 10.149.72.16/28 10.149.72.32/28 "),
    ],
)
def test_stups_nat_subnets(vpc: str, subnets: str) -> None:
    assert render("{% for elem in stups_nat_subnets(values.data) %}{{ elem }} {% endfor %}", vpc) == subnets


@pytest.mark.parametrize("vpc", ["172.31.0.0/25", "2001::/19", "example"])
def test_stups_nat_subnets_errors(vpc: str) -> None:
    with pytest.raises(RenderError):
        render("{{ stups_nat_subnets(values.data) }}", vpc)


# TestExtractEndpointHosts
@pytest.mark.parametrize(
    ("endpoints", "expected"),
    [
        ("etcd-server.etcd.example.org:2379", "etcd-server.etcd.example.org, "),
        ("http://etcd-server.etcd.example.org:2379", "etcd-server.etcd.example.org, "),
        ("http://etcd-server.etcd.example.org:2379,zalan.do:2479", "etcd-server.etcd.example.org, zalan.do, "),
        (
            "http://etcd-server.etcd.example.org:2379,https://etcd-server.etcd.example.org:2479",
            "etcd-server.etcd.example.org, ",
        ),
    ],
)
def test_extract_endpoint_hosts(endpoints: str, expected: str) -> None:
    template = "{% for elem in extract_endpoint_hosts(values.data.endpoints) %}{{ elem }}, {% endfor %}"
    assert render(template, {"endpoints": endpoints}) == expected


def test_extract_endpoint_hosts_as_go_url_parse() -> None:
    """url.Parse's Hostname: the case kept, user and IPv6 brackets dropped; a port that is not a number fails."""
    template = "{{ extract_endpoint_hosts(values.data) | join(' ') }}"
    assert render(template, "https://u:p@Etcd.Example.org:2379,[fd00::1]:2379") == "Etcd.Example.org fd00::1"
    with pytest.raises(RenderError, match="invalid port"):
        render(template, "etcd:port")


# TestSumQuantities
@pytest.mark.parametrize(
    ("quantities", "expected"),
    [
        (("2", "0"), "2"),  # whole add zero
        (("2", "3"), "5"),  # whole addition
        (("5", "-3"), "2"),  # whole subtraction
        (("256m", "0"), "256m"),  # fraction add zero
        (("2", "256m"), "2256m"),  # whole CPU add fraction
        (("2", "256m", "-1"), "1256m"),  # whole CPU add fraction sub whole
        (("2", "256m", "1"), "3256m"),  # whole CPU add fraction add whole
        (("2", "-256m"), "1744m"),  # whole CPU sub fraction
        (("2", "-256m", "-1"), "744m"),  # whole CPU sub fraction sub whole CPU
        (("2Gi", "-512Mi"), "1536Mi"),  # Gi sub Mi
        (("2Gi", "-1024Ki"), "2047Mi"),  # Gi sub Ki
    ],
)
def test_sum_quantities(quantities: tuple[str, ...], expected: str) -> None:
    assert render("{{ sum_quantities(" + ", ".join(f'"{q}"' for q in quantities) + ") }}") == expected


# TestScaleQuantity, TestScaleQuantityError (expected: the canonical text of k8sresource.MustParse(expected))
@pytest.mark.parametrize(
    ("quantity", "factor", "expected"),
    [
        ("1.0", 2.0, "2"),  # whole CPU scaled by whole
        ("10", 0.5, "5"),  # whole CPU scaled by fraction
        ("256m", 2.0, "512m"),  # fraction CPU scaled by whole
        ("256m", 0.5, "128m"),  # fraction CPU scaled by fraction
        ("1Gi", 2.0, "2Gi"),  # memory scaled by whole
        ("1Gi", 0.5, "512Mi"),  # memory scaled by fraction
    ],
)
def test_scale_quantity(quantity: str, factor: float, expected: str) -> None:
    assert render(f'{{{{ scale_quantity("{quantity}", {factor}) }}}}') == expected


def test_scale_quantity_error() -> None:
    with pytest.raises(RenderError, match=r"scaling factor must be greater than 0\.0"):
        render('{{ scale_quantity("1.0", -1.0) }}')


def test_scale_quantity_in_float32_as_the_corpus_uses_it() -> None:
    """An 8 GiB instance's memory times 0.134 (z-karpenter/vpa.yaml): 2^33 * float32(0.134) = 2^33 *
    0.1340000033378601 bytes, not a multiple of 1024 (BinarySI prints it plain); 2 vCPUs times 0.025: 50m."""
    assert render('{{ scale_quantity("8Gi", 0.134) }}') == "1151051264"
    assert render('{{ scale_quantity("2", 0.025) }}') == "50m"


# TestPublicKey
PRIVATE_KEY = """-----BEGIN RSA PRIVATE KEY-----
MIIEowIBAAKCAQEAw6bd0oGYHTvzz+hbSBeym87rt/jHMEshthOuY2szifqroBzI
gpARyzjjpaH2/QnYzgqOWpj2fbtuVYhSrclWqi8QdCKz83VneXe26IW/MGNmO/sT
CssB1NPuoBWalBZMisbKeqvOqR7BxwCpKjerseEPE/oriPn3QEXOYqaY0eOCK/6Q
6eSFxMd9n6p+o64htrt4q+rTxX1fUodPRuEf4QnSrEEbZq44hUkzmr4VCZi/LQrc
EjfcpxFrM8PMvALaSqf21xHvFqF46Gj777h+7rv6fEfK5T+Twhb76Pc1Cz15dHDl
qfbaVYjaEO0qSRHGJsT2A45zm/8zCwBpJKAtDwIDAQABAoIBACBkJeFN90MPw+Ot
0j7zPWyyKzBADaofJiugwoRPIS88wuE1IrUK6Qc+GeI4GE34LV6fPMYfAN/8Ad5D
PXzsEl8Gf7DadfRegY0Ils2UJvz519kiThrBVUJI+/6g1QCjWHS5SJhajVJOd0Jd
B6SnptNCMV7bUg3RZG/NnseSUUaeG3JG5bsISiJPlPcZHU+rqUnQDnrB+/0ykGoi
grhbtSt896zP+4gdjg3dLUi5UwGT93/h9vc2azK5HbVYuJzO/CClsAp+QfiI4Ia5
5Tz4lnQ/yDYxT9mmrxV0hzr5hULnO/oPsdc2x7bp1gvjejQwkY61b8PTg8GrdhEu
JJLVpXECgYEA9CxEoOowsH1yM8pE7XPzCvh9IwBYGt+6EEoEEQ6fzhNP54dJdFiF
l6J/bTHLDLWuYWq3AZ+8wYOnYev2G8LIKauvQZNyOZlSUU4RL2htMZ31bFeELWA/
cuixeZycTJBTuxAqtwWvyjJDmKYZAzdQReSNygaVcFHju6hpu0VxXq0CgYEAzSDw
cMdz6WoGE0RiHNjhViFbENl6HoO9Cq/qzXcBoCf+1Yl85/AS3s+982IjyPqcbo/Z
GEi7sq6pTnLUZKIImbIidDvIkEkxTmbNfS7151ILTHULMy4c8YPyTfo6h+vrO6XT
zGuKtcc3K6txDbyb2abMg35t0Ljg0RN+togRHisCgYBPzSQE32VYWTd427OZU5rs
S/hB9zvUVKhv6HDZzkjGRiOITPvhzYij3VT+MBbnqX07k3AKVNWQ/WE4LLE7s3ZN
wDHAIdtkHcr8jaIqN1vwqmpqpVOqrNkvygMu9tNSZp0m9wqu1Gn2kGTtP+PO3EYd
AayhiXNPyUO/sjQUI4cA5QKBgHURKWeTzMkXYyQ30K6Z7/AR1UEGfLVRhd/FigF8
u4bFjKAdeRV9Y6eZc9Sk27tlm0VV/xXm3IgbOjC1RBWyi6n7icJAJDSEMQmHjhq1
ZE2B+0TFP4ET/hyvqudpuWG8+GDwQLHXZjBb41ae30RxsZhDo1AgJVgLSvLHZ3eQ
rARFAoGBAL1QriPbz2ZOujrSmPKbOl/H0y74QwmWwatf90cgzMA+/gNgmu8EYmC7
zXJIFt24pCciexrRWOeR9LZdenWUXOvl2I+cKlIGLM42MxUQpN74BlHne0oQ+Mg3
SDpur492ci/fjCMLtPFEmmQvdAjzC8cSHu8MqpLAEvxFBFKz+Q0T
-----END RSA PRIVATE KEY-----"""
PUBLIC_KEY = """-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAw6bd0oGYHTvzz+hbSBey
m87rt/jHMEshthOuY2szifqroBzIgpARyzjjpaH2/QnYzgqOWpj2fbtuVYhSrclW
qi8QdCKz83VneXe26IW/MGNmO/sTCssB1NPuoBWalBZMisbKeqvOqR7BxwCpKjer
seEPE/oriPn3QEXOYqaY0eOCK/6Q6eSFxMd9n6p+o64htrt4q+rTxX1fUodPRuEf
4QnSrEEbZq44hUkzmr4VCZi/LQrcEjfcpxFrM8PMvALaSqf21xHvFqF46Gj777h+
7rv6fEfK5T+Twhb76Pc1Cz15dHDlqfbaVYjaEO0qSRHGJsT2A45zm/8zCwBpJKAt
DwIDAQAB
-----END PUBLIC KEY-----
"""


def test_public_key() -> None:
    assert render("{{ public_key(values.data) }}", PRIVATE_KEY) == PUBLIC_KEY


def test_public_key_errors() -> None:
    with pytest.raises(RenderError, match="no PEM data found"):
        render("{{ public_key(values.data) }}", "not a key")
    with pytest.raises(RenderError, match="x509"):
        render("{{ public_key(values.data) }}", PUBLIC_KEY)  # a PKIX public key is no PKCS#1 private key


# TestCertificateExpiry
CERTIFICATE = """-----BEGIN CERTIFICATE-----
MIICoDCCAYgCCQCICOd8jmc77jANBgkqhkiG9w0BAQsFADASMRAwDgYDVQQDDAdl
eGFtcGxlMB4XDTIxMDYxMDEwMDY0M1oXDTIyMDYxMDEwMDY0M1owEjEQMA4GA1UE
AwwHZXhhbXBsZTCCASIwDQYJKoZIhvcNAQEBBQADggEPADCCAQoCggEBAMYr2Lsz
Wm3I1GqxdqnuuXqT/SHWKv/CdGorE5nb1O6OBFibo0TJN8ztoooySqwF81Qh9Uwu
mA5mkScdWJagqYlGsR+d1U3wuGmY9jSXdIn5VX0PUWD38MazT+s2kzZVg8Xu/CC8
waBdQDZGKpJeO/z1LC8zoY9P3f3YuxmgQqzDfpJgzjSEaSqhgIDD7RCA3kngfzYP
J3T+O54NpTNU5fZx437e7L643arZdB636yyV6dGz3ZV3WZw9TeLry6mf671BWvsN
Ngkz0fmG1rNgzD7gwn6jTG29p5O9f3djX2oH2aHUb7ry+n40QmxVUM+JO3OgVg99
ZV2jRxqfVNse61UCAwEAATANBgkqhkiG9w0BAQsFAAOCAQEAiLJJgKyP1aFJK+jL
T3E9EZfiYzWE301DMzkhCDVcAEY8KNsugQPn/dNiAWcZB+JLEWby0LFyQcPVE5eu
TLvNJLT6Iui7ITNC4bbrIqJxdKdeHX2Y/gj4j2mtHupiLHkJoLrahjAG8JrIDpMt
MFsSQS6YJ87TjYgtlNlOLa+/k771rS9qG/uIK8+Ijx8Y3HYboS5zMVyMdELFufof
0rjsnygpvicwVEyZU0d4sCVwyX3I9OtCUTI/CY/3UqqL2LhNEq3hYPNDFDJV9zXE
T6qW9CgZFGg83VqV2Tz44pneTFzvbr7Kcvrhpe0Wr2Ed2zPsz5BSz194DopAdRYv
CWeOoA==
-----END CERTIFICATE-----"""


def test_certificate_expiry() -> None:
    assert render("{{ certificate_expiry(values.data.certificate) }}", {"certificate": CERTIFICATE}) == (
        "2022-06-10T10:06:43Z"
    )
    with pytest.raises(RenderError, match="no PEM data found"):
        render("{{ certificate_expiry(values.data) }}", "eA==")


def _pool(name: str, profile: str, **items: str) -> NodePool:
    return NodePool(name, profile, 1, 3, ["m5.large"], config_items=items)


def _dedicated(group: str) -> dict[str, str]:
    return {"labels": f"dedicated={group}", "taints": f"dedicated={group}:NoSchedule"}


# TestZoneDistributedNodePoolGroupsDedicated
def test_zone_distributed_node_pool_groups_dedicated() -> None:
    pools = [
        _pool("default-master", "master-default"),  # master pools are ignored
        _pool("default", "worker-splitaz"),  # non-dedicated pools are ignored
        _pool("default", "worker-splitaz", taints="dedicated=invalid:NoSchedule"),
        _pool("valid-1", "worker-splitaz", **_dedicated("valid")),  # both pools are OK
        _pool("valid-2", "worker-splitaz", **_dedicated("valid")),
        _pool("valid-1", "worker-karpenter", **_dedicated("valid-karpenter")),  # both karpenter pools are OK
        _pool("valid-2", "worker-karpenter", **_dedicated("valid-karpenter")),
        _pool("valid-single-1", "worker-splitaz", **_dedicated("valid-single")),  # just one pool
        _pool("invalid-taint-1", "worker-splitaz", **_dedicated("invalid-taint")),  # pools without the right taints
        _pool(
            "invalid-taint-2",
            "worker-splitaz",
            labels="dedicated=invalid-taint",
            taints="dedicated=invalid-taint:NoSchedule,another=value:NoSchedule",
        ),
        _pool("missing-taint-1", "worker-splitaz", **_dedicated("missing-taint")),  # a pool without a taint
        _pool("missing-taint-2", "worker-splitaz", labels="dedicated=missing-taint"),
        _pool("explicit-azs-1", "worker-splitaz", **_dedicated("explicit-azs")),  # a pool limited to some AZs
        _pool("explicit-azs-2", "worker-splitaz", **_dedicated("explicit-azs"), availability_zones="1a,1b,1c"),
        _pool("wrong-profile-1", "worker-splitaz", **_dedicated("wrong-profile")),  # a pool of the wrong profile
        _pool("wrong-profile-2", "worker-default", **_dedicated("wrong-profile")),
    ]
    template = (
        "{% for k, v in zone_distributed_node_pool_groups(values.data.pools) | dictsort %}"
        '{% if k != "" %}{{ k }};{% endif %}{% endfor %}'
    )
    assert render(template, {"pools": pools}) == "valid;valid-karpenter;valid-single;"


# TestZoneDistributedNodePoolGroupsDefault
@pytest.mark.parametrize(
    ("pools", "expected"),
    [
        ([_pool("default", "worker-splitaz"), _pool("default-2", "worker-splitaz")], "true"),  # all pools match
        (  # pools with taints are ignored
            [_pool("default", "worker-splitaz"), _pool("default-2", "worker-default", taints="foo=bar:NoSchedule")],
            "true",
        ),
        ([_pool("default", "worker-splitaz"), _pool("default-master", "master-default")], "true"),  # masters ignored
        (  # pools with AZ restrictions are not allowed
            [_pool("default", "worker-splitaz"), _pool("default-2", "worker-splitaz", availability_zones="1a,1b,1c")],
            "false",
        ),
        ([_pool("default", "worker-splitaz"), _pool("default-2", "worker-default")], "false"),  # non-splitaz
    ],
)
def test_zone_distributed_node_pool_groups_default(pools: list[NodePool], expected: str) -> None:
    # Go's `index M ""` gives the zero value, false, for a missing key (`clm migrate` writes go_index, whose nil
    # prints "none" through `lower`: the test asks the map as Go does).
    template = '{{ zone_distributed_node_pool_groups(values.data.pools).get("", false) | lower }}'
    assert render(template, {"pools": pools}) == expected


# TestNodePoolGroupsProfile
@pytest.mark.parametrize(
    ("pools", "expected"),
    [
        (  # application-1 dedicated pools share the same profile
            [_pool(n, "worker-combined", labels="dedicated=application-1") for n in ("example-1", "example-2")],
            {"application-1": "zalando"},
        ),
        (  # ... which is unknown
            [_pool(n, "worker-unknown", labels="dedicated=application-1") for n in ("example-1", "example-2")],
            {"application-1": ""},
        ),
        (  # application-2 dedicated pools do not share the same profile
            [
                _pool("example-1", "profile-2", labels="dedicated=application-2"),
                _pool("example-2", "profile-1", labels="dedicated=application-2"),
            ],
            {"application-2": ""},
        ),
        ([_pool(n, "worker-karpenter") for n in ("example-1", "example-2")], {"default": "karpenter"}),
        ([_pool("example-1", "worker-karpenter"), _pool("example-2", "worker-combined")], {"default": ""}),
    ],
)
def test_node_life_cycle_provider_per_node_pool_group(pools: list[NodePool], expected: dict[str, str]) -> None:
    from clm.render.pool_groups import node_life_cycle_provider_per_node_pool_group

    assert node_life_cycle_provider_per_node_pool_group(pools) == expected
