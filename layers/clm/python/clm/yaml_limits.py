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
        """A node, its aliases counted at their expanded size."""
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            if event.anchor in self.anchors and event.anchor not in self._sizes:
                raise ComposerError(
                    None, None, f"alias *{event.anchor} is inside the node it refers to", event.start_mark
                )
            node = super().compose_node(parent, index)
            self._aliased += self._sizes[event.anchor]
            if self._aliased > self._written + ALIAS_ALLOWANCE:
                raise ComposerError(
                    None,
                    None,
                    f"aliases add {self._aliased:,} nodes to a document that writes {self._written:,}"
                    f" (at most {ALIAS_ALLOWANCE:,} more than it writes)",
                    event.start_mark,
                )
            return node
        event = self.peek_event()
        collection = isinstance(event, yaml.CollectionStartEvent)
        if collection and self._depth >= MAX_DEPTH:
            raise ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        before = self._written + self._aliased
        self._written += 1
        self._depth += collection
        node = super().compose_node(parent, index)
        self._depth -= collection
        if event.anchor is not None:
            self._sizes[event.anchor] = self._written + self._aliased - before
        return node
