"""``AWS::SNS::TopicPolicy`` in moto's CloudFormation, as AWS applies it.

moto 5.2.5 skips the resource type ("Tried to parse AWS::SNS::TopicPolicy but it's not supported"), so a topic that
a stack gives a policy kept moto's default one (context ``clm:notify``: the topic CLM's rule publishes to).
``install()`` registers the type: the document becomes the policy of each topic in ``Topics``; deleting the resource
gives them their default policy back.
"""

from __future__ import annotations

import json
from typing import Any

from moto.core.common_models import CloudFormationModel
from moto.sns.models import sns_backends

RESOURCE_TYPE = "AWS::SNS::TopicPolicy"


class TopicPolicy(CloudFormationModel):
    """The policy of some topics, set by CloudFormation."""

    def __init__(self, topics: list[str], account_id: str, region_name: str):
        self.topics, self.account_id, self.region_name = topics, account_id, region_name

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return RESOURCE_TYPE

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> TopicPolicy:
        properties = cloudformation_json.get("Properties") or {}
        topics = list(properties.get("Topics") or [])
        backend = sns_backends[account_id][region_name]
        for topic in topics:
            backend.set_topic_attribute(topic, "policy", json.dumps(properties["PolicyDocument"]))
        return cls(topics, account_id, region_name)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[misc]
        cls,
        original_resource: TopicPolicy,
        new_resource_name: str,
        cloudformation_json: Any,
        account_id: str,
        region_name: str,
    ) -> TopicPolicy:
        original_resource.delete(account_id, region_name)
        return cls.create_from_cloudformation_json(new_resource_name, cloudformation_json, account_id, region_name)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        topics = (cloudformation_json.get("Properties") or {}).get("Topics") or []
        cls(list(topics), account_id, region_name).delete(account_id, region_name)

    def delete(self, account_id: str, region_name: str) -> None:
        """Give each topic still there its default policy back."""
        backend = sns_backends[account_id][region_name]
        for arn in self.topics:
            topic = backend.topics.get(arn)
            if topic is not None:
                topic._policy_json = topic._create_default_topic_policy(region_name, account_id, topic.name)

    @property
    def physical_resource_id(self) -> str:
        return ",".join(self.topics)


def install() -> None:
    """Make moto's CloudFormation see the type (its model lists are cached on first use)."""
    from moto.cloudformation import parsing

    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()
