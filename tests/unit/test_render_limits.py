"""What a template makes is bounded (clm.render.limits): an operator, filter, function or method that would make a
value over MAX_VALUE, output over MAX_OUTPUT, values adding up over MAX_MADE, is a RenderError naming the file and
line, raised fast, before anything is stored. On main, `{{ 'a' * 10**10 }}` failed with "error: " and no message
(a MemoryError), others allocated gigabytes first or ran until the function was killed."""

from __future__ import annotations

import time
from typing import Any

import boto3
import pytest

from clm.errors import RenderError
from clm.render.environment import TemplateEnvironment
from clm.render.limits import MAX_INT_BITS, MAX_MADE, MAX_OUTPUT, MAX_VALUE
from clm.workflow.render_step import render_to_s3
from tests.unit.test_fuzz_render import BUCKET, CLUSTERS, LAST_MANIFEST, with_file

HEAD = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata:\n  x: |\n"  # the body starts on line 6
G = 10**9
# (template body, what the error names); each makes about a gigabyte or more.
# fmt: off
ATTACKS = [
    ("{{ 'a' * 10**10 }}", "a str of 1 character * 10000000000 would make 10,000,000,000 characters"),
    ("{{ [1, 2] * 10**9 }}", "a list of 2 items * 1000000000 would make"),
    ("{{ 9 ** (10**6) }}", f"9 ** 1000000 would make an integer of 3,169,926 bits; at most {MAX_INT_BITS:,}"),
    ("{{ 'a' | center(10**9) }}", "filter center would make 1,000,000,000 characters"),
    ("{{ 'a\\nb\\nc' | indent(10**9) }}", "filter indent would make 3,000,000,005 characters"),
    ("{{ ('a ' * 1000) | wordwrap(1, true, 'x' * 10000) }}", "filter wordwrap would make 20,002,000 characters"),
    ("{{ '%0999999999d' | format(1) }}", "filter format would make 1,000,000,0"),
    ("{{ '%*d' % (10**9, 1) }}", "a str of 3 characters % a tuple of 2 items would make 1,000,000,0"),
    ("{{ '{:>1000000000}'.format(1) }}", "str.format() would make 1,000,000,0"),
    ("{{ '{a:>{w}}'.format_map({'a': 1, 'w': 10**9}) }}", "str.format_map() would make 1,000,000,0"),
    ("{{ '{:{w}}'.format('a', w=10**9) }}", "str.format() would make 1,000,000,0"),
    ("{{ 'x'.ljust(10**9) }}", "str.ljust() would make 1,000,000,000 characters"),
    ("{{ 'x'.zfill(10**9) }}", "str.zfill() would make 1,000,000,000 characters"),
    ("{{ '\t\t'.expandtabs(10**9) }}", "str.expandtabs() would make 2,000,000,002 characters"),
    ("{{ ('a' * 1000).replace('a', 'b' * 10**6) }}", "str.replace() would make 1,000,000,000 characters"),
    ("{{ ('a' * 1000) | replace('a', 'b' * 10**6) }}", "filter replace would make 1,000,000,000 characters"),
    ("{{ range(100000) | join('x' * 10**4) }}", "filter join would make 1,000,"),
    ("{{ ('x' * 10**4).join(['y'] * 10**5) }}", "str.join() would make 1,000,"),
    ("{{ join('x' * 10**4, range(100000)) }}", "join() would make 1,000,"),
    ("{{ indent(10**9, 'a') }}", "indent() would make 1,000,000,001 characters"),
    ("{{ printf('%1000000000d', 1) }}", "printf() would make 1,000,000,"),
    ("{{ printf('%*d', 10**9, 1) }}", "printf() would make 1,000,000,"),
    ("{{ lipsum(10**6) }}", "lipsum() would make 1,616,000,000 characters"),
    ("{{ [1] | batch(10**9, 0) | list }}", "filter batch would make 1,000,000,001 characters or items"),
    ("{% set b = 'b' * 4000000 %}{{ ('a' * 1000).translate({97: b}) }}",
     "str.translate() would make 4,000,000,000 characters"),
    ("{% set a = ['x' * 4000000] %}{{ [a, a] }}", "{{ ... }} is given a list of 2 items whose text is over"),
    ("{% set a = ['x' * 3000000] %}{{ [a, a] | tojson }}", "filter tojson is given a list of 2 items whose text"),
    ("{% set a = ['x' * 3000000] %}{{ [a, a] ~ '' }}", "~ is given a list of 2 items whose text is over"),
    ("{% set a = ['x' * 3000000] %}{% set b = [a, a] %}{{ 'x' }}", "x"),  # made, never used: no error
    ("{% set l = ['a' * 1000] %}{% for i in range(40) %}{{ l.extend(l) }}{% endfor %}",
     "list.extend() is given a list of"),
    ("{% set ns = namespace(l=['a']) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
     "a list of 1,048,576 items + a list of 1,048,576 items would make"),
    ("{% set ns = namespace(x=3) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}",
     f"3,247 bits * an integer of 3,247 bits would make an integer of 6,494 bits; at most {MAX_INT_BITS:,}"),
    ("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}",
     "a value nested deeper than 100 levels"),
    ("{% for i in range(100000) %}{% for j in range(1000) %}xxxxxxxxxx{% endfor %}{% endfor %}",
     f"the rendering writes more than {MAX_OUTPUT:,} characters"),
    ("{% set x %}{% for i in range(100000) %}{{ 'y' * 4000000 }}{% endfor %}{% endset %}",
     f"the rendering writes more than {MAX_OUTPUT:,} characters"),
    ("{% macro m() %}{% for i in range(100000) %}{{ caller() }}{% endfor %}{% endmacro %}"
     "{% call m() %}{{ 'z' * 1000 }}{% endcall %}", f"the rendering writes more than {MAX_OUTPUT:,} characters"),
    ("{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set _ = ns.l.append(('x' * 3000000).upper()) %}"
     "{% endfor %}", "list.append() is given a list of 2 items whose text is over"),
    ("{% for i in range(100) %}{% set x = ('x' * 3000000).upper() %}{% endfor %}",
     f"the values this rendering made add up to more than {MAX_MADE:,} characters or items"),
    # A list grown by `+` in a loop: each sum counted from the sizes of its parts (was 14 s of CPU at 15,887 turns).
    ("{% set ns = namespace(l=[]) %}{% for i in range(15887) %}{% set ns.l = ns.l + [''] %}{% endfor %}",
     f"the values this rendering made add up to more than {MAX_MADE:,} characters or items"),
    # ... and a list whose size `+` remembered, then grown by its own method: counted again, not from memory.
    ("{% set ns = namespace(l=[]) %}{% set ns.l = ns.l + ['x'] %}{% for i in range(3) %}"
     "{% set _ = ns.l.append(('y' * 2000000).upper()) %}{% endfor %}", "list.append() is given a list of 4 items"),
]
# fmt: on


