"""CLM's template functions that Zalando's 2024 configuration does not call and a current one does, on the cases of
CLM's own tests (provisioner/template_test.go and jwks_test.go of zalando-incubator/cluster-lifecycle-manager;
each test names the Go test it ports). Each Go template is translated by `clm migrate` and the translation rendered,
so the cases check the translation and the renderer together."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from clm.errors import RenderError
from clm.migrate.translator import translate
from clm.render.environment import TemplateEnvironment


def render(go_template: str, data: Any = None) -> str:
    """CLM's renderSingle of a Go template with `.Values.data` = data, through `clm migrate`'s translation."""
    translation = translate(go_template, "foo.yaml")
    assert not translation.problems, translation.problems
    env = TemplateEnvironment({"foo.yaml": translation.text.encode()})
    return env.render("foo.yaml", {"values": {"data": data}})


# TestMountUnitName, TestMountUnitNameRelativePath
def test_mount_unit_name() -> None:
    assert render('{{ mountUnitName "/foo/bar" }}') == "foo-bar"
    with pytest.raises(RenderError, match="not an absolute path: foo/bar"):
        render('{{ mountUnitName "foo/bar" }}')


PORT_RANGES = """{{- if index .Values.data.portRanges -}}
{{- range $index, $element := portRanges .Values.data.portRanges -}}
- CidrIp: 0.0.0.0/0
  FromPort: {{ $element.FromPort }}
  IpProtocol: tcp
  ToPort: {{ $element.ToPort }}
{{ end -}}
{{- end -}}"""


# TestParsePortRanges
def test_port_ranges() -> None:
    expected = "- CidrIp: 0.0.0.0/0\n  FromPort: 0\n  IpProtocol: tcp\n  ToPort: 100\n"
    expected += "- CidrIp: 0.0.0.0/0\n  FromPort: 300\n  IpProtocol: tcp\n  ToPort: 400\n"
    assert render(PORT_RANGES, {"portRanges": "0-100,300-400"}) == expected
    assert render(PORT_RANGES, {"portRanges": ""}) == ""


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        ("0-1-2", "invalid input for portRange: 0-1-2"),
        ("0-1,-2", "invalid start port:  in input: 0-1,-2"),
        ("30-20", "port range 30-20 is invalid"),
        ("0-200000", "port range 0-200000 is invalid"),
        ("x-2", "invalid start port: x in input: x-2"),
        ("1-99999999999999999999", "invalid end port: 99999999999999999999"),  # Atoi: beyond int64
    ],
)
def test_port_ranges_errors(ranges: str, message: str) -> None:
    """TestParsePortRanges's errors (its first two templates lack a closing quote, so Go fails to parse them;
    the ranges are the ones it meant)."""
    with pytest.raises(RenderError, match=re.escape(message)):
        render("{{ portRanges .Values.data }}", ranges)


# TestSplitHostPort, TestSplitHostPortError
@pytest.mark.parametrize(
    ("hostport", "expected"),
    [
        ("example.org:80", "example.org - 80"),
        ("[::1]:443", "::1 - 443"),
        (":80", " - 80"),
        ("a:b:c", "address a:b:c: too many colons in address"),
        ("example.org", "address example.org: missing port in address"),
        ("[::1]", "address [::1]: missing port in address"),
        ("[::1]x:80", "address [::1]x:80: missing port in address"),
        ("[::1]::80", "address [::1]::80: too many colons in address"),
        ("[::1:80", "address [::1:80: missing ']' in address"),
        ("a]:80", "address a]:80: unexpected ']' in address"),
        ("a[:80", "address a[:80: unexpected '[' in address"),
    ],
)
def test_split_host_port(hostport: str, expected: str) -> None:
    template = "{{ with splitHostPort .Values.data }}{{.Host}} - {{.Port}}{{end}}"
    if expected.startswith("address "):
        with pytest.raises(RenderError, match=re.escape(expected)):
            render(template, hostport)
    else:
        assert render(template, hostport) == expected


# TestKubernetesSizeToBytes
@pytest.mark.parametrize(
    ("quantity", "scale", "expected"), [("1Ki", "1", "1KB"), ("1Gi", "0.5", "524288KB"), ("4Gi", "0.8", "3355444KB")]
)
def test_kubernetes_size_to_kilo_bytes(quantity: str, scale: str, expected: str) -> None:
    assert render(f'{{{{ kubernetesSizeToKiloBytes "{quantity}" {scale} }}}}') == expected


@pytest.mark.parametrize(
    ("quantity", "message"),
    [
        ("100m", "unexpected size for quantity: 100m"),  # AsInt64: not whole
        ("16Ei", "unexpected size for quantity: 16Ei"),  # AsInt64: beyond int64
        ("1x", "unable to parse quantity's suffix"),
        ("1e99999999999", "unable to parse quantity's suffix"),  # Go: the exponent is an int32
        ("1e1000000000", "an exponent beyond ±100 is refused here"),  # exact values: 10**10**9 never made
    ],
)
def test_kubernetes_size_to_kilo_bytes_errors(quantity: str, message: str) -> None:
    with pytest.raises(RenderError, match=message) as error:
        render("{{ kubernetesSizeToKiloBytes .Values.data 1 }}", quantity)
    assert (error.value.file, error.value.line) == ("foo.yaml", 1)


def test_kubernetes_size_to_kilo_bytes_overflow() -> None:
    """Go converts a float beyond int64 to whatever the platform gives (int(math.Ceil(x))); here it is an error."""
    with pytest.raises(RenderError, match="more kilobytes than an int64 holds"):
        render('{{ kubernetesSizeToKiloBytes "7Ei" 1e300 }}')
    with pytest.raises(RenderError, match="scale must be a number"):
        render('{{ kubernetesSizeToKiloBytes "7Ei" "2" }}')


# TestIndexedList
@pytest.mark.parametrize(
    ("item", "length", "expected"),
    [
        ("", "3", ",,"),  # empty template
        ("foo.bar.baz", "3", "foo.bar.baz,foo.bar.baz,foo.bar.baz"),  # no placeholder
        ("foo$.bar$.baz$", "3", "foo0.bar0.baz0,foo1.bar1.baz1,foo2.bar2.baz2"),  # multiple placeholders
        ("foo$.bar$.baz$", "-42", None),  # negative length
        ("foo$.bar$.baz$", "0", ""),  # zero length
        ("foo$.bar$.baz$", "qux", None),  # invalid string
        ("foo.bar$.baz", "3", "foo.bar0.baz,foo.bar1.baz,foo.bar2.baz"),  # common case
    ],
)
def test_indexed_list(item: str, length: str, expected: str | None) -> None:
    template = "{{ indexedList .Values.data.item (parseInt64 .Values.data.length) }}"
    data = {"item": item, "length": length}
    if expected is None:
        with pytest.raises(RenderError):
            render(template, data)
    else:
        assert render(template, data) == expected


# TestHasPrefix, TestHasSuffix
@pytest.mark.parametrize(
    ("template", "data", "expected"),
    [
        ('{{ hasPrefix .Values.data "foo" }}', "foobar", "true"),
        ('{{ hasPrefix .Values.data "bar" }}', "foobar", "false"),
        ('{{ hasPrefix .Values.data "" }}', "foobar", "true"),
        ('{{ hasPrefix .Values.data "foo" }}', "", "false"),
        ('{{ hasSuffix .Values.data "bar" }}', "foobar", "true"),
        ('{{ hasSuffix .Values.data "foo" }}', "foobar", "false"),
        ('{{ hasSuffix .Values.data "" }}', "foobar", "true"),
        ('{{ hasSuffix .Values.data "bar" }}', "", "false"),
        ('{{ if hasPrefix .Values.data "foo" }}yes{{ end }}', "foobar", "yes"),
    ],
)
def test_has_prefix_and_suffix(template: str, data: str, expected: str) -> None:
    assert render(template, data) == expected


# TestStrAppend
def test_append() -> None:
    data = {"items": ["a", "b"], "item": "c", "item2": "d"}
    assert render("{{ append .Values.data.items .Values.data.item }}", data) == "[a b c]"
    assert render("{{ append .Values.data.items .Values.data.item .Values.data.item2 }}", data) == "[a b c d]"
    assert data["items"] == ["a", "b"]


# TestNthAddressFromCIDR
@pytest.mark.parametrize(
    ("cidr", "expected"),
    [
        ("172.20.0.0/16", "172.20.0.50"),
        ("172.20.0.0/100", None),
        ("2a05:d014:9c0:bf05::/64", "2a05:d014:9c0:bf05::32"),
        ("2a05:d014:9c0:bf05::/2000", None),
        ("10.0.0.7/24", "10.0.0.50"),  # the network's address, then 50 on
    ],
)
def test_nth_address_from_cidr(cidr: str, expected: str | None) -> None:
    template = "{{ nthAddressFromCIDR .Values.data.cidr 50 }}"
    if expected is None:
        with pytest.raises(RenderError, match="invalid CIDR address"):
            render(template, {"cidr": cidr})
    else:
        assert render(template, {"cidr": cidr}) == expected


@pytest.mark.parametrize("n", ["206", "-1", "1000000000000000000000"])
def test_nth_address_that_would_wrap_is_refused(n: str) -> None:
    """CLM increments the last byte n times with no carry (a loop of n steps: 10**21 never ends; 206 steps from
    .50 give .0 of the same /24). Here: an error naming file and line, at once."""
    with pytest.raises(RenderError, match=f"address {n} of 10.0.0.50/31 is outside 0..205") as error:
        render(f"\n{{{{ nthAddressFromCIDR .Values.data {n} }}}}", "10.0.0.50/31")
    assert (error.value.file, error.value.line) == ("foo.yaml", 2)


def _pem_public_key(key: Any, label: str = "RSA PUBLIC KEY") -> str:
    der = key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    body = base64.encodebytes(der).decode()
    return f"-----BEGIN {label}-----\n{body}-----END {label}-----\n"


def _base64url(number: int) -> str:
    return base64.urlsafe_b64encode(number.to_bytes((number.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()


# TestGenerateJWKSDocument (jwks_test.go)
def test_generate_jwks_document() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    document = render("{{ generateJWKSDocument .Values.data }}", _pem_public_key(key))
    keys = json.loads(document)["keys"]
    assert len(keys) == 2
    numbers = key.public_key().public_numbers()
    assert keys[0]["n"] == keys[1]["n"] == _base64url(numbers.n)
    assert keys[0]["e"] == keys[1]["e"] == "AQAB"
    assert len(keys[0]["kid"]) > 0
    assert keys[1]["kid"] == ""
    # As Go writes it: map keys sorted, 4 spaces of indent; kid: base64url SHA-256 of the PKIX DER.
    assert document.startswith('{\n    "keys": [\n        {\n            "alg": "RS256",\n            "e": "AQAB",\n')
    assert list(keys[0]) == ["alg", "e", "kid", "kty", "n", "use"]
    assert (keys[0]["kty"], keys[0]["use"], len(keys[0]["kid"])) == ("RSA", "sig", 43)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("not a key", "Error decoding serviceAccountKey"),
        ("-----BEGIN X-----\nMA==\n-----END X-----\n", "failed to parse public key: asn1: syntax error"),
        ("-----BEGIN X-----\nMAA=\n-----END X-----\n", "failed to parse public key: x509: malformed public key"),
    ],
)
def test_generate_jwks_document_errors(key: str, message: str) -> None:
    with pytest.raises(RenderError, match=message) as error:
        render("{{ generateJWKSDocument .Values.data }}", key)
    assert (error.value.file, error.value.line) == ("foo.yaml", 1)


def test_generate_jwks_document_of_a_private_key_or_an_ec_key_is_refused_without_showing_it() -> None:
    """A config writer's template handing it anything (a private key, another key kind): CLM's error, no part of
    the input in it."""
    private = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    with pytest.raises(RenderError, match="failed to parse public key") as error:
        render("{{ generateJWKSDocument .Values.data }}", pem)
    assert pem.splitlines()[1][:12] not in str(error.value)
    with pytest.raises(RenderError, match="Public key was not RSA"):
        render("{{ generateJWKSDocument .Values.data }}", _pem_public_key(ec.generate_private_key(ec.SECP256R1())))


def test_generate_oidc_discovery_document() -> None:
    """generateOIDCDiscoveryDocument (jwks.go; CLM has no test of it): the fields in the struct's order, Go's
    escapes of `<`, `>`, `&`."""
    document = render("{{ generateOIDCDiscoveryDocument .Values.data }}", "https://kube-1.example.org?a=<b>&c")
    assert json.loads(document) == {
        "issuer": "https://kube-1.example.org?a=<b>&c",
        "authorization_endpoint": "urn:kubernetes:programmatic_authorization",
        "jwks_uri": "https://kube-1.example.org?a=<b>&c/openid-configuration/keys.json",
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
        "claims_supported": ["sub", "iss"],
    }
    assert document.startswith('{\n    "issuer": "https://kube-1.example.org?a=\\u003cb\\u003e\\u0026c",\n')
    assert document.endswith('    "claims_supported": [\n        "sub",\n        "iss"\n    ]\n}')


# Every name of CLM's FuncMap (provisioner/template.go renderTemplate, at its 2026-08 HEAD).
CLM_FUNC_MAP = """getAWSAccountID base64 base64Decode manifestHash sha256 asgSize azID azCount split join mountUnitName
accountID portRanges sgIngressRanges splitHostPort extractEndpointHosts publicKey stupsNATSubnets amiID
nodeCIDRMaxNodes nodeCIDRMaxNodesPodCIDR nodeCIDRMaxPods nthAddressFromCIDR parseInt64 generateJWKSDocument
generateOIDCDiscoveryDocument hasPrefix hasSuffix kubernetesSizeToKiloBytes indexedList zoneDistributedNodePoolGroups
nodeLifeCycleProviderPerNodePoolGroup certificateExpiry sumQuantities awsValidID indent dict list append
scaleQuantity instanceTypeCPUQuantity instanceTypeMemoryQuantity""".split()  # noqa: SIM905


@pytest.mark.parametrize("name", CLM_FUNC_MAP)
def test_every_function_of_clm_translates_to_one_the_renderer_has(name: str) -> None:
    from clm.migrate.functions import BUILTINS, function, renderer_names

    assert name in BUILTINS or function(name).name in renderer_names()


# Attacks: a config writer's template asking these functions for far more than a rendering may make.
def test_a_million_port_ranges_are_refused_before_any_is_made() -> None:
    ranges = ",".join(["1-2"] * 1_000_000)
    with pytest.raises(RenderError, match="portRanges: more than 1000 ranges") as error:
        render("{{ portRanges .Values.data }}", ranges)
    assert (error.value.file, error.value.line) == ("foo.yaml", 1)
    with pytest.raises(RenderError, match="sgIngressRanges: more than 1000 ranges"):
        render("{{ sgIngressRanges .Values.data }}", ",".join(["0.0.0.0/0:1"] * 1001))
    assert len(render("{{ len (portRanges .Values.data) }}", ",".join(["1-2"] * 1000))) == 4


def test_an_indexed_list_too_large_is_refused_before_it_is_made() -> None:
    with pytest.raises(RenderError, match="too large: indexed_list") as error:
        render('{{ indexedList "node-$.example.org" 1000000000000 }}')
    assert (error.value.file, error.value.line) == ("foo.yaml", 1)
    with pytest.raises(RenderError, match="too large"):
        render('{{ 10000000 | indexedList "x$" }}')


def test_current_values_translate_with_their_go_types() -> None:
    """`.Values.lb_subnets` and the other maps range in key order; `vpc_ipv6_cidrs` prints as Go prints a list."""
    go = "{{ .Values.vpc_ipv6_cidrs }};{{ range $az, $s := .Values.lb_subnets }}{{ $az }}={{ $s }},{{ end }};"
    go += '{{ index .Values.pod_subnets "*" }};{{ .Values.subnet_ipv6_cidrs }}'
    translation = translate(go, "foo.yaml")
    assert not translation.problems
    values = {
        "vpc_ipv6_cidrs": ["2a05::/56"],
        "lb_subnets": {"b": "subnet-2", "a": "subnet-1", "*": "subnet-1,subnet-2"},
        "pod_subnets": {"*": "subnet-3"},
        "subnet_ipv6_cidrs": "",
    }
    rendered = TemplateEnvironment({"foo.yaml": translation.text.encode()}).render("foo.yaml", {"values": values})
    assert rendered == "[2a05::/56];*=subnet-1,subnet-2,a=subnet-1,b=subnet-2,;subnet-3;"
