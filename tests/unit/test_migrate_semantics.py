"""Translated templates render what the Go originals mean: each case's expected output is written from Go's
documented semantics (https://pkg.go.dev/text/template, fmt), then the template is translated by
`clm migrate` and rendered by CLM's Jinja2 renderer (sandboxed, StrictUndefined)."""

from __future__ import annotations

import pytest

from clm.errors import RenderError
from clm.migrate.translator import translate
from clm.model import Cluster, NodePool
from clm.render.environment import TemplateEnvironment
from clm.render.origins import registry_view

POOL = NodePool(
    name="default-worker",
    profile="worker-splitaz",
    min_size=1,
    max_size=5,
    instance_types=["m5.large", "m5.xlarge"],
    discount_strategy="spot",
    config_items={"taints": ""},
)
CLUSTER = Cluster(
    id="aws:123456789012:eu-central-1:kube-1",
    local_id="kube-1",
    alias="kube-one",
    infrastructure_account="aws:123456789012",
    region="eu-central-1",
    provider="zalando-aws",
    environment="production",
    config_items={"a": "x", "empty": "", "list": "a,b,c", "n": "3", "labels": "k1=v1,k2=v2"},
    node_pools=[POOL],
)
VALUES = {
    "availability_zones": ["eu-central-1a", "eu-central-1b"],
    "subnets": {"eu-central-1a": "subnet-a", "eu-central-1b": "subnet-b"},
    "hosted_zone": "example.org",
    "none": None,
    "m": {"b": 2, "a": 1},
}

