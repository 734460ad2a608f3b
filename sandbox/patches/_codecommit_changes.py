"""The file changes of one commit (puts, copies, moves, deletions, mode changes), checked as CodeCommit checks them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from clm_sandbox.patches._codecommit_errors import CodeCommitError
from clm_sandbox.patches._codecommit_git import GIT_MODES, FileEntry, blob_id

MAX_FILE_ENTRIES = 100  # CodeCommit's quota of file entries in one commit
MAX_FILE_BYTES = 6 * 1024 * 1024  # and of one file's size
KEEP_FILE = "..gitkeep"  # the name CreateCommit's keepEmptyFolders documents
EMPTY_BLOB = blob_id(b"")


@dataclass(frozen=True)
class PutFile:
    """A file to add or update: with `content`, or copied (moved with `is_move`) from `source`."""

    path: str
    content: bytes | None = None
    mode: str | None = None
    source: str | None = None
    is_move: bool = False


@dataclass(frozen=True)
class ChangeRequest:
    """Everything one commit changes."""

    puts: tuple[PutFile, ...] = ()
    deletes: tuple[str, ...] = ()
    modes: tuple[tuple[str, str], ...] = ()
    keep_empty_folders: bool = False


def normalize_path(path: str | None, what: str = "path") -> str:
    """A file path without its leading "/"; PathRequiredException or InvalidPathException otherwise."""
    if not path:
        raise CodeCommitError("PathRequiredException", f"A {what} is required.")
    clean = path.removeprefix("/")
    if any(part in ("", ".", "..") for part in clean.split("/")):
        raise CodeCommitError("InvalidPathException", f"The {what} {path!r} is not valid.")
    return clean


def normalize_folder(path: str | None) -> str:
    """A folder path without leading and trailing "/" ("" is the root)."""
    if path is None:
        raise CodeCommitError("PathRequiredException", "The folderPath for a location cannot be null.")
    clean = path.strip("/")
    return normalize_path(clean, "folder path") if clean else ""


def check_mode(mode: str | None) -> str | None:
    """`mode` if it is a CodeCommit file mode (or None); InvalidFileModeException otherwise."""
    if mode is not None and mode not in GIT_MODES:
        raise CodeCommitError("InvalidFileModeException", f"The file mode {mode!r} is not valid.")
    return mode


def apply_changes(
    base: Mapping[str, FileEntry], request: ChangeRequest
) -> tuple[dict[str, FileEntry], dict[str, bytes]]:
    """The files after `request` and the new blobs by id; NoChangeException if nothing changes."""
    _check_entries(request)
    files = dict(base)
    blobs: dict[str, bytes] = {}
    removed = list(request.deletes)
    for path in request.deletes:
        files.pop(_existing(base, path))
    for put in request.puts:
        if put.source is not None:
            source = base[_existing(base, put.source)]
            files[put.path] = FileEntry(source.blob_id, put.mode or source.mode)
            if put.is_move:
                files.pop(put.source, None)
                removed.append(put.source)
        else:
            content = put.content or b""
            digest = blob_id(content)
            blobs[digest] = content
            old = files.get(put.path)
            files[put.path] = FileEntry(digest, put.mode or (old.mode if old else "NORMAL"))
    for path, mode in request.modes:
        files[path] = FileEntry(files[_existing(files, path)].blob_id, mode)
    _check_folders(files, [put.path for put in request.puts])
    if request.keep_empty_folders:
        _keep_empty_folders(files, blobs, removed)
    if files == dict(base):
        raise CodeCommitError(
            "NoChangeException",
            "The commit cannot be created because no changes will be made "
            "to the repository as a result of this commit.",
        )
    return files, blobs


def _check_entries(request: ChangeRequest) -> None:
    if not (request.puts or request.deletes or request.modes):
        raise CodeCommitError(
            "FileEntryRequiredException",
            "The commit cannot be created because no files have been specified as added, updated, or changed.",
        )
    if len(request.puts) + len(request.deletes) + len(request.modes) > MAX_FILE_ENTRIES:
        raise CodeCommitError(
            "MaximumFileEntriesExceededException", f"A commit can change at most {MAX_FILE_ENTRIES} files."
        )
    for put in request.puts:
        if put.content is not None and put.source is not None:
            raise CodeCommitError(
                "FileContentAndSourceFileSpecifiedException",
                f"{put.path}: give either fileContent or sourceFile, not both.",
            )
        if put.content is None and put.source is None:
            raise CodeCommitError(
                "SourceFileOrContentRequiredException", f"{put.path}: fileContent or sourceFile is required."
            )
        if put.content is not None and len(put.content) > MAX_FILE_BYTES:
            raise CodeCommitError(
                "FileContentSizeLimitExceededException", f"{put.path}: a file can be at most {MAX_FILE_BYTES} bytes."
            )
    touched = [put.path for put in request.puts] + list(request.deletes)
    touched += [put.source for put in request.puts if put.is_move and put.source]
    for paths in (touched, [path for path, _ in request.modes]):
        repeated = sorted(path for path, count in Counter(paths).items() if count > 1)
        if repeated:
            raise CodeCommitError("SamePathRequestException", f"The commit changes {repeated[0]} more than once.")
    puts = {put.path for put in request.puts}
    for path in puts:
        if any(_ancestors(path) & puts):
            raise CodeCommitError(
                "PutFileEntryConflictException", f"{path} is put both as a file and inside a folder of the same name."
            )


def _existing(files: Mapping[str, FileEntry], path: str) -> str:
    if path not in files:
        raise CodeCommitError("FileDoesNotExistException", f"The file {path} does not exist.")
    return path


def _ancestors(path: str) -> set[str]:
    parts = path.split("/")
    return {"/".join(parts[:depth]) for depth in range(1, len(parts))}


def _check_folders(files: Mapping[str, FileEntry], puts: list[str]) -> None:
    for path in puts:
        clash = sorted(_ancestors(path) & files.keys())
        if clash:
            raise CodeCommitError(
                "DirectoryNameConflictsWithFileNameException", f"{path} cannot be added: {clash[0]} is a file."
            )
        if any(other.startswith(path + "/") for other in files):
            raise CodeCommitError(
                "FileNameConflictsWithDirectoryNameException", f"{path} cannot be added: it is the name of a folder."
            )


def _keep_empty_folders(files: dict[str, FileEntry], blobs: dict[str, bytes], removed: list[str]) -> None:
    for path in removed:
        folder = path.rpartition("/")[0]
        if folder and not any(other.startswith(folder + "/") for other in files):
            blobs[EMPTY_BLOB] = b""
            files[f"{folder}/{KEEP_FILE}"] = FileEntry(EMPTY_BLOB, "NORMAL")
