"""CLM's clusters.yaml: lossless import/export and errors that point at the line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from clm.errors import ValidationError
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from tests.strategies import clusters

EXAMPLES = Path(__file__).parents[2] / "examples"


def error_of(text: str) -> str:
    with pytest.raises(ValidationError) as info:
        load_clusters(text, source="clusters.yaml")
    return str(info.value)


def test_example_file_loads_and_exports_losslessly():
    text = (EXAMPLES / "clusters.yaml").read_text()
    loaded = load_clusters(text)
    assert [c.id for c in loaded] == ["aws:123456789012:eu-central-1:kube-1", "aws:123456789012:eu-central-1:kube-2"]
    exported = yaml.safe_load(dump_clusters(loaded, with_status=False))
    assert exported == yaml.safe_load(text)


def test_full_clm_export_with_status_round_trips():
    clm_export = """
clusters:
- id: aws:123456789012:eu-central-1:kube-9
  alias: legacy
  local_id: kube-9
  api_server_url: https://kube-9.example.org
  channel: stable
  config_items: {a: "1"}
  criticality_level: 2
  environment: production
  infrastructure_account: aws:123456789012
  region: eu-central-1
  provider: zalando-eks
  lifecycle_status: ready
  owner: team-x
  account_name: prod-account
  created_at: "2021-03-04T05:06:07Z"
  node_pools:
  - {name: default, profile: worker, min_size: 1, max_size: 2, instance_type: m5.large,
     discount_strategy: spot_max_price, config_items: {labels: "a=b"}}
  status:
    current_version: abc#def
    last_version: ""
    next_version: ""
    problems:
    - {detail: "", instance: "", status: 0, title: "boom", type: "https://clm/problems/general-error"}
"""
    loaded = load_clusters(clm_export)
    assert yaml.safe_load(dump_clusters(loaded)) == yaml.safe_load(clm_export)


@given(st.lists(clusters(), max_size=4, unique_by=lambda c: c.id))
def test_export_import_round_trip(generated):
    assert load_clusters(dump_clusters(generated)) == sorted(generated, key=lambda c: c.id)


def test_malformed_yaml_names_file_and_line():
    message = error_of("clusters:\n- id: a\n  region: [unclosed\n")
    assert message.startswith("clusters.yaml:")
    assert "not valid YAML" in message


def test_unknown_field_names_cluster_and_line():
    text = (
        (EXAMPLES / "clusters.yaml")
        .read_text()
        .replace("  owner: team-platform\n", "  owner: team-platform\n  colour: blue\n")
    )
    message = error_of(text)
    assert "cluster aws:123456789012:eu-central-1:kube-1: colour (line 18): unknown field" in message


def test_duplicate_cluster_id_names_both_lines():
    text = (EXAMPLES / "clusters.yaml").read_text()
    body = text.split("clusters:\n", 1)[1]
    first = body.split("- id: aws:123456789012:eu-central-1:kube-2", 1)[0]
    message = error_of("clusters:\n" + first + first)
    assert "duplicate id (first defined at line 2)" in message
    assert "cluster aws:123456789012:eu-central-1:kube-1" in message


def test_one_bad_cluster_is_named_among_good_ones():
    head, _, tail = (EXAMPLES / "clusters.yaml").read_text().rpartition("region: eu-central-1")  # kube-2's
    text = head + "region: moon-1" + tail
    message = error_of(text)
    assert "cluster aws:123456789012:eu-central-1:kube-2: region" in message
    assert "kube-1" not in message


def test_wrong_top_level_shape():
    assert "expected a mapping with one key, 'clusters'" in error_of("- id: x\n")
    assert load_clusters("") == []


def test_a_provider_clm_does_not_provision_is_refused_naming_cluster_and_line():
    """CLM provisions zalando-aws and zalando-eks clusters (api/cluster.go; config/config.go `--provider` takes only
    those): any other provider is a registry error naming the cluster and line, not a cluster left silently alone."""
    text = (EXAMPLES / "clusters.yaml").read_text()
    assert text.count("provider: zalando-aws") == 2
    message = error_of(text.replace("provider: zalando-aws", "provider: zalando-gke", 1))
    assert (
        "cluster aws:123456789012:eu-central-1:kube-1: provider (line 15): 'zalando-gke' is not provisioned by CLM "
        "(it provisions zalando-aws and zalando-eks clusters)"
    ) in message, message
    assert "kube-2" not in message
    load_clusters(text.replace("provider: zalando-aws", "provider: zalando-eks"))