def render(body: str) -> str:
    """`body` as the only template of an environment."""
    return TemplateEnvironment({"t.yaml": body.encode()}).render("t.yaml", {}, "c")


@pytest.mark.parametrize(("body", "named"), ATTACKS)
def test_a_template_making_too_much_fails_fast_naming_file_and_line(body: str, named: str) -> None:
    template = f"a: 1\n{body}\n"
    started = time.monotonic()
    if named == "x":
        assert render(template) == "a: 1\nx\n"
        return
    with pytest.raises(RenderError) as error:
        render(template)
    assert time.monotonic() - started < 10
    assert error.value.file == "t.yaml" and error.value.line == 2, str(error.value)
    assert str(error.value).startswith("cluster c: t.yaml:2: too large: "), str(error.value)
    assert named in str(error.value), str(error.value)


@pytest.mark.parametrize(
    ("body", "size"),
    [
        ("{{ ('a' * N) | length }}", MAX_VALUE),
        ("{{ ('a' | center(N)) | length }}", MAX_VALUE),
        ("{{ ([1] * N) | length }}", (MAX_VALUE - 2) // 4),  # a list of small numbers: 4 characters an item
        ("{{ ('a'.ljust(N) ~ '') | length }}", MAX_VALUE),
    ],
)
def test_values_up_to_the_limit_are_made(body: str, size: int) -> None:
    assert render(body.replace("N", str(size))) == str(size)
    with pytest.raises(RenderError, match="too large: "):
        render(body.replace("N", str(size + 1)))


def test_output_up_to_the_limit_is_written() -> None:
    """MAX_OUTPUT characters of output render; one more is refused. Each rendering counts from zero."""
    env = TemplateEnvironment({"t.yaml": b"{% for i in range(N // 1024) %}" + b"x" * 1024 + b"{% endfor %}"})
    for _ in range(2):
        assert len(env.render("t.yaml", {"N": MAX_OUTPUT})) == MAX_OUTPUT
    with pytest.raises(RenderError, match=f"the rendering writes more than {MAX_OUTPUT:,} characters"):
        env.render("t.yaml", {"N": MAX_OUTPUT + 1024})


@pytest.fixture
def s3(aws: boto3.Session) -> Any:
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-central-1"})
    return client


@pytest.mark.parametrize("body", ["{{ 'a' * 10**10 }}", "{{ 'a' | center(10**10) }}", "{{ '%*d' % (10**10, 1) }}"])
def test_the_renderer_names_cluster_file_and_line_and_stores_nothing(s3: Any, body: str) -> None:
    """The brief's attack through the render step: a RenderError naming the cluster, the manifest and its line,
    before anything is stored."""
    tree = with_file(LAST_MANIFEST, (HEAD + f"    {body}\n").encode())
    for cluster in CLUSTERS:
        with pytest.raises(RenderError) as error:
            render_to_s3(s3, BUCKET, tree, cluster)
        assert str(error.value).startswith(f"cluster {cluster.id}: {LAST_MANIFEST}:6: too large: "), str(error.value)
    assert s3.list_objects_v2(Bucket=BUCKET)["KeyCount"] == 0


def test_an_error_without_a_message_is_named_by_its_type() -> None:
    """An exception whose text is empty (a MemoryError) says what it was, not "error: "."""
    env = TemplateEnvironment({"t.yaml": b"{{ fail() }}"})

    def fail() -> None:
        raise MemoryError

    with pytest.raises(RenderError, match=r"t\.yaml:1: error: MemoryError$"):
        env.render("t.yaml", {"fail": fail})
