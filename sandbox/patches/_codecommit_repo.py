"""One CodeCommit repository's Git state: blobs, commits and branch refs, moved only under a lock."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from clm_sandbox.patches._codecommit_errors import CodeCommitError
from clm_sandbox.patches._codecommit_git import Commit, FileEntry, Person, make_commit

_OBJECT_ID = re.compile(r"[0-9a-f]{40}")

# Computes a commit's files from its parent's; returns them and the new blobs by id.
Change = Callable[[Mapping[str, FileEntry]], tuple[Mapping[str, FileEntry], Mapping[str, bytes]]]


@dataclass(frozen=True)
class RefUpdate:
    """A branch now pointing at `commit`; `old_commit_id` is None when the branch was created."""

    branch: str
    commit: Commit
    old_commit_id: str | None


class GitRepository:
    """The commits and branches of one repository; the first commit creates the default branch."""

    def __init__(self, name: str):
        self.name = name
        self.blobs: dict[str, bytes] = {}
        self.commits: dict[str, Commit] = {}
        self.branches: dict[str, str] = {}
        self.default_branch: str | None = None
        self._lock = threading.Lock()

    def blob(self, blob_id: str) -> bytes:
        """A blob's content; InvalidBlobIdException or BlobIdDoesNotExistException otherwise."""
        if not _OBJECT_ID.fullmatch(blob_id):
            raise CodeCommitError("InvalidBlobIdException", f"The blob id {blob_id!r} is not valid.")
        if blob_id not in self.blobs:
            raise CodeCommitError("BlobIdDoesNotExistException", f"Blob {blob_id} does not exist in {self.name}.")
        return self.blobs[blob_id]

    def head(self, branch: str | None) -> str:
        """The commit id a branch points at."""
        if not branch:
            raise CodeCommitError("BranchNameRequiredException", "A branch name is required.")
        if branch not in self.branches:
            raise CodeCommitError("BranchDoesNotExistException", f"Branch {branch} does not exist in {self.name}.")
        return self.branches[branch]

    def commit(self, commit_id: str | None, missing: str = "CommitIdDoesNotExistException") -> Commit:
        """The commit with this full id; `missing` names the error code when there is none."""
        if not commit_id:
            raise CodeCommitError("CommitIdRequiredException", "A commit id is required.")
        if not _OBJECT_ID.fullmatch(commit_id):
            raise CodeCommitError("InvalidCommitIdException", f"The commit id {commit_id!r} is not valid.")
        if commit_id not in self.commits:
            raise CodeCommitError(missing, f"Commit {commit_id} does not exist in {self.name}.")
        return self.commits[commit_id]

    def resolve(self, specifier: str | None) -> Commit:
        """The commit a specifier names: a branch (also refs/heads/...), a commit id, or HEAD/none (default)."""
        name = self.default_branch if specifier in (None, "", "HEAD") else specifier.removeprefix("refs/heads/")
        if name in self.branches:
            return self.commits[self.branches[name]]
        if specifier in self.commits:
            return self.commits[specifier]
        raise CodeCommitError(
            "CommitDoesNotExistException", f"{specifier or 'HEAD'} does not name a commit of {self.name}."
        )

    def create_branch(self, branch: str, commit_id: str) -> RefUpdate:
        """A new branch at an existing commit."""
        with self._lock:
            if not branch:
                raise CodeCommitError("BranchNameRequiredException", "A branch name is required.")
            if branch in self.branches:
                raise CodeCommitError("BranchNameExistsException", f"Branch {branch} already exists in {self.name}.")
            commit = self.commit(commit_id, missing="CommitDoesNotExistException")
            self.branches[branch] = commit.commit_id
            return RefUpdate(branch, commit, None)

    def commit_to(
        self, branch: str, parent_commit_id: str | None, author: Person, message: str, change: Change
    ) -> RefUpdate:
        """Commit `change` on top of `branch`, whose head must be `parent_commit_id` (AWS's checks)."""
        with self._lock:
            if not branch:
                raise CodeCommitError("BranchNameRequiredException", "A branch name is required.")
            head = self._checked_parent(branch, parent_commit_id)
            files, blobs = change(self.commits[head].files if head else {})
            commit = make_commit(files, (head,) if head else (), message, author)
            self.blobs.update(blobs)
            self.commits[commit.commit_id] = commit
            self.branches[branch] = commit.commit_id
            self.default_branch = self.default_branch or branch
            return RefUpdate(branch, commit, head)

    def _checked_parent(self, branch: str, parent: str | None) -> str | None:
        head = self.branches.get(branch)
        if head is None:
            if self.branches:
                raise CodeCommitError(
                    "BranchDoesNotExistException",
                    f"Branch {branch} does not exist in {self.name}; create it with CreateBranch first.",
                )
            if parent:
                raise CodeCommitError(
                    "ParentCommitDoesNotExistException", f"{self.name} is empty: it has no commit {parent}."
                )
            return None
        if not parent:
            raise CodeCommitError(
                "ParentCommitIdRequiredException",
                f"A parent commit id is required: branch {branch} of {self.name} is at {head}.",
            )
        if not _OBJECT_ID.fullmatch(parent):
            raise CodeCommitError("InvalidParentCommitIdException", f"The parent commit id {parent!r} is not valid.")
        if parent not in self.commits:
            raise CodeCommitError(
                "ParentCommitDoesNotExistException", f"Commit {parent} does not exist in {self.name}."
            )
        if parent != head:
            raise CodeCommitError(
                "ParentCommitIdOutdatedException",
                f"{parent} is not the head of branch {branch} of {self.name}: it is at {head}.",
            )
        return head
