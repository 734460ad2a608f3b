"""Fuzzing the registry's ways in: clusters.yaml (import) and DynamoDB items a human edited in the console.

Every input ends as valid clusters or as a ValidationError naming the file or table, the cluster and the field;
never as another exception. Invalid items among good ones are reported by reconcile, which still selects the others.
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from clm.errors import ValidationError
from clm.model import Cluster
from clm.registry.clusters_yaml import dump_clusters, load_clusters
from clm.registry.dynamodb import DynamoRegistry, create_table
from clm.validation import CLUSTER_FIELDS, POOL_FIELDS
from clm.version import desired_version
from clm.workflow.reconcile_steps import reconcile
from tests.damage import YAML_DAMAGE, damaged
from tests.strategies import text

EXAMPLES = Path(__file__).parents[2] / "examples"
EXAMPLE_TEXT = (EXAMPLES / "clusters.yaml").read_text()
EXAMPLE = yaml.safe_load(EXAMPLE_TEXT)
TABLE = "registry"
EDITED_ID = "aws:123456789012:eu-central-1:edited"
FUZZ = settings(max_examples=150, deadline=None)
# The `aws` fixture's moto lives for the whole test; every example overwrites the one item it edits.
FUZZ_MOTO = settings(FUZZ, max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])

Path_ = tuple[str | int, ...]

# --- what a human may write -----------------------------------------------------------------------------------

names = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_-.0123456789äλ中 "), min_size=1, max_size=12)
huge = st.sampled_from([2**31 - 1, 2**31, 2**63 - 1, 2**63, 10**38 - 1, -(2**63) - 1])
yaml_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**40), 10**40)
    | huge
    | st.floats()
    | text
    | st.dates()
    | st.sampled_from(["", " ", "requested", "aws:123456789012", "m5.large", "https://x.example.org", "0"])
)
yaml_values = st.recursive(
    yaml_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3), max_leaves=6
)


def _slots(data: dict[str, Any]) -> list[tuple[Path_, str]]:
    """Every field of the registry data a human could edit, as (container path, key); missing fields included."""
    found: list[tuple[Path_, str]] = []
    for i, cluster in enumerate(data["clusters"]):
        found += [(("clusters", i), key) for key in sorted(CLUSTER_FIELDS)]
        found += [(("clusters", i, "config_items"), key) for key in cluster["config_items"]]
        for j, pool in enumerate(cluster["node_pools"]):
            found += [(("clusters", i, "node_pools", j), key) for key in sorted(POOL_FIELDS)]
            found += [(("clusters", i, "node_pools", j, "config_items"), key) for key in pool["config_items"]]
    return found


def _container(data: Any, path: Path_) -> Any:
    for step in path:
        data = data[step]
    return data


@st.composite
def edits(draw: st.DrawFn, slots: list[tuple[Path_, str]], values: st.SearchStrategy[Any]) -> dict[str, Any]:
    """One edit at one of `slots`: the field deleted, replaced by one of `values`, or an unknown field added beside."""
    path, key = draw(st.sampled_from(slots))
    operation = draw(st.sampled_from(["delete", "replace", "add"]))
    if operation == "add":
        key = draw(names.filter(lambda name: name not in CLUSTER_FIELDS | POOL_FIELDS))
    return {
        "path": path,
        "key": key,
        "delete": operation == "delete",
        "value": None if operation == "delete" else draw(values),
    }


def apply_edit(base: Any, edit: dict[str, Any]) -> Any:
    data = copy.deepcopy(base)
    container = _container(data, edit["path"])
    if edit["delete"]:
        container.pop(edit["key"], None)
    else:
        container[edit["key"]] = edit["value"]
    return data


def assert_names_the_culprit(message: str, edit: dict[str, Any], cluster_id: str | None, source: str) -> None:
    """The message names where (file or table), which cluster (unless its id was the edit) and which field."""
    assert source in message, message
    assert str(edit["key"]) in message, message
    container_fields = [step for step in edit["path"] if step in ("node_pools", "config_items")]
    assert all(field in message for field in container_fields), message
    if edit["key"] != "id" and cluster_id is not None:
        assert f"cluster {cluster_id}" in message, message


def assert_valid(clusters: list[Cluster]) -> None:
    """Accepted clusters validate again, have a version, and export and import losslessly."""
    for cluster in clusters:
        assert Cluster.from_dict(cluster.to_dict()) == cluster
        assert str(desired_version(cluster, "v1")).startswith("v1#")
    assert load_clusters(dump_clusters(clusters)) == sorted(clusters, key=lambda c: c.id)


# --- clusters.yaml --------------------------------------------------------------------------------------------


@FUZZ
@given(edits(_slots(EXAMPLE), yaml_values))
@example({"path": ("clusters", 0), "key": "criticality_level", "delete": False, "value": 2**31})
@example({"path": ("clusters", 1, "node_pools", 0), "key": "max_size", "delete": False, "value": 2**63})
@example({"path": ("clusters", 0, "node_pools", 0), "key": "name", "delete": False, "value": None})
@example({"path": ("clusters", 0), "key": "environment", "delete": False, "value": None})
@example({"path": ("clusters", 0), "key": "region", "delete": False, "value": datetime.date(2000, 1, 1)})
@example(
    {
        "path": ("clusters", 0),
        "key": "status",
        "delete": False,
        "value": {"problems": [{"title": "x", "status": float("inf")}]},
    }
)
def test_edited_clusters_yaml_loads_or_names_the_culprit(edit: dict[str, Any]) -> None:
    data = apply_edit(EXAMPLE, edit)
    text_ = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    try:
        clusters = load_clusters(text_)
    except ValidationError as error:
        cluster_id = EXAMPLE["clusters"][edit["path"][1]]["id"]
        assert_names_the_culprit(str(error), edit, cluster_id, "clusters.yaml:")
        return
    assert_valid(clusters)


@FUZZ
@given(damaged(EXAMPLE_TEXT.encode(), st.sampled_from([*YAML_DAMAGE, "- id: x\n", "clusters:\n"]).map(str.encode)))
@example(EXAMPLE_TEXT.replace("- id: aws:123456789012:eu-central-1:kube-2", "- ? [a, b]\n  : c", 1).encode())
@example(EXAMPLE_TEXT.replace('app_replicas: "3"', "? {a: 1}\n    : c", 1).encode())
@example(EXAMPLE_TEXT.replace("owner: team-platform", "owner: !!timestamp team-platform").encode())
def test_damaged_clusters_yaml_loads_or_names_the_file(broken: bytes) -> None:
    try:
        clusters = load_clusters(broken)
    except ValidationError as error:
        assert str(error).startswith("clusters.yaml"), str(error)
        return
    assert_valid(clusters)


# --- DynamoDB items edited in the console ---------------------------------------------------------------------

numbers = st.integers(-(10**38) + 1, 10**38 - 1).map(str) | st.sampled_from(
    ["0", "-0", "1.5", "-0.25", "1E+30", "9.99E+125", "1E-130", str(2**31), str(2**63)]
)
attribute_scalars = (
    text.map(lambda s: {"S": s})
    | numbers.map(lambda n: {"N": n})
    | st.booleans().map(lambda b: {"BOOL": b})
    | st.just({"NULL": True})
    | st.binary(max_size=6).map(lambda b: {"B": b})
    | st.lists(text, min_size=1, max_size=3, unique=True).map(lambda s: {"SS": s})
    | st.lists(st.integers(-5, 5), min_size=1, max_size=3, unique=True).map(lambda n: {"NS": [str(i) for i in n]})
    | st.lists(st.binary(min_size=1, max_size=4), min_size=1, max_size=2, unique=True).map(lambda b: {"BS": b})
)
attribute_values = st.recursive(
    attribute_scalars,
    lambda inner: (
        st.lists(inner, max_size=3).map(lambda items: {"L": items})
        | st.dictionaries(names, inner, max_size=3).map(lambda fields: {"M": fields})
    ),
    max_leaves=6,
)


def _item_slots(item: dict[str, Any]) -> list[tuple[Path_, str]]:
    """The editable attributes of a raw registry item (spec fields, node pool fields, config items, status)."""
    spec = item["spec"]["M"]
    found: list[tuple[Path_, str]] = [(("spec", "M"), key) for key in sorted(CLUSTER_FIELDS - {"status"})]
    found.append(((), "status"))
    found += [(("spec", "M", "config_items", "M"), key) for key in spec["config_items"]["M"]]
    for j, pool in enumerate(spec["node_pools"]["L"]):
        found += [(("spec", "M", "node_pools", "L", j, "M"), key) for key in sorted(POOL_FIELDS)]
        found += [
            (("spec", "M", "node_pools", "L", j, "M", "config_items", "M"), key)
            for key in pool["M"]["config_items"]["M"]
        ]
    return found


def _edited_base() -> dict[str, Any]:
    """The raw item `DynamoRegistry.put` writes for kube-2 (two pools, a legacy instance_type), under EDITED_ID."""
    cluster = load_clusters(EXAMPLE_TEXT)[1]
    with_id = json.loads(json.dumps(cluster.spec_dict()))
    with_id["id"] = EDITED_ID
    serializer = boto3.dynamodb.types.TypeSerializer()
    return {
        "id": {"S": EDITED_ID},
        "spec": serializer.serialize(with_id),
        "revision": {"N": "0"},
        "status": serializer.serialize(cluster.status.to_dict()),
    }


ITEM = _edited_base()
ITEM_SLOTS = _item_slots(ITEM)


@pytest.fixture
def dynamodb(aws: boto3.Session) -> Any:
    """A DynamoDB client of moto with the registry table."""
    client = aws.client("dynamodb")
    create_table(client, TABLE)
    return client


@pytest.fixture
def registry(dynamodb: Any) -> DynamoRegistry:
    """The example clusters in the registry."""
    registry = DynamoRegistry(dynamodb, TABLE)
    for cluster in load_clusters(EXAMPLE_TEXT):
        registry.put(cluster)
    return registry


def _field_of(edit: dict[str, Any]) -> dict[str, Any]:
    """The edit in registry terms: DynamoDB's type keys (M, L) and list positions left out of the path."""
    path = tuple(step for step in edit["path"] if step not in ("M", "L", "spec") and not isinstance(step, int))
    return {**edit, "path": path}


