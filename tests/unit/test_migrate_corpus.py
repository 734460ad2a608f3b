"""`clm migrate` on Zalando's production configuration (../shared/corpus/kubernetes-on-aws): every file is
translated, nothing is left marked, every translation compiles in the renderer, and lines are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from clm.migrate.tree import migrate_tree, report_lines
from clm.render.environment import TemplateEnvironment

CORPUS = Path(__file__).parents[3] / "shared" / "corpus" / "kubernetes-on-aws"
if not CORPUS.is_dir():
    CORPUS = Path("/work/shared/corpus/kubernetes-on-aws")


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    if not CORPUS.is_dir():
        pytest.skip("the corpus (../shared/corpus/kubernetes-on-aws) is not here")
    dest = tmp_path_factory.mktemp("migrated")
    return dest, migrate_tree(CORPUS, dest)


def test_every_corpus_file_is_translated_and_none_is_marked(migrated: tuple[Path, object]) -> None:
    _, report = migrated
    print("\n".join(report_lines(report)))  # the figures: run with -s to see them
    assert len(report.translated) >= 260
    assert report.errors == []
    assert [str(problem) for problem in report.marked] == []


def test_every_translation_compiles_and_keeps_its_lines(migrated: tuple[Path, object]) -> None:
    dest, report = migrated
    files = {name: (dest / name).read_bytes() for name in report.translated}
    env = TemplateEnvironment(files)
    moved = []
    for name, text in files.items():
        env._env.get_template(name)  # a Jinja syntax error would raise here
        original = (CORPUS / name).read_bytes()
        if b"clm migrate: template" in text:  # a macro moved to the top: lines after it shift uniformly
            moved.append(name)
            continue
        assert text.count(b"\n") == original.count(b"\n"), name
    assert moved == ["cluster/manifests/skipper/deployment.yaml"]


def test_the_report_names_what_the_renderer_lacks(migrated: tuple[Path, object]) -> None:
    _, report = migrated
    assert "ami_id (CLM's amiID)" in report.functions
    assert "node_pool.taints" in report.fields
    assert "account_id (CLM's accountID)" not in report.functions
