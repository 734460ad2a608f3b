"""A stored rendering loads back to the same rendering."""

from __future__ import annotations

import json

import pytest

from clm.render import stored
from clm.render.renderer import Renderer


def test_rendering_round_trips_through_json(example_tree, example_clusters) -> None:
    for cluster in example_clusters:
        rendered = Renderer(example_tree).render(cluster)
        text = stored.dumps(rendered)
        assert stored.loads(text) == rendered
        assert stored.loads(text.encode()) == rendered


def test_unknown_format_is_refused(example_tree, example_clusters) -> None:
    document = json.loads(stored.dumps(Renderer(example_tree).render(example_clusters[0])))
    document["format"] = 99
    with pytest.raises(ValueError, match="format 99, expected 1"):
        stored.loads(json.dumps(document))