def put_edited(dynamodb: Any, edit: dict[str, Any]) -> None:
    """Write the edited item as the console does: raw attribute values, no validation."""
    dynamodb.put_item(TableName=TABLE, Item=apply_edit(ITEM, edit))


@FUZZ_MOTO
@given(edits(ITEM_SLOTS, attribute_values))
@example({"path": ("spec", "M", "config_items", "M"), "key": "app_replicas", "delete": False, "value": {"B": b"3"}})
@example({"path": ("spec", "M"), "key": "criticality_level", "delete": False, "value": {"N": "1E+30"}})
def test_item_edited_in_the_console_reads_or_names_the_culprit(
    dynamodb: Any, registry: DynamoRegistry, edit: dict[str, Any]
) -> None:
    put_edited(dynamodb, edit)
    clusters, invalid = registry.list_clusters_report()
    good = {c.id for c in clusters} - {EDITED_ID}
    assert good == {c["id"] for c in EXAMPLE["clusters"]}
    if invalid:
        [(cluster_id, message)] = invalid
        assert cluster_id == EDITED_ID
        assert_names_the_culprit(message, _field_of(edit), EDITED_ID, f"dynamodb:{TABLE}")
        with pytest.raises(ValidationError) as error:
            registry.get(EDITED_ID)
        assert str(error.value) == message
        return
    edited = registry.get(EDITED_ID)
    assert edited in clusters
    assert_valid([edited])


