"""Import and export of Zalando CLM's registry file (`clusters: [...]`), losslessly."""

from __future__ import annotations

import yaml

from clm.errors import ValidationError
from clm.model import Cluster
from clm.registry.item_size import spec_item_problem
from clm.yamlutil import dump, error_line, error_reason, load_with_lines


def load_clusters(text: str | bytes, source: str = "clusters.yaml") -> list[Cluster]:
    """Parse and validate a clusters.yaml, each cluster also as the registry item it would be (DynamoDB's size
    limit); every error names the file, line and cluster."""
    return [cluster for _, cluster in load_located_clusters(text, source)]


def load_located_clusters(text: str | bytes, source: str = "clusters.yaml") -> list[tuple[str, Cluster]]:
    """As `load_clusters`, each cluster with where it starts (`source:line`)."""
    try:
        data = load_with_lines(text)
    except yaml.YAMLError as exc:
        line = error_line(exc)
        where = f"{source}:{line}" if line else source
        raise ValidationError([f"not valid YAML: {error_reason(exc)}"], source=where) from None
    if data is None:
        return []
    if not isinstance(data, dict) or set(data) - {"clusters"}:
        raise ValidationError(["expected a mapping with one key, 'clusters'"], source=source)
    items = data.get("clusters") or []
    if not isinstance(items, list):
        raise ValidationError([f"'clusters' (line {data.line_of('clusters')}) must be a list"], source=source)
    clusters: list[tuple[str, Cluster]] = []
    problems: list[str] = []
    first_line: dict[str, int] = {}
    for index, item in enumerate(items):
        line = items.item_lines[index]
        try:
            cluster = Cluster.from_dict(item, source=f"{source}:{line}")
        except ValidationError as exc:
            problems.append(str(exc))
            continue
        if cluster.id in first_line:
            problems.append(
                f"{source}:{line}: cluster {cluster.id}: duplicate id (first defined at line {first_line[cluster.id]})"
            )
            continue
        first_line[cluster.id] = line
        if too_large := spec_item_problem(cluster):
            problems.append(f"{source}:{line}: cluster {cluster.id}: {too_large}")
            continue
        clusters.append((f"{source}:{line}", cluster))
    if problems:
        raise ValidationError(problems)
    return clusters


def dump_clusters(clusters: list[Cluster], with_status: bool = True) -> str:
    """Write clusters in CLM's registry format, sorted by id."""
    ordered = sorted(clusters, key=lambda c: c.id)
    return dump({"clusters": [c.to_dict() if with_status else c.spec_dict() for c in ordered]})
