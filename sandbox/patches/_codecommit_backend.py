"""CodeCommit's branch, commit, file and folder operations, as methods of moto's CodeCommitBackend.

Each function takes the backend as `self` and the request's members in snake case (blobs as bytes), and
returns the response as AWS shapes it (blobs as bytes; the response handler encodes them).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from moto.codecommit.exceptions import RepositoryDoesNotExistException
from moto.codecommit.models import CodeCommit, CodeCommitBackend
from moto.core.utils import iso_8601_datetime_with_milliseconds

from clm_sandbox.patches._codecommit_changes import (
    ChangeRequest,
    PutFile,
    apply_changes,
    check_mode,
    normalize_folder,
    normalize_path,
)
from clm_sandbox.patches._codecommit_errors import CodeCommitError
from clm_sandbox.patches._codecommit_events import publish_reference_change
from clm_sandbox.patches._codecommit_git import GIT_MODES, FileEntry, Person, blob_id, differences, list_folder
from clm_sandbox.patches._codecommit_repo import GitRepository, RefUpdate

_STATE = "clm_git"  # the attribute of moto's repository model that holds its GitRepository


def _repository(backend: CodeCommitBackend, name: str) -> tuple[CodeCommit, GitRepository]:
    model = backend.repositories.get(name)
    if model is None:
        raise RepositoryDoesNotExistException(name)
    return model, vars(model).setdefault(_STATE, GitRepository(name))


def _author(name: str | None, email: str | None) -> Person:
    return Person(name or "", email or "", int(time.time()))


def _moved(backend: CodeCommitBackend, model: CodeCommit, git: GitRepository, update: RefUpdate) -> None:
    """Record a branch change in the repository's metadata and announce it on EventBridge."""
    model.repository_metadata["defaultBranch"] = git.default_branch
    model.repository_metadata["lastModifiedDate"] = iso_8601_datetime_with_milliseconds()
    publish_reference_change(backend.account_id, backend.region_name, model.repository_metadata, update)


def _file_metadata(path: str, entry: FileEntry) -> dict[str, str]:
    return {"absolutePath": path, "blobId": entry.blob_id, "fileMode": entry.mode}


def put_file(
    self: CodeCommitBackend,
    repository_name: str,
    branch_name: str,
    file_content: bytes,
    file_path: str,
    file_mode: str | None = None,
    parent_commit_id: str | None = None,
    commit_message: str | None = None,
    name: str | None = None,
    email: str | None = None,
) -> dict[str, str]:
    """PutFile: commit one file on a branch (creating the default branch in an empty repository)."""
    model, git = _repository(self, repository_name)
    path = normalize_path(file_path, "file path")
    if not file_content:
        raise CodeCommitError("FileContentRequiredException", f"{path}: empty files cannot be added with PutFile.")
    put = PutFile(path, content=file_content, mode=check_mode(file_mode))

    def change(base: Mapping[str, FileEntry]) -> tuple[dict[str, FileEntry], dict[str, bytes]]:
        old = base.get(path)
        if old is not None and old.blob_id == blob_id(file_content) and old.mode == (file_mode or old.mode):
            raise CodeCommitError("SameFileContentException", f"{path} already has this content on {branch_name}.")
        return apply_changes(base, ChangeRequest(puts=(put,)))

    update = git.commit_to(branch_name, parent_commit_id, _author(name, email), commit_message or "", change)
    _moved(self, model, git, update)
    return {
        "commitId": update.commit.commit_id,
        "blobId": update.commit.files[path].blob_id,
        "treeId": update.commit.tree_id,
    }


