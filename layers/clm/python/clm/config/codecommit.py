"""A configuration repository on a CodeCommit branch, read at the branch's head commit.

Symbolic links are followed as CLM's git checkout follows them (Zalando's worker-combined/files.yaml links to
worker-splitaz's): a link to a file of the tree reads as that file, a link to a folder as its files; a link whose
target is not in the tree is left out, as a dangling link reads nothing.
"""

from __future__ import annotations

import posixpath
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
        """Every file of the tree at the head commit, symbolic links followed (submodules ignored)."""
        commit = self.version()
        paths, links = self._paths(commit)
        files = read_all(
            paths, lambda path: self._call("get_file", commitSpecifier=commit, filePath=path)["fileContent"]
        )
        targets = read_all(sorted(links), lambda path: self._call("get_blob", blobId=links[path])["content"])
        return ConfigTree(version=commit, files={**files, **_followed(targets, files)}, source=self.describe())

    def _paths(self, commit: str) -> tuple[list[str], dict[str, str]]:
        """Every file path of the tree, and every symbolic link's path with its blob id, listing the folders of each
        depth in parallel."""
        paths: list[str] = []
        links: dict[str, str] = {}
        folders = ["/"]
        while folders:
            listed = read_all(folders, lambda path: self._call("get_folder", commitSpecifier=commit, folderPath=path))
            folders = [sub["absolutePath"] for folder in listed.values() for sub in folder.get("subFolders", [])]
            files = (file for folder in listed.values() for file in folder.get("files", []))
            paths.extend(file["absolutePath"].lstrip("/") for file in files)
            symbolic = (link for folder in listed.values() for link in folder.get("symbolicLinks", []))
            links.update({link["absolutePath"].lstrip("/"): link["blobId"] for link in symbolic})
        return sorted(paths), links

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


def _followed(targets: dict[str, bytes], files: dict[str, bytes]) -> dict[str, bytes]:
    """The files the links (path -> target, as git stores it) read as: a file's content, or a folder's files."""
    found: dict[str, bytes] = {}
    for link, target in targets.items():
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), target.decode(errors="replace")))
        if resolved in files:
            found[link] = files[resolved]
        inside = {path: data for path, data in files.items() if path.startswith(resolved + "/")}
        found.update({link + path[len(resolved) :]: data for path, data in inside.items()})
    return found
