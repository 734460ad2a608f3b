"""Several config sources combined as Zalando CLM's channel/combined.go (and its combined_test.go) does:
stacks and node-pool profiles from the first source, config-defaults merged key by key (later wins), deletions
concatenated, the components of every source applied (`<source>/<component>`), version `name=version;...`."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from clm.config.combined import CombinedSource
from clm.config.local import LocalSource
from clm.config.uri import parse_sources, source_from_uri
from clm.errors import ConfigSourceError, RenderError
from clm.render.renderer import Renderer

EXAMPLE_CONFIG = Path(__file__).parents[2] / "examples" / "config"
TEAM = {
    # ignored: stacks and node-pool profiles come from the main source only (combinedConfig.StackManifest)
    "cluster/stack.yaml": "Resources: {Team: {Type: AWS::SNS::Topic}}\n",
    "cluster/node-pools/worker-default/stack.yaml": "Resources: {Team: {Type: AWS::SNS::Topic}}\n",
    "cluster/node-pools/team-only/stack.yaml": "Resources: {Team: {Type: AWS::SNS::Topic}}\n",
    # merged key by key over the main source's, later wins; the registry still wins over both
    "cluster/config-defaults.yaml": "app_replicas: '5'\nteam_item: t-{{ cluster.local_id }}\n",
    "cluster/manifests/deletions.yaml": "pre_apply:\n- {kind: Secret, namespace: team, name: old}\n"
    "post_apply:\n- {kind: ConfigMap, namespace: team, name: gone}\n",
    # same name as a main component: both are applied, named by source
    "cluster/manifests/example-app/cm.yaml": (
        '{% include "cluster/manifests/shared/meta.j2" %}\napiVersion: v1\nkind: ConfigMap\n'
        "data: {replicas: '{{ cluster.config_items.app_replicas }}'}\n"
    ),
    "cluster/manifests/shared/meta.j2": "metadata: {name: team-app, namespace: team}",
}


@pytest.fixture
def team_dir(tmp_path: Path) -> Path:
    for path, text in TEAM.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    return tmp_path


@pytest.fixture
def combined(team_dir: Path) -> CombinedSource:
    return CombinedSource([("main", LocalSource(EXAMPLE_CONFIG)), ("team", LocalSource(team_dir))])


def test_version_names_every_source(combined, team_dir):
    main, team = LocalSource(EXAMPLE_CONFIG).version(), LocalSource(team_dir).version()
    assert combined.version() == combined.fetch().version == f"main={main};team={team}"


def test_stacks_and_node_pool_profiles_come_from_the_first_source(combined, example_clusters):
    kube1 = example_clusters[0]
    alone = Renderer(LocalSource(EXAMPLE_CONFIG).fetch()).render(kube1)
    rendered = Renderer(combined.fetch()).render(kube1)
    assert rendered.cluster_stack.body == alone.cluster_stack.body
    assert {n: s.body for n, s in rendered.node_pool_stacks.items()} == {
        n: s.body for n, s in alone.node_pool_stacks.items()
    }
    team_pool = dataclasses.replace(kube1.node_pools[0], profile="team-only")
    with pytest.raises(RenderError, match=r"team-only/stack\.yaml is not in"):
        Renderer(combined.fetch()).render(dataclasses.replace(kube1, node_pools=[team_pool]))


def test_config_defaults_merge_key_by_key_later_wins_registry_wins_over_all(combined, example_clusters):
    kube1 = example_clusters[0]
    items = Renderer(combined.fetch()).render(dataclasses.replace(kube1, config_items={})).cluster.config_items
    assert items["app_replicas"] == "5"  # team's default over main's "3"
    assert items["team_item"] == "t-kube-1"  # team only
    assert items["vpc_cidr"] == "10.0.0.0/16"  # main only
    registry = dataclasses.replace(kube1, config_items={"app_replicas": "7"})
    assert Renderer(combined.fetch()).render(registry).cluster.config_items["app_replicas"] == "7"


def test_deletions_are_concatenated_in_source_order(combined, example_clusters):
    deletions = Renderer(combined.fetch()).render(example_clusters[0]).deletions
    assert [(d.kind, d.name) for d in deletions.pre_apply] == [("Deployment", "web-legacy"), ("Secret", "old")]
    assert [d.kind for d in deletions.post_apply] == ["ConfigMap", "ClusterRole", "ConfigMap"]
    assert deletions.post_apply[-1].name == "gone"


def test_components_of_every_source_are_applied_named_by_source(combined, example_clusters):
    rendered = Renderer(combined.fetch()).render(dataclasses.replace(example_clusters[0], config_items={}))
    assert [c.name for c in rendered.components] == ["main/cluster-config", "main/example-app", "team/example-app"]
    team_app = rendered.components[-1].manifests
    # an include resolves within its own source; the team's template sees the merged config items
    assert [(m.file, m.name, m.body["data"]) for m in team_app] == [
        ("team/cluster/manifests/example-app/cm.yaml", "team-app", {"replicas": "5"})
    ]


def test_errors_name_the_source_of_the_file(team_dir, example_clusters):
    (team_dir / "cluster/manifests/example-app/cm.yaml").write_text("a: {{ cluster.nope }}\n")
    combined = CombinedSource([("main", LocalSource(EXAMPLE_CONFIG)), ("team", LocalSource(team_dir))])
    with pytest.raises(RenderError) as info:
        Renderer(combined.fetch()).render(example_clusters[0])
    assert info.value.file == "team/cluster/manifests/example-app/cm.yaml"
    assert info.value.line == 1


def test_single_source_is_read_as_before(example_clusters):
    tree = source_from_uri(str(EXAMPLE_CONFIG), lambda _: None).fetch()
    assert tree.layers == () and tree.version == LocalSource(EXAMPLE_CONFIG).version()
    assert [c.name for c in Renderer(tree).render(example_clusters[0]).components] == ["cluster-config", "example-app"]


def test_source_names_default_and_must_be_unique(team_dir):
    assert parse_sources(f"{EXAMPLE_CONFIG}, team={team_dir}") == [
        ("main", str(EXAMPLE_CONFIG)),
        ("team", str(team_dir)),
    ]
    assert [name for name, _ in parse_sources("s3://b/a/,s3://b/c/,x=s3://b/d/")] == ["main", "source2", "x"]
    with pytest.raises(ConfigSourceError, match="duplicate config source name: team"):
        parse_sources(f"team={team_dir},team={EXAMPLE_CONFIG}")
    with pytest.raises(ConfigSourceError, match="duplicate config source name: main"):
        CombinedSource([("main", LocalSource(team_dir)), ("main", LocalSource(team_dir))])
    with pytest.raises(ValueError, match="at least one"):
        CombinedSource([])
