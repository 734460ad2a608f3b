"""A configuration repository on a CodeCommit branch, read at the branch's head commit."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from clm.config.parallel import read_all
from clm.config.tree import ConfigTree
from clm.errors import ConfigSourceError


class CodeCommitSource:
    """A branch of a CodeCommit repository; its version is the head commit id."""

    def __init__(self, client: Any, repository: str, branch: str):
        self.client = client
        self.repository = repository
        self.branch = branch

    def describe(self) -> str:
        return f"codecommit://{self.repository}@{self.branch}"

    def version(self) -> str:
        return self._call("get_branch", branchName=self.branch)["branch"]["commitId"]

    def fetch(self) -> ConfigTree:
        """Every file of the tree at the head commit (symbolic links and submodules ignored)."""
        commit = self.version()
        paths = self._paths(commit)
        files = read_all(
            paths, lambda path: self._call("get_file", commitSpecifier=commit, filePath=path)["fileContent"]
        )
        return ConfigTree(version=commit, files=files, source=self.describe())

    def _paths(self, commit: str) -> list[str]:
        """Every file path of the tree, listing the folders of each depth in parallel."""
        paths: list[str] = []
        folders = ["/"]
        while folders:
            listed = read_all(folders, lambda path: self._call("get_folder", commitSpecifier=commit, folderPath=path))
            folders = [sub["absolutePath"] for folder in listed.values() for sub in folder.get("subFolders", [])]
            files = (file for folder in listed.values() for file in folder.get("files", []))
            paths.extend(file["absolutePath"].lstrip("/") for file in files)
        return sorted(paths)

    def _call(self, operation: str, **params: str) -> dict[str, Any]:
        try:
            return getattr(self.client, operation)(repositoryName=self.repository, **params)
        except ClientError as exc:
            error = exc.response.get("Error", {})
            path = params.get("filePath") or params.get("folderPath")
            detail = f" ({path})" if path else ""
            raise ConfigSourceError(f"{self.describe()}{detail}: {error.get('Code')}: {error.get('Message')}") from None
        except BotoCoreError as exc:
            raise ConfigSourceError(f"{self.describe()}: {exc}") from None
