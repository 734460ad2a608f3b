"""Bad registry input refused before anything is written, naming file, line, cluster and field: YAML nested too
deep, an alias bomb, a value with a trailing line break, an item over DynamoDB's size limit."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from click.testing import CliRunner

from clm.cli.main import cli, describe_error
from clm.errors import ValidationError
from clm.model import Cluster
from clm.registry.clusters_yaml import load_clusters
from clm.registry.dynamodb import DynamoRegistry
from clm.registry.item_size import DYNAMODB_ITEM_LIMIT, SPEC_ITEM_LIMIT, item_size
from clm.yaml_limits import MAX_DEPTH
from tests.unit.conftest import EXAMPLES
from tests.unit.test_yaml_limits import bomb

TABLE = "clm-registry"
EXAMPLE = (EXAMPLES / "clusters.yaml").read_text()
KUBE_1 = "aws:123456789012:eu-central-1:kube-1"
KUBE_2 = "aws:123456789012:eu-central-1:kube-2"
# The line of kube-2's `config_items:` (its `app_replicas` item follows).
KUBE_2_ITEMS = EXAMPLE.splitlines().index('    app_replicas: "4"')


@pytest.fixture
def table(example_registry: DynamoRegistry, aws: boto3.Session) -> Any:
    """The example clusters in moto's table; `table()` scans it (every item, as stored)."""
    client = aws.client("dynamodb")
    return lambda: sorted(client.scan(TableName=TABLE)["Items"], key=lambda item: item["id"]["S"])


def import_file(tmp_path: Path, text: str) -> tuple[str, str]:
    """`clm registry import` of `text`: (the file's path, the one-line error), the command having failed."""
    path = tmp_path / "clusters.yaml"
    path.write_text(text)
    result = CliRunner().invoke(cli, ["--table", TABLE, "registry", "import", str(path)])
    assert result.exit_code != 0, result.output
    message = describe_error(result.exception)
    assert message is not None, repr(result.exception)  # a user's error, not a bug with a traceback
    return str(path), message


def with_kube_2_item(value: str) -> str:
    """The example registry, kube-1's alias changed (a write an import would do) and kube-2 given the config item
    `extra: <value>` (a YAML fragment)."""
    lines = EXAMPLE.replace("alias: sandbox-dev", "alias: renamed").splitlines()
    lines.insert(KUBE_2_ITEMS, f"    extra: {value}")
    return "\n".join(lines) + "\n"


def test_deep_nesting_is_refused_naming_file_and_line(tmp_path: Path, table: Any) -> None:
    before = table()
    path, message = import_file(tmp_path, with_kube_2_item("[" * 5000 + "]" * 5000))
    assert message == f"{path}:{KUBE_2_ITEMS + 1}: not valid YAML: nested deeper than {MAX_DEPTH} levels"
    assert table() == before


def test_nesting_up_to_the_limit_is_read() -> None:
    """A value nested MAX_DEPTH levels parses (it is then refused as no config item)."""
    text = with_kube_2_item("[" * (MAX_DEPTH - 4) + "]" * (MAX_DEPTH - 4))  # clusters, a cluster, its items: 3 more
    with pytest.raises(ValidationError, match=rf"config_items\.extra \(line {KUBE_2_ITEMS + 1}\): must be a string"):
        load_clusters(text)


def test_alias_bomb_is_refused_fast_naming_file_and_line(tmp_path: Path, table: Any) -> None:
    """Under a kilobyte of anchors and aliases that expand to 9**10 nodes, as the detail of a problem in kube-2's
    status: on main, validation made it text (str() of the expansion), which took minutes."""
    status = "  status:\n    problems:\n    - title: x\n      detail:\n" + bomb(10, "        {name}: &{name} [{items}]")
    text = EXAMPLE.replace("  lifecycle_status: ready\n", "  lifecycle_status: ready\n" + status)
    assert len(text) - len(EXAMPLE) < 1024
    before = table()
    started = time.monotonic()
    path, message = import_file(tmp_path, text)
    assert time.monotonic() - started < 2
    line = text.splitlines().index("        l4: &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]") + 1
    assert message.startswith(f"{path}:{line}: not valid YAML: aliases add "), message
    assert "(at most 10,000 more than it writes)" in message
    assert table() == before