@pytest.fixture
def reconcile_env(registry: DynamoRegistry, aws: boto3.Session, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """What the reconcile function gets from the CDK app: registry, config source and the provision state machine."""
    sfn = aws.client("stepfunctions")
    role = "arn:aws:iam::123456789012:role/provision"
    definition = json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}})
    machine = sfn.create_state_machine(name="provision", definition=definition, roleArn=role)["stateMachineArn"]
    monkeypatch.setenv("CLM_REGISTRY_TABLE", TABLE)
    monkeypatch.setenv("CLM_CONFIG_SOURCE", str(EXAMPLES / "config"))
    monkeypatch.setenv("CLM_ARTEFACT_BUCKET", "unused")
    monkeypatch.setenv("CLM_PROVISION_STATE_MACHINE", machine)
    from clm.aws import forget_clients

    forget_clients()  # clients bound to this test's moto
    yield
    forget_clients()


@settings(FUZZ_MOTO, max_examples=30)
@given(edits(ITEM_SLOTS, attribute_values))
def test_reconcile_reports_an_invalid_item_and_still_starts_the_others(
    dynamodb: Any, registry: DynamoRegistry, reconcile_env: None, edit: dict[str, Any]
) -> None:
    put_edited(dynamodb, edit)
    result = reconcile({})
    invalid = {entry["cluster_id"]: entry["error"] for entry in result["invalid"]}
    valid = not invalid
    assert set(invalid) <= {EDITED_ID}
    assert result["clusters"] == 2 + valid
    runs = {cluster_id for key in ("started", "already_started", "deferred") for cluster_id in result[key]["ids"]}
    assert runs >= {c["id"] for c in EXAMPLE["clusters"]}
    if not valid:
        assert EDITED_ID not in runs
        assert_names_the_culprit(invalid[EDITED_ID], _field_of(edit), EDITED_ID, f"dynamodb:{TABLE}")
