"""`clm migrate`: help that teaches, a dry run, errors naming file and line, links kept, nothing half-written."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from clm.cli.main import cli


def tree(root: Path) -> Path:
    (root / "cluster/node-pools/a").mkdir(parents=True)
    (root / "cluster/node-pools/a/stack.yaml").write_text("Name: {{ .NodePool.Name }}\n")
    (root / "cluster/node-pools/b").mkdir(parents=True)
    (root / "cluster/node-pools/b/stack.yaml").symlink_to("../a/stack.yaml")
    (root / "cluster/manifests/x").mkdir(parents=True)
    (root / "cluster/manifests/x/cm.yaml").write_text('{{ if .Cluster.ConfigItems.x }}\n{{ html "a" }}\n{{ end }}\n')
    (root / "README.md").write_text("{{ not a template }}")
    return root


def test_help_teaches_the_translation() -> None:
    result = CliRunner().invoke(cli, ["migrate", "--help"])
    assert result.exit_code == 0
    for text in ("cluster.config_items.foo", "--check", "untranslated(", "file:line", "account_id"):
        assert text in result.output


def test_check_lists_and_writes_nothing(tmp_path: Path) -> None:
    src, dest = tree(tmp_path / "src"), tmp_path / "dest"
    result = CliRunner().invoke(cli, ["migrate", str(src), str(dest), "--check"])
    assert "would translate  cluster/manifests/x/cm.yaml" in result.output
    assert "would link       cluster/node-pools/b/stack.yaml" in result.output
    assert "would copy       README.md" in result.output
    assert "marked  cluster/manifests/x/cm.yaml:2: Go's `html` with 1 argument(s) has no translation" in result.output
    assert result.exit_code == 1
    assert not dest.exists()


def test_migrate_writes_the_tree_and_keeps_links(tmp_path: Path) -> None:
    src, dest = tree(tmp_path / "src"), tmp_path / "dest"
    result = CliRunner().invoke(cli, ["migrate", str(src), str(dest)])
    assert result.exit_code == 1  # one place is marked
    assert (dest / "cluster/node-pools/a/stack.yaml").read_text() == "Name: {{ node_pool.name }}\n"
    assert (dest / "cluster/node-pools/b/stack.yaml").is_symlink()
    assert (dest / "README.md").read_text() == "{{ not a template }}"
    marked = (dest / "cluster/manifests/x/cm.yaml").read_text().splitlines()
    assert marked[1].startswith("{# clm migrate: cannot translate (Go's `html`")
    assert 'untranslated("cluster/manifests/x/cm.yaml:2: ' in marked[1]
    again = CliRunner().invoke(cli, ["migrate", str(src), str(dest)])
    assert again.exit_code == 2 and "is not empty" in again.output


def test_gits_text_links_of_a_checkout_without_symlinks_are_links_too(tmp_path: Path) -> None:
    """core.symlinks false: git writes a link as a file holding its target (Zalando's worker-combined/files.yaml
    is `../worker-splitaz/files.yaml`). A one-line text that is not a path to a file of the tree stays a file."""
    src, dest = tree(tmp_path / "src"), tmp_path / "dest"
    (src / "cluster/node-pools/c").mkdir()
    (src / "cluster/node-pools/c/stack.yaml").write_text("../a/stack.yaml")
    (src / "cluster/node-pools/c/files.yaml").write_text("../a/no-such.yaml")
    CliRunner().invoke(cli, ["migrate", str(src), str(dest)])
    linked = dest / "cluster/node-pools/c/stack.yaml"
    assert linked.is_symlink() and linked.read_text() == "Name: {{ node_pool.name }}\n"
    assert not (dest / "cluster/node-pools/c/files.yaml").is_symlink()


def test_a_template_go_would_refuse_is_an_error_with_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "cluster").mkdir(parents=True)
    (src / "cluster/stack.yaml").write_text("a: 1\nb: {{ if .X }}\nc: 2\n")
    (src / "cluster/ok.yaml").write_text("a: {{ .Cluster.ID }}\n")
    result = CliRunner().invoke(cli, ["migrate", str(src), str(tmp_path / "dest")])
    assert result.exit_code == 1
    assert "error   cluster/stack.yaml:2: {{if}} has no {{end}} (unexpected end of file)" in result.output
    assert (tmp_path / "dest/cluster/ok.yaml").read_text() == "a: {{ cluster.id }}\n"


def test_dest_is_required_without_check(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["migrate", str(tree(tmp_path / "src"))])
    assert result.exit_code == 2 and "DEST is required" in result.output


def test_the_report_names_clms_taupage_era_etcd_values_the_renderer_does_not_provide(tmp_path: Path) -> None:
    src = tree(tmp_path / "src")
    (src / "cluster/etcd").mkdir()
    (src / "cluster/etcd/stack.yaml").write_text("Key: {{ .Values.etcd_client_server_key }}\n")
    result = CliRunner().invoke(cli, ["migrate", str(src), "--check", "--report"])
    assert "values.etcd_client_server_key (CLM's Taupage-era etcd value: not provided)" in result.output
    assert "cluster/etcd/stack.yaml" in result.output
