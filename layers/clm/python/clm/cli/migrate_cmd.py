"""`clm migrate`: translate a Zalando CLM configuration (Go templates) into CLM's Jinja2 templates."""

from __future__ import annotations

from pathlib import Path

import click

HELP = """Translate the Go templates of a Zalando CLM configuration in SRC into Jinja2 templates in DEST.

\b
SRC is a configuration repository (cluster/config-defaults.yaml, cluster/cluster.yaml,
cluster/node-pools/<profile>/*.yaml, cluster/manifests/<component>/*.yaml, ...). Every
YAML file is translated; other files are copied; symbolic links inside SRC stay links.
DEST must be a new (or empty) folder: nothing is written if it is not.

\b
What changes, keeping each file's lines, comments and trim markers (`{{-`, `-}}`):
  {{ .Cluster.ConfigItems.foo }}           {{ cluster.config_items.foo }}
  {{ if eq .NodePool.Profile "a" "b" }}    {% if node_pool.profile in ("a", "b") %}
  {{ range $i, $x := split .X "," }}       {% for x in split(cluster.x, ",") %}{% set i = loop.index0 %}
  {{ with $v := .Values.zone }}            {% set v = values.zone %}{% if v %}
  {{ index .NodePool.ConfigItems "t" }}    {{ node_pool.config_items.get("t", "") }}
  {{ printf "%s-%02d" .Cluster.ID 7 }}     {{ printf("%s-%02d", cluster.id, 7) }}
  {{ .Values.UserData | indent 4 }}        {{ indent(4, values.UserData) }}
  {{ define "x" }}..{{ template "x" . }}   {% macro x(data) %}..{{ x(...) }}
Go's meaning is kept: `and`/`or` return an operand, empty values are false, a missing map key
read with `index` is "", printf uses Go's verbs, `range` over a map goes in key order.
CLM functions become snake_case (`accountID` -> `account_id`); the report lists those the
renderer does not have yet, and the fields (`node_pool.taints`) the model lacks.

\b
What has no faithful translation is marked, never guessed: a comment
  {# clm migrate: cannot translate (why): <the Go original> #}
and `untranslated("file:line: why")` in its place, which fails the rendering if reached.
Every marked place is reported as file:line. Exit status: 0 when nothing is marked,
1 when something is marked or a file does not parse (as Go's parser would refuse it).

\b
Examples:
  clm migrate ../kubernetes-on-aws config --check     what would be written and marked
  clm migrate ../kubernetes-on-aws config             translate; print a summary
  clm migrate ../kubernetes-on-aws config --report    also list missing functions and fields
  clm render CLUSTER_ID --config config --registry-file clusters.yaml --out rendered/
"""


@click.command(help=HELP)
@click.argument("src", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("dest", type=click.Path(file_okay=False, path_type=Path), required=False)
@click.option("--check", is_flag=True, help="Write nothing: list what would be written and marked.")
@click.option("--report", is_flag=True, help="Also list each function and field the renderer lacks, with files.")
def migrate(src: Path, dest: Path | None, check: bool, report: bool) -> None:
    """Translate SRC's Go templates into Jinja2 templates in DEST."""
    from clm.migrate.tree import migrate_tree, report_lines

    if dest is None and not check:
        raise click.UsageError("DEST is required (or pass --check to only see what would be done)")
    if dest is not None and not check and dest.exists() and any(dest.iterdir()):
        raise click.UsageError(f"{dest} is not empty: choose a new folder, nothing was written")
    result = migrate_tree(src, None if check else dest)
    if check:
        for name in result.translated:
            click.echo(f"would translate  {name}")
        for name in result.copied:
            click.echo(f"would copy       {name}")
        for name in result.linked:
            click.echo(f"would link       {name}")
    lines = report_lines(result)
    missing = [line for line in lines if line.startswith("missing ")]
    for line in lines:
        if report or not line.startswith("missing "):
            click.echo(line)
    if missing and not report:
        click.echo(f"{len(missing)} functions and fields the renderer lacks (--report lists them)")
    if result.marked or result.errors:
        raise SystemExit(1)
