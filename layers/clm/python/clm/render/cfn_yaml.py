"""Parse CloudFormation templates written in YAML, including the short-form tags (!Ref, !Sub, ...)."""

from __future__ import annotations

from typing import Any

import yaml

from clm.yamlutil import SafeLoader


class CfnLoader(SafeLoader):
    """SafeLoader that maps `!Ref x` to {"Ref": x} and `!Fn x` to {"Fn::Fn": x}, and keeps timestamps as text."""


def _construct_tag(loader: CfnLoader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    if suffix == "Ref":
        return {"Ref": value}
    if suffix == "GetAtt" and isinstance(value, str):
        value = value.split(".", 1)
    return {f"Fn::{suffix}": value}


CfnLoader.add_multi_constructor("!", _construct_tag)
# CloudFormation reads YAML timestamps as text: `Version: 2012-10-17` in a policy stays the string it must be.
CfnLoader.add_constructor("tag:yaml.org,2002:timestamp", CfnLoader.construct_yaml_str)


def load_template(text: str) -> Any:
    """Parse a CloudFormation template (YAML with short tags, or JSON)."""
    return yaml.load(text, Loader=CfnLoader)