CASES = [
    # Field paths: .Cluster, .NodePool, .Values, $.
    ("{{ .Cluster.ID }}", "aws:123456789012:eu-central-1:kube-1"),
    ("{{ .Cluster.LocalID }}-{{ .Cluster.Alias }}", "kube-1-kube-one"),
    ("{{ .Cluster.ConfigItems.a }}", "x"),
    ("{{ .NodePool.Name }}", "default-worker"),
    ("{{ .NodePool.MinSize }}/{{ .NodePool.MaxSize }}", "1/5"),
    ("{{ .NodePool.IsSpot }}", "true"),
    ("{{ .Values.hosted_zone }}", "example.org"),
    ("{{ $.Cluster.LocalID }}", "kube-1"),
    ("{{ range .Cluster.NodePools }}{{ .Name }}{{ end }}", "default-worker"),
    # if / else if / else, truthiness of empty values.
    ('{{ if eq .Cluster.ConfigItems.a "x" }}yes{{ end }}', "yes"),
    ("{{ if .Cluster.ConfigItems.empty }}t{{ else }}f{{ end }}", "f"),
    ("{{ if .Values.none }}t{{ else }}f{{ end }}", "f"),
    ("{{ if .Values.availability_zones }}t{{ end }}", "t"),
    ("{{ if 0 }}t{{ else }}f{{ end }}", "f"),
    (
        '{{ if eq .Cluster.ConfigItems.n "1" }}one{{ else if eq .Cluster.ConfigItems.n "2" }}two'
        '{{ else if eq .Cluster.ConfigItems.n "3" }}three{{ else }}many{{ end }}',
        "three",
    ),
    ('{{ if and false true }}a{{ else if or false "" }}b{{ else }}c{{ end }}', "c"),
    # eq with several arguments, ne, lt/le/gt/ge.
    ('{{ if eq .Cluster.ConfigItems.a "y" "z" "x" }}any{{ else }}none{{ end }}', "any"),
    ('{{ if eq .Cluster.ConfigItems.a "y" "z" }}any{{ else }}none{{ end }}', "none"),
    ('{{ if ne .Cluster.Environment "test" }}prod{{ end }}', "prod"),
    ("{{ eq .NodePool.MinSize 1 }}", "true"),
    ('{{ eq "a" "b" }}', "false"),
    ('{{ lt 1 2 }} {{ le 2 2 }} {{ gt 1 2 }} {{ ge "b" "a" }}', "true true false true"),
    # and / or return an operand; not.
    ('{{ and "p" "q" }}', "q"),
    ('[{{ and "p" "" "q" }}]', "[]"),
    ('{{ or "" "q" }}', "q"),
    ('{{ or .Cluster.ConfigItems.empty "default" }}', "default"),
    ('[{{ or 0 "" }}]', "[]"),
    ("{{ not .Cluster.ConfigItems.empty }}", "true"),
    ('{{ not "x" }}', "false"),
    ('{{ if and (eq .Cluster.ConfigItems.a "x") (not .Cluster.ConfigItems.empty) }}ok{{ end }}', "ok"),
    ('{{ if not (eq .Cluster.ConfigItems.a "y") }}ne{{ end }}', "ne"),
    ('{{ if and (not (index .Cluster.ConfigItems "missing")) (eq .Cluster.ConfigItems.a "x") }}ok{{ end }}', "ok"),
    ('{{ or (index .Cluster.ConfigItems "missing") "fallback" }}', "fallback"),
    # len, index on maps and lists.
    ("{{ len .NodePool.InstanceTypes }}", "2"),
    ("{{ len .Cluster.ConfigItems.a }}", "1"),
    ("{{ len .Values.m }}", "2"),
    ("{{ index .NodePool.InstanceTypes 1 }}", "m5.xlarge"),
    ('{{ index .Cluster.ConfigItems "a" }}', "x"),
    ('[{{ index .Cluster.ConfigItems "missing" }}]', "[]"),
    ('{{ if index .Cluster.ConfigItems "missing" }}t{{ else }}f{{ end }}', "f"),
    ('{{ index .Values.subnets "eu-central-1b" }}', "subnet-b"),
    ('{{ index (split .Cluster.ConfigItems.list ",") 2 }}', "c"),
    ('{{ index (split (index (split "img:v1-2" ":") 1) "-") 0 }}', "v1"),
    # range: with and without variables, over lists and maps, else, nested scoping of . and $.
    ('{{ range split .Cluster.ConfigItems.list "," }}[{{ . }}]{{ end }}', "[a][b][c]"),
    ('{{ range $i, $x := split .Cluster.ConfigItems.list "," }}{{ $i }}={{ $x }};{{ end }}', "0=a;1=b;2=c;"),
    ("{{ range $x := .NodePool.InstanceTypes }}{{ $x }} {{ end }}", "m5.large m5.xlarge "),
    ("{{ range .Values.m }}{{ . }}{{ end }}", "12"),
    ("{{ range $k, $v := .Values.m }}{{ $k }}={{ $v }},{{ end }}", "a=1,b=2,"),
    ('{{ range split .Cluster.ConfigItems.empty "," }}x{{ else }}empty{{ end }}', "empty"),
    (
        '{{ range $az := .Values.availability_zones }}{{ range split $.Cluster.ConfigItems.list "," }}'
        "{{ $az }}:{{ . }} {{ end }}{{ end }}",
        "eu-central-1a:a eu-central-1a:b eu-central-1a:c eu-central-1b:a eu-central-1b:b eu-central-1b:c ",
    ),
    ("{{ range .NodePool.InstanceTypes }}{{ $.NodePool.Name }};{{ end }}", "default-worker;default-worker;"),
    (
        "{{ range .NodePool.InstanceTypes }}{{ with $.Cluster.ConfigItems.a }}{{ . }}{{ end }}{{ . }};{{ end }}",
        "xm5.large;xm5.xlarge;",
    ),
    (
        '{{ range split .Cluster.ConfigItems.labels "," }}{{ $kv := split . "=" }}'
        "{{ index $kv 0 }}:{{ index $kv 1 }} {{ end }}",
        "k1:v1 k2:v2 ",
    ),
    # with: dot, else, variables, the whole data.
    ("{{ with .Cluster.ConfigItems.a }}[{{ . }}]{{ end }}", "[x]"),
    ("{{ with .Cluster.ConfigItems.empty }}[{{ . }}]{{ else }}none{{ end }}", "none"),
    ('{{ with $v := index .Values.subnets "eu-central-1a" }}{{ $v }}/{{ . }}{{ end }}', "subnet-a/subnet-a"),
    ("{{ with $data := . }}{{ $data.Cluster.LocalID }}{{ end }}", "kube-1"),
    (
        "{{ with $values := .Values }}{{ range $az := $values.availability_zones }}"
        "{{ index $values.subnets $az }} {{ end }}{{ end }}",
        "subnet-a subnet-b ",
    ),
    # Variables: declaration, assignment, scoping.
    ('{{ $x := "a" }}{{ $x }}', "a"),
    ('{{ $x := "a" }}{{ $x = "b" }}{{ $x }}', "b"),
    ('{{ $x := "outer" }}{{ if true }}{{ $x := "inner" }}{{ $x }}{{ end }} {{ $x }}', "inner outer"),
    ('{{ $s := "" }}{{ range split .Cluster.ConfigItems.list "," }}{{ $s = print $s . }}{{ end }}{{ $s }}', "abc"),
    ('{{ $s := "a" }}{{ if true }}{{ $s = "b" }}{{ end }}{{ $s }}', "b"),
    (
        '{{ range $az := .Values.availability_zones }}{{ $last := "" }}{{ range split $.Cluster.ConfigItems.list "," }}'
        "{{ $last = . }}{{ end }}{{ $az }}={{ $last }} {{ end }}",
        "eu-central-1a=c eu-central-1b=c ",
    ),
    ('{{ if $x := index .Cluster.ConfigItems "a" }}{{ $x }}{{ end }}', "x"),
    ('{{ $if := "i" }}{{ $loop := "l" }}{{ $if }}{{ $loop }}', "il"),
    ("x\n{{- with $v := .Cluster.ConfigItems.a }}\n{{ $v }}{{ end }}", "x\nx"),
    # Trim markers and comments.
    ('a  {{- "b" -}}  \n c', "abc"),
    ("x\n{{- if true }}\ny\n{{- end }}\nz", "x\ny\nz"),
    ('a\n  {{- range split .Cluster.ConfigItems.list "," }}\n  - {{ . }}\n  {{- end }}\n', "a\n  - a\n  - b\n  - c\n"),
    ("a{{/* note */}}b", "ab"),
    ("a {{- /* note\n spanning lines */ -}} b", "ab"),
    # printf verbs, print, println.
    ('{{ printf "%s-%d" .Cluster.LocalID .NodePool.MaxSize }}', "kube-1-5"),
    ('{{ printf "%q" .Cluster.ConfigItems.a }}', '"x"'),
    ('{{ printf "%q" "a\\"b\\n" }}', '"a\\"b\\n"'),
    (
        '{{ printf "%v %v %v" .NodePool.IsSpot .NodePool.InstanceTypes .Values.none }}',
        "true [m5.large m5.xlarge] <nil>",
    ),
    ('{{ printf "%02d" 7 }}', "07"),
    ('{{ printf "|%5s|%-5s|" "ab" "cd" }}', "|   ab|cd   |"),
    ('{{ printf "%x %X" 255 "hi" }}', "ff 6869"),
    ('{{ printf "%s %s" "a" }}', "a %!s(MISSING)"),
    ('{{ printf "%d" "a" }}', "%!d(string=a)"),
    ('{{ printf "x" 1 }}', "x%!(EXTRA int=1)"),
    ('{{ printf "100%%" }}', "100%"),
    ('{{ printf "%v %v %v %v" 1000000.0 100000.0 1.5 0.00001 }}', "1e+06 100000 1.5 1e-05"),
    ('{{ printf "%.2f|%t|%c|%+d|%#x|%-4d|" 3.14159 true 65 5 255 7 }}', "3.14|true|A|+5|0xff|7   |"),
    ("{{ 2.5 }}", "2.5"),
    ('{{ printf "%v" .Values.m }}', "map[a:1 b:2]"),
    ('{{ print "a" 1 2 "b" }}', "a1 2b"),
    ('{{ print "image:" .Cluster.ConfigItems.a }}', "image:x"),
    ('{{ println "a" 1 }}', "a 1\n"),
    # Pipelines and parenthesised calls.
    ('{{ .Cluster.ConfigItems.a | printf "%s!" }}', "x!"),
    ('{{ "aGk=" | base64Decode }}', "hi"),
    ("{{ .Cluster.LocalID | base64 }}", "a3ViZS0x"),
    ('{{ printf "%s" "v" | base64 }}', "dg=="),
    ('{{ "a\\nb" | indent 2 }}', "  a\n  b"),
    ('{{ join "," .NodePool.InstanceTypes }}', "m5.large,m5.xlarge"),
    ("{{ accountID .Cluster.InfrastructureAccount }}", "123456789012"),
    ("{{ if gt (parseInt64 .Cluster.ConfigItems.n) 2 }}big{{ end }}", "big"),
    # define / template / block.
    ('{{ define "t" }}[{{ .name }}]{{ end }}{{ template "t" dict "name" "n" }}', "[n]"),
    ('{{ template "t" dict "name" "n" }}{{ define "t" }}<{{ .name }}>{{ end }}', "<n>"),
    ('{{ template "t" dict "Cluster" .Cluster }}{{ define "t" }}{{ .Cluster.ConfigItems.a }}{{ end }}', "x"),
    (
        '{{ define "t" }}{{ $.x }}{{ range $.l }}{{ . }}{{ end }}{{ end }}{{ template "t" dict "x" 1 "l" (list 2 3) }}',
        "123",
    ),
    ('{{ block "b" .Cluster.ConfigItems.a }}<{{ . }}>{{ end }}', "<x>"),
    (
        '{{ define "b" }}[{{ . }}]{{ end }}{{ template "a" "v" }}{{ define "a" }}{{ template "b" . }}{{ end }}',
        "[v]",
    ),
    # Values printed as Go prints them; literals; text that is Jinja syntax.
    ("{{ .Values.subnets }}", "map[eu-central-1a:subnet-a eu-central-1b:subnet-b]"),
    ("{{ .NodePool.InstanceTypes }}", "[m5.large m5.xlarge]"),
    ('{{ "a\\tb" }}', "a\tb"),
    ("{{ `x\\n` }}", "x\\n"),
    ("{{ 'a' }}", "97"),
    ("{% raw %} {# x #} {{ `{{` }}", "{% raw %} {# x #} {{"),
    ('{ {{ "x" }}}', "{ x}"),
    ('{{ print\n  "a"\n  "b" }}', "ab"),
]