def create_commit(
    self: CodeCommitBackend,
    repository_name: str,
    branch_name: str,
    parent_commit_id: str | None = None,
    author_name: str | None = None,
    email: str | None = None,
    commit_message: str | None = None,
    keep_empty_folders: bool = False,
    put_files: list[dict[str, Any]] | None = None,
    delete_files: list[dict[str, str]] | None = None,
    set_file_modes: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    """CreateCommit: put, copy, move, delete files and change modes in one commit on a branch."""
    model, git = _repository(self, repository_name)
    request = ChangeRequest(
        puts=tuple(_put_entry(entry) for entry in put_files or ()),
        deletes=tuple(normalize_path(entry.get("filePath"), "file path") for entry in delete_files or ()),
        modes=tuple(_mode_change(entry) for entry in set_file_modes or ()),
        keep_empty_folders=bool(keep_empty_folders),
    )
    update = git.commit_to(
        branch_name,
        parent_commit_id,
        _author(author_name, email),
        commit_message or "",
        lambda base: apply_changes(base, request),
    )
    _moved(self, model, git, update)
    before = git.commits[update.old_commit_id].files if update.old_commit_id else {}
    changed: dict[str, list[dict[str, str]]] = {"filesAdded": [], "filesUpdated": [], "filesDeleted": []}
    for path, old, new in differences(before, update.commit.files):
        kind = "filesDeleted" if new is None else "filesAdded" if old is None else "filesUpdated"
        changed[kind].append(_file_metadata(path, new or old))
    return {"commitId": update.commit.commit_id, "treeId": update.commit.tree_id, **changed}


def _put_entry(entry: Mapping[str, Any]) -> PutFile:
    source = entry.get("sourceFile")
    return PutFile(
        path=normalize_path(entry.get("filePath"), "file path"),
        content=entry.get("fileContent"),
        mode=check_mode(entry.get("fileMode")),
        source=normalize_path(source.get("filePath"), "source file path") if source else None,
        is_move=bool(source and source.get("isMove")),
    )


def _mode_change(entry: Mapping[str, str]) -> tuple[str, str]:
    path = normalize_path(entry.get("filePath"), "file path")
    mode = check_mode(entry.get("fileMode"))
    if mode is None:
        raise CodeCommitError("FileModeRequiredException", f"{path}: a file mode is required.")
    return path, mode


def get_branch(self: CodeCommitBackend, repository_name: str, branch_name: str | None = None) -> dict[str, Any]:
    """GetBranch: the commit a branch points at."""
    _, git = _repository(self, repository_name)
    return {"branch": {"branchName": branch_name, "commitId": git.head(branch_name)}}


def create_branch(self: CodeCommitBackend, repository_name: str, branch_name: str, commit_id: str) -> dict[str, Any]:
    """CreateBranch: a new branch at an existing commit."""
    model, git = _repository(self, repository_name)
    _moved(self, model, git, git.create_branch(branch_name, commit_id))
    return {}


def list_branches(self: CodeCommitBackend, repository_name: str, next_token: str | None = None) -> dict[str, Any]:
    """ListBranches: every branch name, in one page (so no continuation token is valid)."""
    _, git = _repository(self, repository_name)
    if next_token is not None:
        raise CodeCommitError("InvalidContinuationTokenException", f"The nextToken {next_token!r} is not valid.")
    return {"branches": sorted(git.branches)}


def get_commit(self: CodeCommitBackend, repository_name: str, commit_id: str) -> dict[str, Any]:
    """GetCommit: a commit's tree, parents, message, author and committer."""
    _, git = _repository(self, repository_name)
    commit = git.commit(commit_id)
    person = commit.author.as_user_info()
    return {
        "commit": {
            "commitId": commit.commit_id,
            "treeId": commit.tree_id,
            "parents": list(commit.parents),
            "message": commit.message,
            "author": person,
            "committer": person,
            "additionalData": "",
        }
    }


def get_file(
    self: CodeCommitBackend, repository_name: str, file_path: str, commit_specifier: str | None = None
) -> dict[str, Any]:
    """GetFile: a file's content and metadata at a commit (branch, commit id or HEAD)."""
    _, git = _repository(self, repository_name)
    path = normalize_path(file_path, "file path")
    commit = git.resolve(commit_specifier)
    entry = commit.files.get(path)
    if entry is None:
        raise CodeCommitError(
            "FileDoesNotExistException",
            f"The file {path} does not exist at commit {commit.commit_id} of {repository_name}.",
        )
    content = git.blobs[entry.blob_id]
    return {
        "commitId": commit.commit_id,
        "blobId": entry.blob_id,
        "filePath": path,
        "fileMode": entry.mode,
        "fileSize": len(content),
        "fileContent": content,
    }


def get_folder(
    self: CodeCommitBackend, repository_name: str, folder_path: str, commit_specifier: str | None = None
) -> dict[str, Any]:
    """GetFolder: a folder's subfolders, files and symbolic links at a commit ("" or "/" is the root)."""
    _, git = _repository(self, repository_name)
    folder = normalize_folder(folder_path)
    commit = git.resolve(commit_specifier)
    if folder not in commit.folders:
        raise CodeCommitError(
            "FolderDoesNotExistException",
            f"The folder {folder_path} does not exist at commit {commit.commit_id} of {repository_name}.",
        )
    subfolders, files = list_folder(commit.files, folder)

    def item(path: str, entry: FileEntry) -> dict[str, str]:
        return {**_file_metadata(path, entry), "relativePath": path.rpartition("/")[2]}

    return {
        "commitId": commit.commit_id,
        "folderPath": folder,
        "treeId": commit.folders[folder],
        "subFolders": [
            {"treeId": commit.folders[sub], "absolutePath": sub, "relativePath": sub.rpartition("/")[2]}
            for sub in subfolders
        ],
        "files": [item(path, entry) for path, entry in files.items() if entry.mode != "SYMLINK"],
        "symbolicLinks": [item(path, entry) for path, entry in files.items() if entry.mode == "SYMLINK"],
        "subModules": [],
    }


def get_blob(self: CodeCommitBackend, repository_name: str, blob_id: str) -> dict[str, Any]:
    """GetBlob: a blob's content."""
    _, git = _repository(self, repository_name)
    return {"content": git.blob(blob_id)}


def get_differences(
    self: CodeCommitBackend,
    repository_name: str,
    after_commit_specifier: str,
    before_commit_specifier: str | None = None,
    before_path: str | None = None,
    after_path: str | None = None,
    max_results: int | None = None,
    next_token: str | None = None,
) -> dict[str, Any]:
    """GetDifferences: files added (A), modified (M) or deleted (D) between two commits, by path.

    Without a before commit, every file of the after commit is added. A path limits the comparison to that
    file or folder (one path applies to both sides); renames show as a deletion and an addition.
    """
    _, git = _repository(self, repository_name)
    if not after_commit_specifier:
        raise CodeCommitError("CommitRequiredException", "An afterCommitSpecifier is required.")
    after = git.resolve(after_commit_specifier).files
    before = git.resolve(before_commit_specifier).files if before_commit_specifier else {}
    before_files = _under(before, before_path or after_path)
    after_files = _under(after, after_path or before_path)
    if (before_path or after_path) and not (before_files or after_files):
        raise CodeCommitError("PathDoesNotExistException", f"{before_path or after_path} exists in neither commit.")
    found = differences(before_files, after_files)
    start, end = _page(next_token, max_results, len(found))
    result: dict[str, Any] = {"differences": [_difference(path, old, new) for path, old, new in found[start:end]]}
    if end < len(found):
        result["NextToken"] = str(end)
    return result


def _under(files: Mapping[str, FileEntry], path: str | None) -> Mapping[str, FileEntry]:
    if not path:
        return files
    folder = normalize_folder(path)
    return {name: entry for name, entry in files.items() if name == folder or name.startswith(folder + "/")}


def _page(next_token: str | None, max_results: int | None, total: int) -> tuple[int, int]:
    if max_results is not None and max_results < 1:
        raise CodeCommitError("InvalidMaxResultsException", f"MaxResults must be positive, not {max_results}.")
    if next_token is not None and not (next_token.isdigit() and int(next_token) <= total):
        raise CodeCommitError("InvalidContinuationTokenException", f"The NextToken {next_token!r} is not valid.")
    start = int(next_token or 0)
    return start, total if max_results is None else min(total, start + max_results)


def _difference(path: str, old: FileEntry | None, new: FileEntry | None) -> dict[str, Any]:
    result: dict[str, Any] = {"changeType": "D" if new is None else "A" if old is None else "M"}
    if old is not None:
        result["beforeBlob"] = {"blobId": old.blob_id, "path": path, "mode": GIT_MODES[old.mode]}
    if new is not None:
        result["afterBlob"] = {"blobId": new.blob_id, "path": path, "mode": GIT_MODES[new.mode]}
    return result


OPERATIONS = {
    operation.__name__: operation
    for operation in (
        put_file,
        create_commit,
        get_branch,
        create_branch,
        list_branches,
        get_commit,
        get_file,
        get_folder,
        get_blob,
        get_differences,
    )
}
