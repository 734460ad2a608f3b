"""Channels: a cluster's `channel` picks an S3 prefix or a CodeCommit branch of every source, the config item
`override_channel` (`<source>=<channel>,...`, CLM api/cluster.go ChannelOverrides) another one per source, and a
config change concerns only the clusters reading its source on its channel."""

from __future__ import annotations

import dataclasses

import pytest

from clm.config.changes import ChangeScope, change_scope
from clm.config.channels import ConfigSources, channel_overrides
from clm.config.s3 import S3Source
from clm.errors import ConfigSourceError
from clm.workflow.reconcile_steps import _versions
from clm_sandbox.patches.codecommit import install as install_codecommit
from tests.conftest import REGION

BUCKET = "clm-config"
STACK = b"Resources: {}\n"


@pytest.fixture
def s3(aws):
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    for key in ("config/cluster/stack.yaml", "config/beta/cluster/stack.yaml", "team/cluster/stack.yaml"):
        client.put_object(Bucket=BUCKET, Key=key, Body=STACK)
    client.put_object(Bucket=BUCKET, Key="config/README.md", Body=b"not configuration")
    return client


def on(cluster, channel=None, **items):
    return dataclasses.replace(cluster, channel=channel, config_items={**cluster.config_items, **items})


def test_s3_prefix_per_channel_and_the_default_sees_no_channel(s3):
    default, beta = S3Source(s3, BUCKET, "config/"), S3Source(s3, BUCKET, "config/", "beta")
    assert beta.describe() == f"s3://{BUCKET}/config/beta/"
    assert list(default.fetch().files) == list(beta.fetch().files) == ["cluster/stack.yaml"]
    before = default.version(), beta.version()
    s3.put_object(Bucket=BUCKET, Key="config/beta/cluster/stack.yaml", Body=b"Resources: {X: 1}\n")
    assert default.version() == before[0] and beta.version() != before[1]
    assert beta.fetch().read("cluster/stack.yaml") == b"Resources: {X: 1}\n"


def test_an_s3_channel_without_objects_does_not_exist_as_a_missing_git_branch(s3):
    """CLM's channel/git.go: `git rev-parse <channel>` fails for a branch that does not exist; a channel is a folder
    here, and one without objects is refused the same way (the default channel may be empty: nothing uploaded)."""
    gamma = S3Source(s3, BUCKET, "config/", "gamma")
    for read in (gamma.version, gamma.fetch):
        with pytest.raises(
            ConfigSourceError, match=r"config/gamma/cluster/: no objects: channel 'gamma' does not exist"
        ):
            read()
    assert S3Source(s3, BUCKET, "empty/").fetch().files == {}


@pytest.mark.parametrize("channel", ["cluster", "cluster/x", "../x", "a//b", "/a", "a b"])
def test_s3_channel_must_be_a_folder_of_its_own(channel):
    with pytest.raises(ConfigSourceError, match="is not a folder name"):
        S3Source(None, BUCKET, "config/", channel)


def test_codecommit_branch_per_channel(aws, example_clusters):
    install_codecommit()
    client = aws.client("codecommit")
    client.create_repository(repositoryName="cfg")
    main = client.create_commit(
        repositoryName="cfg", branchName="main", putFiles=[{"filePath": "cluster/stack.yaml", "fileContent": STACK}]
    )["commitId"]
    client.create_branch(repositoryName="cfg", branchName="beta", commitId=main)
    beta = client.create_commit(
        repositoryName="cfg",
        branchName="beta",
        parentCommitId=main,
        putFiles=[{"filePath": "cluster/stack.yaml", "fileContent": b"Resources: {B: 1}\n"}],
    )["commitId"]
    sources = ConfigSources("codecommit://cfg@main", lambda _: client)
    kube1 = example_clusters[0]
    assert sources.version(on(kube1)) == main
    assert sources.version(on(kube1, "beta")) == beta
    assert sources.for_cluster(on(kube1, "beta")).fetch().read("cluster/stack.yaml") == b"Resources: {B: 1}\n"
    with pytest.raises(ConfigSourceError, match=r"cluster .*kube-1 \(channel 'gamma'\): codecommit://cfg@gamma"):
        sources.version(on(kube1, "gamma"))


def test_override_channel_is_parsed_as_clm():
    cluster = type("C", (), {"id": "c1", "config_items": {"override_channel": "team=beta,ops=x=y"}})()
    assert channel_overrides(cluster) == {"team": "beta", "ops": "x=y"}
    cluster.config_items = {"override_channel": "team=beta,ops"}
    with pytest.raises(ConfigSourceError, match=r"cluster c1: config item override_channel: .*'ops'"):
        channel_overrides(cluster)
    cluster.config_items = {}
    assert channel_overrides(cluster) == {}


