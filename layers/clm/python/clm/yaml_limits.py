"""Bounds on what a YAML document may make CLM build: nesting depth and the nodes its aliases add.

PyYAML has neither: a document nested a few thousand levels deep ends in a RecursionError (tens of thousands
crash libyaml's C composer), and a kilobyte of anchors and aliases (a "billion laughs") expands to billions of
nodes once a walker copies it. CLM's loaders compose with `BoundedComposer`, whose errors are YAML errors
pointing at the line (ComposerError), as any other YAML error.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.composer import Composer, ComposerError

# Deeper than any Kubernetes object or CloudFormation template needs (Zalando's configuration: 35 levels, in a
# CRD's schema), shallow enough for every recursive walker over the result to stay below Python's recursion limit.
MAX_DEPTH = 100
# The nodes aliases may add to a document beyond as many as the document writes itself: a merge key or a repeated
# block stays far below, a document whose aliases multiply it (each level of a bomb times 9) is refused.
ALIAS_ALLOWANCE = 10_000


class BoundedComposer(Composer):
    """PyYAML's composer (over either parser, libyaml's or the pure-Python one) that refuses, naming the line, a
    node nested deeper than MAX_DEPTH, an alias of a node that contains it, and aliases adding more nodes than
    the document writes plus ALIAS_ALLOWANCE."""

    def compose_document(self) -> Any:
        """One document, counting from zero."""
        self._depth = 0
        self._written = 0  # nodes the document writes
        self._aliased = 0  # nodes its aliases add
        self._sizes: dict[str, int] = {}  # anchor -> nodes an alias of it adds
        self.anchors = {}
        return super().compose_document()

    def compose_node(self, parent: Any, index: Any) -> Any:
        """A node: PyYAML's compose_node with its scalar, sequence and mapping cases in one (the composer runs in
        Python: fewer calls per node), counting nodes, aliases and depth."""
        event = self.get_event()
        kind = type(event)
        if kind is yaml.AliasEvent:
            return self._alias(event)
        anchor = event.anchor
        if anchor is not None and anchor in self.anchors:
            raise ComposerError(
                f"found duplicate anchor {anchor!r}; first occurrence",
                self.anchors[anchor].start_mark,
                "second occurrence",
                event.start_mark,
            )
        before = self._written + self._aliased
        self._written += 1
        paths = bool(self.yaml_path_resolvers)
        if paths:
            self.descend_resolver(parent, index)
        tag = event.tag
        if kind is yaml.ScalarEvent:
            if tag is None or tag == "!":
                tag = self.resolve(yaml.ScalarNode, event.value, event.implicit)
            node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
            if anchor is not None:
                self.anchors[anchor] = node
        else:
            node = self._compose_collection(event, tag, anchor)
        if paths:
            self.ascend_resolver()
        if anchor is not None:
            self._sizes[anchor] = self._written + self._aliased - before
        return node

    def _compose_collection(self, event: Any, tag: str | None, anchor: str | None) -> Any:
        if self._depth >= MAX_DEPTH:
            raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        mapping = type(event) is yaml.MappingStartEvent
        node_class = yaml.MappingNode if mapping else yaml.SequenceNode
        if tag is None or tag == "!":
            tag = self.resolve(node_class, None, event.implicit)
        node = node_class(tag, [], event.start_mark, None, flow_style=event.flow_style)
        if anchor is not None:
            self.anchors[anchor] = node
        end = yaml.MappingEndEvent if mapping else yaml.SequenceEndEvent
        items = node.value
        self._depth += 1
        while type(self.peek_event()) is not end:
            if mapping:
                key = self.compose_node(node, None)
                items.append((key, self.compose_node(node, key)))
            else:
                items.append(self.compose_node(node, len(items)))
        self._depth -= 1
        node.end_mark = self.get_event().end_mark
        return node

    def _alias(self, event: Any) -> Any:
        """The node an alias names, counted at its size (the nodes it adds)."""
        anchor = event.anchor
        if anchor not in self.anchors:
            raise ComposerError(None, None, f"found undefined alias {anchor!r}", event.start_mark)
        if anchor not in self._sizes:
            raise ComposerError(None, None, f"alias *{anchor} is inside the node it refers to", event.start_mark)
        self._aliased += self._sizes[anchor]
        if self._aliased > self._written + ALIAS_ALLOWANCE:
            raise ComposerError(
                None,
                None,
                f"aliases add {self._aliased:,} nodes to a document that writes {self._written:,}"
                f" (at most {ALIAS_ALLOWANCE:,} more than it writes)",
                event.start_mark,
            )
        return self.anchors[anchor]