def render(go_template: str) -> str:
    translation = translate(go_template, "t.yaml")
    assert not translation.problems, translation.problems
    env = TemplateEnvironment({"t.yaml": translation.text.encode()})
    view = registry_view(CLUSTER)
    context = {"cluster": view, "node_pool": view.node_pools[0], "values": VALUES}
    return env.render("t.yaml", context)


@pytest.mark.parametrize(("go_template", "expected"), CASES, ids=[str(i) for i in range(len(CASES))])
def test_translation_renders_what_go_renders(go_template: str, expected: str) -> None:
    assert render(go_template) == expected


def test_the_table_covers_enough_cases() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize(
    ("go_template", "reason"),
    [
        ('{{ html "<a>" }}', "`html`"),
        ("{{ range .NodePool.InstanceTypes }}{{ break }}{{ end }}", "{{break}}"),
        ('{{ template "nowhere" . }}', "not defined in this file"),
    ],
)
def test_what_has_no_translation_is_marked_and_fails_if_reached(go_template: str, reason: str) -> None:
    translation = translate(go_template, "t.yaml")
    assert [p.line for p in translation.problems] == [1]
    assert reason in translation.problems[0].reason
    assert "{# clm migrate: cannot translate" in translation.text
    env = TemplateEnvironment({"t.yaml": translation.text.encode()})
    view = registry_view(CLUSTER)
    with pytest.raises(RenderError, match="clm migrate could not translate"):
        env.render("t.yaml", {"cluster": view, "node_pool": view.node_pools[0], "values": VALUES})


def test_lines_and_comments_are_kept() -> None:
    source = '{{/* a comment */}}\nkey: {{ .Cluster.ID }}\n{{- if eq .Cluster.Region\n  "x" }}\nb\n{{ end }}\n'
    text = translate(source, "t.yaml").text
    assert text.count("\n") == source.count("\n")
    assert text.startswith("{# a comment #}\nkey: {{ cluster.id }}\n{%- if cluster.region == ")


def test_the_whole_data_passed_to_a_template_works_where_there_is_no_node_pool() -> None:
    go = '{{ define "t" }}{{ .Cluster.LocalID }}/{{ $.Values.hosted_zone }}{{ end }}{{ template "t" . }}'
    env = TemplateEnvironment({"t.yaml": translate(go, "t.yaml").text.encode()})
    assert env.render("t.yaml", {"cluster": registry_view(CLUSTER), "values": VALUES}) == "kube-1/example.org"


def test_a_problem_inside_a_define_is_reported_once() -> None:
    translation = translate('{{ template "t" 1 }}\n{{ define "t" }}\n{{ html . }}{{ end }}', "t.yaml")
    assert [str(p) for p in translation.problems] == ["t.yaml:3: Go's `html` with 1 argument(s) has no translation"]