@pytest.mark.parametrize(
    ("field", "old", "new"),
    [
        ("node_pools[0].instance_types[0]", "- m5.large", '- "m5.large\\n"'),
        ("node_pools[0].instance_types[0]", "- m5.large", '- "m5.large\\u2028"'),
        ("region", "region: eu-central-1", 'region: "eu-central-1\\n"'),
        ("node_pools[0].name", "- name: default-worker", '- name: "default-worker\\n"'),
    ],
)
def test_a_trailing_line_break_is_refused(tmp_path: Path, table: Any, field: str, old: str, new: str) -> None:
    """`$` matches before a final line break: a name a template splices (an instance type) could end a YAML line."""
    text = EXAMPLE.replace(old, new, 1)
    before = table()
    path, message = import_file(tmp_path, text)
    line = text.splitlines().index(next(row for row in text.splitlines() if new.strip("- ") in row)) + 1
    assert f"{path}:4: cluster {KUBE_1}: {field} (line {line}): " in message, message
    assert table() == before


def test_a_trailing_line_break_in_a_dynamodb_item_is_refused(example_clusters: list[Cluster]) -> None:
    """The same value written in the console (an item read back is validated the same way)."""
    data = example_clusters[0].to_dict()
    data["node_pools"][0]["instance_types"] = ["m5.large\n"]
    with pytest.raises(ValidationError, match=r"node_pools\[0\]\.instance_types\[0\]: 'm5\.large\\n' is not an"):
        Cluster.from_dict(data, "dynamodb:registry")


def test_an_item_over_dynamodbs_limit_is_refused_before_any_write(tmp_path: Path, table: Any) -> None:
    """kube-1 changes and comes first in the file: on main it was written, then kube-2 failed on DynamoDB."""
    before = table()
    path, message = import_file(tmp_path, with_kube_2_item("x" * DYNAMODB_ITEM_LIMIT))
    assert message.startswith(f"{path}:28: cluster {KUBE_2}: its registry item would be 410,"), message
    assert f"bytes as DynamoDB counts them; at most {SPEC_ITEM_LIMIT:,}" in message
    assert table() == before


def test_registry_set_of_a_too_large_item_writes_nothing(table: Any) -> None:
    before = table()
    result = CliRunner().invoke(
        cli, ["--table", TABLE, "registry", "set", KUBE_2, f"config_items.extra={'x' * SPEC_ITEM_LIMIT}"]
    )
    assert result.exit_code != 0
    assert f"cluster {KUBE_2}: its registry item would be " in str(result.exception)
    assert table() == before


def test_the_counted_size_is_dynamodbs(example_registry: DynamoRegistry, aws: boto3.Session) -> None:
    """An item filled to the limit as counted is stored whole (moto refuses past about 405,000 bytes, counting no
    list or map overhead), and one byte more is refused naming the cluster."""
    cluster = example_registry.get(KUBE_2)
    base = item_size({"id": cluster.id, "spec": cluster.spec_dict(), "status": cluster.status.to_dict(), "revision": 0})
    filler = SPEC_ITEM_LIMIT - base - len("extra") - 1  # a map element: its key, its value and 1 byte
    cluster.config_items["extra"] = "x" * filler
    example_registry.put(cluster)
    assert example_registry.get(KUBE_2).config_items["extra"] == "x" * filler
    cluster.config_items["extra"] += "x"
    with pytest.raises(ValidationError, match=f"cluster {KUBE_2}: its registry item would be {SPEC_ITEM_LIMIT + 1:,}"):
        example_registry.put(cluster)
