"""``AWS::CodeCommit::Repository`` in moto's CloudFormation, as AWS creates it.

moto 5.2.5 skips the resource type ("Tried to parse AWS::CodeCommit::Repository but it's not supported"), so a CLM
deployment with a CodeCommit configuration repository (context ``clm:codeCommitRepository``) had no repository and
its `Fn::GetAtt`s failed. ``install()`` registers the type: the repository is created in moto's CodeCommit backend
(with the sandbox's file APIs: clm_sandbox.patches.codecommit), `Ref` is its repository id and `Fn::GetAtt` gives
`Arn`, `Name`, `CloneUrlHttp` and `CloneUrlSsh`, as AWS documents; deleting the stack deletes it.
"""

from __future__ import annotations

from typing import Any

from moto.codecommit.models import codecommit_backends
from moto.core.common_models import CloudFormationModel

RESOURCE_TYPE = "AWS::CodeCommit::Repository"
_ATTRIBUTES = {"Arn": "Arn", "Name": "repositoryName", "CloneUrlHttp": "cloneUrlHttp", "CloneUrlSsh": "cloneUrlSsh"}


class CodeCommitRepository(CloudFormationModel):
    """A repository created by CloudFormation (its metadata is the backend's)."""

    def __init__(self, metadata: dict[str, str]):
        self.metadata = metadata

    @staticmethod
    def cloudformation_name_type() -> str:
        return "RepositoryName"

    @staticmethod
    def cloudformation_type() -> str:
        return RESOURCE_TYPE

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str, **kwargs: Any
    ) -> CodeCommitRepository:
        properties = cloudformation_json.get("Properties") or {}
        name = properties.get("RepositoryName") or resource_name
        backend = codecommit_backends[account_id][region_name]
        return cls(backend.create_repository(name, properties.get("RepositoryDescription", "")))

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[misc]
        cls, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        backend = codecommit_backends[account_id][region_name]
        for name, repository in list(backend.repositories.items()):
            if resource_name in (name, repository.repository_metadata["repositoryId"]):
                backend.delete_repository(name)

    @property
    def physical_resource_id(self) -> str:
        return self.metadata["repositoryId"]

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in _ATTRIBUTES

    def get_cfn_attribute(self, attribute_name: str) -> str:
        from moto.cloudformation.exceptions import UnformattedGetAttTemplateException

        if attribute_name not in _ATTRIBUTES:
            raise UnformattedGetAttTemplateException()
        return self.metadata[_ATTRIBUTES[attribute_name]]


def install() -> None:
    """Make moto's CloudFormation see the type (its model lists are cached on first use)."""
    from moto.cloudformation import parsing

    for cached in (parsing.get_model_list, parsing.get_model_map, parsing.get_name_type_map):
        cached.cache_clear()