def test_channel_and_override_per_source_in_a_combined_source(s3, example_clusters):
    s3.put_object(Bucket=BUCKET, Key="team/beta/cluster/stack.yaml", Body=b"Resources: {T: 1}\n")
    calls = []
    s3.meta.events.register(
        "before-call.s3.ListObjectVersions", lambda params, **_: calls.append(params["query_string"]["prefix"])
    )
    sources = ConfigSources(f"s3://{BUCKET}/config/,team=s3://{BUCKET}/team/", lambda _: s3)
    kube1 = example_clusters[0]
    default, beta = on(kube1), on(kube1, "beta")
    team_beta = on(kube1, override_channel="team=beta")
    assert sources.channels(default) == {"main": "", "team": ""}
    assert sources.channels(beta) == {"main": "beta", "team": "beta"}
    assert sources.channels(team_beta) == {"main": "", "team": "beta"}
    versions = {name: sources.version(c) for name, c in (("d", default), ("b", beta), ("t", team_beta))}
    main_default, team_default = versions["d"].split(";")
    assert main_default.startswith("main=") and team_default.startswith("team=")
    assert versions["t"] == f"{main_default};{versions['b'].split(';')[1]}"
    assert sorted(calls) == sorted(["config/cluster/", "config/beta/cluster/", "team/cluster/", "team/beta/cluster/"])
    tree = sources.for_cluster(team_beta).fetch()
    assert tree.version == versions["t"]
    assert [layer.tree.read("cluster/stack.yaml") for layer in tree.layers] == [STACK, b"Resources: {T: 1}\n"]


def test_a_single_source_ignores_override_channel_as_clm_git_source(s3, example_clusters):
    sources = ConfigSources(f"s3://{BUCKET}/config/", lambda _: s3)
    cluster = on(example_clusters[0], override_channel="main=beta")
    assert sources.channels(cluster) == {"main": ""}
    assert sources.version(cluster) == S3Source(s3, BUCKET, "config/").version()


@pytest.mark.parametrize(
    ("change", "scope"),
    [
        ({"bucket": BUCKET, "key": "config/cluster/stack.yaml"}, ChangeScope("main", "")),
        ({"bucket": BUCKET, "key": "config/beta/cluster/manifests/a/b.yaml"}, ChangeScope("main", "beta")),
        ({"bucket": BUCKET, "key": "config/team/x/cluster/stack.yaml"}, ChangeScope("team", "x")),
        ({"bucket": BUCKET, "key": "config/README.md"}, None),
        ({"bucket": "other", "key": "config/cluster/stack.yaml"}, None),
        ({"repository": "cfg", "branch": "beta"}, ChangeScope("cc", "beta", "main")),
        ({"repository": "other", "branch": "beta"}, None),
    ],
)
def test_a_change_maps_to_its_source_and_channel(change, scope):
    uri = f"s3://{BUCKET}/config/,team=s3://{BUCKET}/config/team/,cc=codecommit://cfg@main"
    assert change_scope(uri, change) == scope


def test_a_change_concerns_the_clusters_on_its_channel_only():
    assert ChangeScope("main", "beta").concerns({"main": "beta"})
    assert not ChangeScope("main", "beta").concerns({"main": ""})
    assert not ChangeScope("main", "").concerns({"main": "beta"})
    assert not ChangeScope("team", "").concerns({"main": ""})
    assert ChangeScope("cc", "main", "main").concerns({"cc": ""})  # the URI's branch is the default channel
    assert ChangeScope("cc", "main", "main").concerns({"cc": "main"})


def test_reconcile_reads_versions_of_concerned_clusters_and_reports_bad_channels(s3, example_clusters):
    sources = ConfigSources(f"s3://{BUCKET}/config/,team=s3://{BUCKET}/team/", lambda _: s3)
    kube1, kube2 = example_clusters
    clusters = [on(kube1, "beta"), on(kube2), dataclasses.replace(on(kube2, override_channel="x"), id="bad")]
    versions, errors = _versions(sources, clusters, ChangeScope("main", "beta"))
    assert list(versions) == [] and "team/beta/cluster/: no objects" in dict(errors)[kube1.id]  # every source
    s3.put_object(Bucket=BUCKET, Key="team/beta/cluster/stack.yaml", Body=STACK)
    versions, errors = _versions(sources, clusters, ChangeScope("main", "beta"))
    assert list(versions) == [kube1.id] and [cluster_id for cluster_id, _ in errors] == ["bad"]
    versions, errors = _versions(sources, clusters, None)
    assert list(versions) == [kube1.id, kube2.id] and "override_channel" in errors[0][1]
