"""Git objects for the CodeCommit patch: blobs, trees and commits with the ids Git itself computes."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# CodeCommit's file modes and the Git modes behind them (GetDifferences reports the Git ones).
GIT_MODES = {"NORMAL": "100644", "EXECUTABLE": "100755", "SYMLINK": "120000"}
_TREE_MODE = "40000"


@dataclass(frozen=True)
class FileEntry:
    """A file of a snapshot: its blob id and its CodeCommit file mode (NORMAL, EXECUTABLE or SYMLINK)."""

    blob_id: str
    mode: str


@dataclass(frozen=True)
class Person:
    """The author (and committer) of a commit."""

    name: str
    email: str
    timestamp: int

    def signature(self) -> str:
        """Git's `name <email> seconds offset`."""
        return f"{self.name} <{self.email}> {self.timestamp} +0000"

    def as_user_info(self) -> dict[str, str]:
        """CodeCommit's UserInfo; its date is Git's `seconds offset`."""
        return {"name": self.name, "email": self.email, "date": f"{self.timestamp} +0000"}


@dataclass(frozen=True)
class Commit:
    """An immutable snapshot: every file by path, the tree id of every folder ("" is the root)."""

    commit_id: str
    tree_id: str
    parents: tuple[str, ...]
    message: str
    author: Person
    files: Mapping[str, FileEntry]
    folders: Mapping[str, str]


def _object_id(kind: str, body: bytes) -> str:
    return hashlib.sha1(f"{kind} {len(body)}\0".encode() + body, usedforsecurity=False).hexdigest()


def blob_id(content: bytes) -> str:
    """The Git blob id of `content`."""
    return _object_id("blob", content)


def _tree_id(entries: Mapping[str, tuple[str, str]]) -> str:
    """Git sorts tree entries by name, a folder as if its name ended with "/"."""

    def key(name: str) -> str:
        return name + "/" if entries[name][0] == _TREE_MODE else name

    body = b"".join(
        f"{entries[name][0]} {name}\0".encode() + bytes.fromhex(entries[name][1]) for name in sorted(entries, key=key)
    )
    return _object_id("tree", body)


def folder_tree_ids(files: Mapping[str, FileEntry]) -> dict[str, str]:
    """The Git tree id of every folder that holds files, deepest first computed ("" is the root)."""
    children: dict[str, dict[str, tuple[str, str]]] = {"": {}}
    for path, entry in files.items():
        parts = path.split("/")
        for depth in range(1, len(parts)):
            children.setdefault("/".join(parts[:depth]), {})
        children["/".join(parts[:-1])][parts[-1]] = (GIT_MODES[entry.mode], entry.blob_id)
    ids: dict[str, str] = {}
    for folder in sorted(children, key=lambda name: name.count("/") + 1 if name else 0, reverse=True):
        ids[folder] = _tree_id(children[folder])
        if folder:
            parent, _, name = folder.rpartition("/")
            children[parent][name] = (_TREE_MODE, ids[folder])
    return ids


def make_commit(files: Mapping[str, FileEntry], parents: tuple[str, ...], message: str, author: Person) -> Commit:
    """A commit of `files` whose id is the Git commit id (author and committer are the same person)."""
    folders = folder_tree_ids(files)
    headers = [
        f"tree {folders['']}",
        *(f"parent {parent}" for parent in parents),
        f"author {author.signature()}",
        f"committer {author.signature()}",
    ]
    text = "\n".join(headers) + "\n\n" + message + ("" if message.endswith("\n") else "\n")
    return Commit(
        commit_id=_object_id("commit", text.encode()),
        tree_id=folders[""],
        parents=parents,
        message=message,
        author=author,
        files=MappingProxyType(dict(files)),
        folders=MappingProxyType(folders),
    )


def list_folder(files: Mapping[str, FileEntry], folder: str) -> tuple[list[str], dict[str, FileEntry]]:
    """The direct subfolders (sorted paths) and files (by path) of `folder` ("" is the root)."""
    prefix = f"{folder}/" if folder else ""
    subfolders: set[str] = set()
    direct: dict[str, FileEntry] = {}
    for path in sorted(files):
        if not path.startswith(prefix):
            continue
        name, sep, _ = path[len(prefix) :].partition("/")
        if sep:
            subfolders.add(prefix + name)
        else:
            direct[path] = files[path]
    return sorted(subfolders), direct


def differences(
    before: Mapping[str, FileEntry], after: Mapping[str, FileEntry]
) -> list[tuple[str, FileEntry | None, FileEntry | None]]:
    """(path, before, after) for every path added, deleted or changed in content or mode, by path."""
    return [
        (path, before.get(path), after.get(path))
        for path in sorted(before.keys() | after.keys())
        if before.get(path) != after.get(path)
    ]
