"""`clm render --out` writes inside OUT/<local id>/ only. An object's metadata.name naming parent folders, from a
template or from the cluster's free-text alias spliced into it, is refused at render (no Kubernetes name holds `/`:
tests/unit/test_object_names.py) naming cluster, file, line and field; any other name a file takes (a kind, a
component) becomes a file name without `/`; a path that would still resolve outside its cluster's folder (a symbolic
link on its way), or two clusters sharing a folder, stops the command naming the cluster and the file. Whatever
stops the command, nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from clm.cli.main import cli
from clm.render.artefacts import file_name

EXAMPLES = Path(__file__).parents[2] / "examples"
KUBE_1 = "aws:123456789012:eu-central-1:kube-1"
OBJECT = "apiVersion: v1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: example\n"
BY_TEMPLATE = OBJECT.format(kind="ConfigMap", name="../../../../../escaped-by-template")
BY_ALIAS = OBJECT.format(kind="ConfigMap", name="{{ cluster.alias }}")
ALIAS = "../../../../../../escaped-by-alias"


def setup(tmp_path: Path, template: str = "", alias: str = "dev", local_id: str = "kube-2") -> list[str]:
    """The example config with a component `escape` of `template`, the examples' registry with kube-1's alias
    `alias` and kube-2's local id `local_id`; returns the render command's arguments (OUT: tmp_path/parent/out)."""
    shutil.copytree(EXAMPLES / "config", tmp_path / "config")
    (tmp_path / "config/cluster/manifests/escape").mkdir()
    (tmp_path / "config/cluster/manifests/escape/names.yaml").write_text(template)
    registry = yaml.safe_load((EXAMPLES / "clusters.yaml").read_text())
    registry["clusters"][0]["alias"] = alias
    registry["clusters"][1]["local_id"] = local_id
    (tmp_path / "clusters.yaml").write_text(yaml.safe_dump(registry))
    (tmp_path / "parent/out").mkdir(parents=True)
    config, clusters = str(tmp_path / "config"), str(tmp_path / "clusters.yaml")
    return ["render", "all", "--config", config, "--registry-file", clusters, "--out", str(tmp_path / "parent/out")]


def listing(root: Path) -> list[str]:
    """Every path under `root`, relative, sorted."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


@pytest.mark.parametrize(
    ("template", "alias", "name"),
    [(BY_TEMPLATE, "dev", "../../../../../escaped-by-template"), (BY_ALIAS, ALIAS, ALIAS)],
    ids=["template", "registry-alias"],
)
def test_an_object_named_by_parent_folders_is_refused_naming_cluster_file_line_and_field(
    tmp_path: Path, template: str, alias: str, name: str
) -> None:
    args = setup(tmp_path, template, alias)
    before = listing(tmp_path)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert str(result.exception) == (
        f"cluster {KUBE_1}: cluster/manifests/escape/names.yaml:4: document 1: ConfigMap: metadata.name "
        f"{name!r} may not contain '/'"
    )
    assert listing(tmp_path) == before  # nothing written, inside --out or outside


def test_other_names_become_file_names_inside_the_clusters_folder(tmp_path: Path) -> None:
    args = setup(tmp_path, OBJECT.format(kind="../../../../../../Escaped", name="x"))
    before = listing(tmp_path)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.output, result.exception)
    added = set(listing(tmp_path)) - set(before)
    assert added and all(path.startswith("parent/out/") for path in added)
    assert set(listing(tmp_path)) >= set(before)  # nothing outside changed
    assert [path for path in sorted(added) if "scaped" in path] == [
        f"parent/out/{local_id}/manifests/02-escape/001-.._.._.._.._.._.._escaped-x.yaml"
        for local_id in ("kube-1", "kube-2")
    ]


def test_a_symbolic_link_out_of_the_folder_stops_the_command_naming_cluster_and_file(tmp_path: Path) -> None:
    args = setup(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "parent/out/kube-1").mkdir()
    (tmp_path / "parent/out/kube-1/manifests").symlink_to(elsewhere)
    before = listing(tmp_path)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    message = str(result.exception)
    file = "manifests/01-cluster-config/001-configmap-cluster-info.yaml"
    assert f"cluster {KUBE_1}: {file}: would be written to {elsewhere.resolve()}/" in message
    assert f"outside {(tmp_path / 'parent/out/kube-1').resolve()}" in message
    assert listing(tmp_path) == before  # nothing written, of this cluster or of the other


def test_two_clusters_with_one_local_id_stop_the_command_naming_both(tmp_path: Path) -> None:
    args = setup(tmp_path, local_id="kube-1")
    before = listing(tmp_path)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    assert f"clusters {KUBE_1} and aws:123456789012:eu-central-1:kube-2 both have local_id 'kube-1'" in str(
        result.exception
    )
    assert listing(tmp_path) == before


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../../x", ".._.._x"),
        ("..", "__"),
        (".", "_"),
        ("", "_"),
        ("a\\b\x00c", "a_b_c"),
        ("system:aggregate-to-admin", "system:aggregate-to-admin"),
        ("web.v1_x", "web.v1_x"),
    ],
)
def test_file_names_hold_no_separator_and_never_name_a_folder(name: str, expected: str) -> None:
    assert file_name(name) == expected
