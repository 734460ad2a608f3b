"""The CodeCommit file APIs patch: real Git commits behind AWS's request, response and error shapes."""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable
from typing import Any

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError
from moto.codecommit.models import CodeCommitBackend, codecommit_backends
from moto.codecommit.responses import CodeCommitResponse
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.utils import camelcase_to_underscores

from clm_sandbox.moto_server import moto_server
from clm_sandbox.patches import codecommit
from clm_sandbox.patches._codecommit_backend import OPERATIONS
from clm_sandbox.patches._codecommit_changes import EMPTY_BLOB, KEEP_FILE, MAX_FILE_ENTRIES
from clm_sandbox.patches._codecommit_errors import CodeCommitError
from clm_sandbox.patches._codecommit_git import FileEntry, Person, blob_id, folder_tree_ids, make_commit
from tests.conftest import REGION

REPO = "cluster-config"


SESSION = boto3.Session(region_name=REGION)  # shared by the tests, so that service models load once


@pytest.fixture
def cc(aws):
    """A CodeCommit client on in-process moto (`aws`) with the patch and an empty repository REPO."""
    codecommit.install()
    client = SESSION.client("codecommit")
    client.create_repository(repositoryName=REPO)
    return client


def error_code(call: Callable[..., Any], **params: Any) -> str:
    with pytest.raises(ClientError) as caught:
        call(repositoryName=REPO, **params)
    return caught.value.response["Error"]["Code"]


def seed(cc) -> dict[str, str]:
    """Two commits on main: README.md, then the cluster/ files; returns their ids."""
    first = cc.put_file(
        repositoryName=REPO,
        branchName="main",
        filePath="README.md",
        fileContent=b"# config\n",
        commitMessage="readme",
        name="Ada",
        email="ada@example.org",
    )["commitId"]
    second = cc.create_commit(
        repositoryName=REPO,
        branchName="main",
        parentCommitId=first,
        putFiles=[
            {"filePath": "cluster/stack.yaml", "fileContent": b"Resources: {}\n"},
            {"filePath": "/cluster/manifests/coredns/deployment.yaml", "fileContent": b"kind: Deployment\n"},
            {"filePath": "cluster/bin/check.sh", "fileContent": b"#!/bin/sh\n", "fileMode": "EXECUTABLE"},
            {"filePath": "cluster/latest", "fileContent": b"stack.yaml", "fileMode": "SYMLINK"},
        ],
    )["commitId"]
    return {"first": first, "second": second}


# --- Git objects ---------------------------------------------------------------------------------


def test_ids_are_the_ones_git_computes():
    """Expected ids from `git write-tree` / `git commit-tree` on the same files, modes, author and date."""
    files = {
        "a.txt": FileEntry(blob_id(b"hello\n"), "NORMAL"),
        "d/c": FileEntry(blob_id(b""), "NORMAL"),
        "d/e/b.sh": FileEntry(blob_id(b"x"), "EXECUTABLE"),
    }
    assert files["a.txt"].blob_id == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert files["d/c"].blob_id == EMPTY_BLOB == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert folder_tree_ids(files) == {
        "": "30e576e6ad77461686609562c6f64cee8cd737d3",
        "d": "8a2d9604ff4eb9279161f34bf3524d2b88f47e5c",
        "d/e": "7ad9fd81905e148a6c74d9c117f58dd68202038d",
    }
    commit = make_commit(files, (), "msg", Person("A", "a@x", 1700000000))
    assert commit.commit_id == "3066e5a6d3f9305d77fca6516bcee01f1be701cc"
    with pytest.raises(TypeError):
        commit.files["a.txt"] = files["d/c"]  # type: ignore[index]


# --- install ------------------------------------------------------------------------------------


def test_install_is_idempotent_and_covers_the_service_model():
    codecommit.install()
    installed = {name: (getattr(CodeCommitBackend, name), getattr(CodeCommitResponse, name)) for name in OPERATIONS}
    codecommit.install()
    assert {
        name: (getattr(CodeCommitBackend, name), getattr(CodeCommitResponse, name)) for name in OPERATIONS
    } == installed
    model = botocore.session.get_session().get_service_model("codecommit")
    for operation in (
        "PutFile",
        "CreateCommit",
        "GetBranch",
        "CreateBranch",
        "ListBranches",
        "GetCommit",
        "GetFile",
        "GetFolder",
        "GetDifferences",
        "GetBlob",
    ):
        members = {camelcase_to_underscores(m) for m in model.operation_model(operation).input_shape.members}
        parameters = set(inspect.signature(OPERATIONS[camelcase_to_underscores(operation)]).parameters) - {"self"}
        assert parameters == members, operation


# --- commits and branches -----------------------------------------------------------------------


def test_first_put_file_creates_the_default_branch(cc):
    assert cc.list_branches(repositoryName=REPO)["branches"] == []
    put = cc.put_file(
        repositoryName=REPO,
        branchName="main",
        filePath="/README.md",
        fileContent=b"# config\n",
        commitMessage="readme",
        name="Ada",
        email="ada@example.org",
    )
    assert put["blobId"] == blob_id(b"# config\n")
    assert cc.get_branch(repositoryName=REPO, branchName="main")["branch"] == {
        "branchName": "main",
        "commitId": put["commitId"],
    }
    assert cc.list_branches(repositoryName=REPO)["branches"] == ["main"]
    assert cc.get_repository(repositoryName=REPO)["repositoryMetadata"]["defaultBranch"] == "main"
    commit = cc.get_commit(repositoryName=REPO, commitId=put["commitId"])["commit"]
    assert commit["commitId"] == put["commitId"]
    assert commit["treeId"] == put["treeId"]
    assert commit["parents"] == []
    assert commit["message"] == "readme"
    assert commit["author"] == commit["committer"]
    assert commit["author"]["name"] == "Ada"
    assert commit["author"]["email"] == "ada@example.org"
    assert commit["author"]["date"].endswith(" +0000")


@pytest.mark.parametrize(
    ("branch", "path", "content", "parent", "code"),
    [  # parent: "first" and "second" name the commits made here, anything else is sent as it is
        ("main", "b.txt", b"x", None, "ParentCommitIdRequiredException"),
        ("main", "b.txt", b"x", "first", "ParentCommitIdOutdatedException"),
        ("main", "b.txt", b"x", "0" * 40, "ParentCommitDoesNotExistException"),
        ("main", "b.txt", b"x", "HEAD", "InvalidParentCommitIdException"),
        ("main", "a.txt", b"2", "second", "SameFileContentException"),
        ("main", "b.txt", b"", "second", "FileContentRequiredException"),
        ("dev", "b.txt", b"x", "second", "BranchDoesNotExistException"),
        ("main", "a.txt/b", b"x", "second", "DirectoryNameConflictsWithFileNameException"),
        ("main", "a/../b", b"x", "second", "InvalidPathException"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.endswith("Exception") else "",
)
def test_put_file_refuses_what_aws_refuses(cc, branch, path, content, parent, code):
    first = cc.put_file(repositoryName=REPO, branchName="main", filePath="a.txt", fileContent=b"1")["commitId"]
    second = cc.put_file(
        repositoryName=REPO, branchName="main", filePath="a.txt", fileContent=b"2", parentCommitId=first
    )["commitId"]
    parents = {"first": first, "second": second}
    params = {"parentCommitId": parents.get(parent, parent)} if parent else {}
    assert error_code(cc.put_file, branchName=branch, filePath=path, fileContent=content, **params) == code
    assert cc.get_branch(repositoryName=REPO, branchName="main")["branch"]["commitId"] == second


def test_create_commit_puts_copies_moves_deletes_and_changes_modes(cc):
    ids = seed(cc)
    result = cc.create_commit(
        repositoryName=REPO,
        branchName="main",
        parentCommitId=ids["second"],
        authorName="Bob",
        email="bob@x",
        commitMessage="reshape",
        keepEmptyFolders=True,
        putFiles=[
            {"filePath": "cluster/stack.yaml", "fileContent": b"Resources: {A: 1}\n"},
            {"filePath": "cluster/config-defaults.yaml", "sourceFile": {"filePath": "README.md"}},
            {"filePath": "docs/README.md", "sourceFile": {"filePath": "README.md", "isMove": True}},
        ],
        deleteFiles=[{"filePath": "cluster/manifests/coredns/deployment.yaml"}],
        setFileModes=[{"filePath": "cluster/bin/check.sh", "fileMode": "NORMAL"}],
    )
    readme = blob_id(b"# config\n")
    assert result["filesAdded"] == [
        {"absolutePath": "cluster/config-defaults.yaml", "blobId": readme, "fileMode": "NORMAL"},
        {"absolutePath": f"cluster/manifests/coredns/{KEEP_FILE}", "blobId": EMPTY_BLOB, "fileMode": "NORMAL"},
        {"absolutePath": "docs/README.md", "blobId": readme, "fileMode": "NORMAL"},
    ]
    assert result["filesUpdated"] == [
        {"absolutePath": "cluster/bin/check.sh", "blobId": blob_id(b"#!/bin/sh\n"), "fileMode": "NORMAL"},
        {"absolutePath": "cluster/stack.yaml", "blobId": blob_id(b"Resources: {A: 1}\n"), "fileMode": "NORMAL"},
    ]
    assert result["filesDeleted"] == [
        {"absolutePath": "README.md", "blobId": readme, "fileMode": "NORMAL"},
        {
            "absolutePath": "cluster/manifests/coredns/deployment.yaml",
            "blobId": blob_id(b"kind: Deployment\n"),
            "fileMode": "NORMAL",
        },
    ]
    commit = cc.get_commit(repositoryName=REPO, commitId=result["commitId"])["commit"]
    assert commit["parents"] == [ids["second"]]
    assert commit["treeId"] == result["treeId"]
    assert (commit["message"], commit["author"]["name"]) == ("reshape", "Bob")
    moved = cc.get_file(repositoryName=REPO, filePath="docs/README.md")
    assert moved["fileContent"] == b"# config\n"


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({}, "FileEntryRequiredException"),
        ({"putFiles": [{"filePath": "README.md", "fileContent": b"# config\n"}]}, "NoChangeException"),
        (
            {"putFiles": [{"filePath": "x", "fileContent": b"1"}], "deleteFiles": [{"filePath": "x"}]},
            "SamePathRequestException",
        ),
        (
            {"putFiles": [{"filePath": "x", "fileContent": b"1"}, {"filePath": "x/y", "fileContent": b"2"}]},
            "PutFileEntryConflictException",
        ),
        ({"putFiles": [{"filePath": "cluster", "fileContent": b"1"}]}, "FileNameConflictsWithDirectoryNameException"),
        (
            {"putFiles": [{"filePath": "README.md/x", "fileContent": b"1"}]},
            "DirectoryNameConflictsWithFileNameException",
        ),
        ({"deleteFiles": [{"filePath": "missing.yaml"}]}, "FileDoesNotExistException"),
        ({"putFiles": [{"filePath": "x", "sourceFile": {"filePath": "missing.yaml"}}]}, "FileDoesNotExistException"),
        ({"setFileModes": [{"filePath": "missing.yaml", "fileMode": "EXECUTABLE"}]}, "FileDoesNotExistException"),
        ({"putFiles": [{"filePath": "x"}]}, "SourceFileOrContentRequiredException"),
        (
            {"putFiles": [{"filePath": "x", "fileContent": b"1", "sourceFile": {"filePath": "README.md"}}]},
            "FileContentAndSourceFileSpecifiedException",
        ),
        ({"putFiles": [{"filePath": "x", "fileContent": b"1", "fileMode": "FIFO"}]}, "InvalidFileModeException"),
        ({"putFiles": [{"filePath": "a//b", "fileContent": b"1"}]}, "InvalidPathException"),
        (
            {"putFiles": [{"filePath": f"f{i}", "fileContent": b"1"} for i in range(MAX_FILE_ENTRIES + 1)]},
            "MaximumFileEntriesExceededException",
        ),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_create_commit_refuses_what_aws_refuses(cc, changes, code):
    head = seed(cc)["second"]
    assert error_code(cc.create_commit, branchName="main", parentCommitId=head, **changes) == code
    assert cc.get_branch(repositoryName=REPO, branchName="main")["branch"]["commitId"] == head


def test_members_botocore_requires_are_checked_for_other_clients(cc):
    head = seed(cc)["second"]
    backend = codecommit_backends[DEFAULT_ACCOUNT_ID][REGION]
    with pytest.raises(CodeCommitError) as caught:
        backend.create_commit(REPO, "main", parent_commit_id=head, set_file_modes=[{"filePath": "README.md"}])
    assert caught.value.error_type == "FileModeRequiredException"
    with pytest.raises(CodeCommitError) as caught:
        backend.get_branch(REPO)
    assert caught.value.error_type == "BranchNameRequiredException"


def test_branches_are_refs_to_commits(cc):
    ids = seed(cc)
    cc.create_branch(repositoryName=REPO, branchName="dev", commitId=ids["first"])
    assert cc.list_branches(repositoryName=REPO)["branches"] == ["dev", "main"]
    dev = cc.put_file(
        repositoryName=REPO, branchName="dev", filePath="dev.txt", fileContent=b"d", parentCommitId=ids["first"]
    )["commitId"]
    assert cc.get_commit(repositoryName=REPO, commitId=dev)["commit"]["parents"] == [ids["first"]]
    assert cc.get_branch(repositoryName=REPO, branchName="main")["branch"]["commitId"] == ids["second"]
    assert error_code(cc.get_file, filePath="dev.txt", commitSpecifier="main") == "FileDoesNotExistException"
    assert cc.get_file(repositoryName=REPO, filePath="dev.txt", commitSpecifier="dev")["commitId"] == dev
    assert error_code(cc.create_branch, branchName="dev", commitId=ids["second"]) == "BranchNameExistsException"
    assert error_code(cc.create_branch, branchName="x", commitId="f" * 40) == "CommitDoesNotExistException"
    assert error_code(cc.create_branch, branchName="x", commitId="main") == "InvalidCommitIdException"
    assert error_code(cc.get_commit, commitId="f" * 40) == "CommitIdDoesNotExistException"
    assert error_code(cc.get_branch, branchName="missing") == "BranchDoesNotExistException"
    with pytest.raises(ClientError, match="RepositoryDoesNotExistException"):
        cc.get_branch(repositoryName="missing", branchName="main")
    assert cc.get_repository(repositoryName=REPO)["repositoryMetadata"]["defaultBranch"] == "main"


# --- reading at a commit ------------------------------------------------------------------------


def test_commits_are_immutable_snapshots(cc):
    ids = seed(cc)
    cc.put_file(
        repositoryName=REPO,
        branchName="main",
        filePath="cluster/stack.yaml",
        fileContent=b"v2\n",
        parentCommitId=ids["second"],
    )
    at_second = cc.get_file(repositoryName=REPO, filePath="cluster/stack.yaml", commitSpecifier=ids["second"])
    assert at_second["fileContent"] == b"Resources: {}\n"
    assert at_second["commitId"] == ids["second"]
    for specifier in ("main", "refs/heads/main", "HEAD", None):
        params = {"commitSpecifier": specifier} if specifier else {}
        latest = cc.get_file(repositoryName=REPO, filePath="/cluster/stack.yaml", **params)
        assert (latest["fileContent"], latest["filePath"], latest["fileSize"]) == (b"v2\n", "cluster/stack.yaml", 3)
    assert (
        error_code(cc.get_folder, folderPath="cluster", commitSpecifier=ids["first"]) == "FolderDoesNotExistException"
    )
    assert (
        error_code(cc.get_file, filePath="README.md", commitSpecifier="no-such-branch") == "CommitDoesNotExistException"
    )
    assert error_code(cc.get_file, filePath="cluster", commitSpecifier="main") == "FileDoesNotExistException"
    assert error_code(cc.get_folder, folderPath="README.md", commitSpecifier="main") == "FolderDoesNotExistException"


def test_get_folder_lists_like_aws(cc):
    ids = seed(cc)
    root = cc.get_folder(repositoryName=REPO, folderPath="/", commitSpecifier="main")
    assert cc.get_folder(repositoryName=REPO, folderPath="")["treeId"] == root["treeId"]
    commit = cc.get_commit(repositoryName=REPO, commitId=ids["second"])["commit"]
    assert (root["commitId"], root["treeId"], root["folderPath"]) == (ids["second"], commit["treeId"], "")
    assert [(f["absolutePath"], f["relativePath"]) for f in root["subFolders"]] == [("cluster", "cluster")]
    assert root["files"] == [
        {
            "absolutePath": "README.md",
            "relativePath": "README.md",
            "fileMode": "NORMAL",
            "blobId": blob_id(b"# config\n"),
        }
    ]
    cluster = cc.get_folder(repositoryName=REPO, folderPath="/cluster/", commitSpecifier="main")
    assert cluster["folderPath"] == "cluster"
    assert cluster["treeId"] == root["subFolders"][0]["treeId"]
    assert [(f["absolutePath"], f["relativePath"]) for f in cluster["subFolders"]] == [
        ("cluster/bin", "bin"),
        ("cluster/manifests", "manifests"),
    ]
    assert [(f["absolutePath"], f["relativePath"], f["fileMode"]) for f in cluster["files"]] == [
        ("cluster/stack.yaml", "stack.yaml", "NORMAL")
    ]
    assert cluster["symbolicLinks"] == [
        {
            "absolutePath": "cluster/latest",
            "relativePath": "latest",
            "fileMode": "SYMLINK",
            "blobId": blob_id(b"stack.yaml"),
        }
    ]
    assert cluster["subModules"] == []
    executable = cc.get_folder(repositoryName=REPO, folderPath="cluster/bin")["files"]
    assert [(f["relativePath"], f["fileMode"]) for f in executable] == [("check.sh", "EXECUTABLE")]


def test_get_differences_between_commit_specifiers(cc):
    ids = seed(cc)
    third = cc.create_commit(
        repositoryName=REPO,
        branchName="main",
        parentCommitId=ids["second"],
        putFiles=[
            {"filePath": "cluster/stack.yaml", "fileContent": b"Resources: {A: 1}\n"},
            {"filePath": "cluster/new.yaml", "fileContent": b"new\n"},
        ],
        deleteFiles=[{"filePath": "README.md"}],
        setFileModes=[{"filePath": "cluster/bin/check.sh", "fileMode": "NORMAL"}],
    )["commitId"]
    found = cc.get_differences(repositoryName=REPO, beforeCommitSpecifier=ids["second"], afterCommitSpecifier="main")[
        "differences"
    ]
    assert [(d["changeType"], (d.get("beforeBlob") or d["afterBlob"])["path"]) for d in found] == [
        ("D", "README.md"),
        ("M", "cluster/bin/check.sh"),
        ("A", "cluster/new.yaml"),
        ("M", "cluster/stack.yaml"),
    ]
    assert found[0] == {
        "changeType": "D",
        "beforeBlob": {"blobId": blob_id(b"# config\n"), "path": "README.md", "mode": "100644"},
    }
    assert (found[1]["beforeBlob"]["mode"], found[1]["afterBlob"]["mode"]) == ("100755", "100644")
    assert found[3]["afterBlob"]["blobId"] == blob_id(b"Resources: {A: 1}\n")
    only = cc.get_differences(
        repositoryName=REPO,
        beforeCommitSpecifier=ids["second"],
        afterCommitSpecifier=third,
        afterPath="cluster/stack.yaml",
    )["differences"]
    assert [d["afterBlob"]["path"] for d in only] == ["cluster/stack.yaml"]
    everything = cc.get_differences(repositoryName=REPO, afterCommitSpecifier=ids["first"])["differences"]
    assert everything == [
        {"changeType": "A", "afterBlob": {"blobId": blob_id(b"# config\n"), "path": "README.md", "mode": "100644"}}
    ]
    pages = cc.get_paginator("get_differences").paginate(
        repositoryName=REPO,
        beforeCommitSpecifier=ids["second"],
        afterCommitSpecifier=third,
        PaginationConfig={"PageSize": 3},
    )
    assert [len(page["differences"]) for page in pages] == [3, 1]
    assert (
        error_code(cc.get_differences, afterCommitSpecifier="main", beforePath="nowhere") == "PathDoesNotExistException"
    )
    assert error_code(cc.get_differences, afterCommitSpecifier="main", MaxResults=0) == "InvalidMaxResultsException"
    assert (
        error_code(cc.get_differences, afterCommitSpecifier="main", NextToken="x")
        == "InvalidContinuationTokenException"
    )


def test_get_blob(cc):
    seed(cc)
    blob = cc.get_folder(repositoryName=REPO, folderPath="/")["files"][0]["blobId"]
    assert cc.get_blob(repositoryName=REPO, blobId=blob)["content"] == b"# config\n"
    assert error_code(cc.get_blob, blobId="f" * 40) == "BlobIdDoesNotExistException"
    assert error_code(cc.get_blob, blobId="README.md") == "InvalidBlobIdException"


# --- EventBridge --------------------------------------------------------------------------------


def test_branch_changes_reach_eventbridge_rules(cc):
    sqs, events = SESSION.client("sqs"), SESSION.client("events")
    queue = sqs.create_queue(QueueName="config-changes")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    events.put_rule(
        Name="config-main",
        EventPattern=json.dumps(
            {
                "source": ["aws.codecommit"],
                "detail-type": ["CodeCommit Repository State Change"],
                "detail": {
                    "event": ["referenceCreated", "referenceUpdated"],
                    "referenceType": ["branch"],
                    "referenceName": ["main"],
                },
            }
        ),
    )
    events.put_targets(Rule="config-main", Targets=[{"Id": "queue", "Arn": queue_arn}])
    ids = seed(cc)
    cc.create_branch(repositoryName=REPO, branchName="dev", commitId=ids["first"])  # not main: no match
    messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
    received = [json.loads(message["Body"]) for message in messages]
    repository = cc.get_repository(repositoryName=REPO)["repositoryMetadata"]
    assert [event["detail"] for event in received] == [
        {
            "event": "referenceCreated",
            "repositoryName": REPO,
            "repositoryId": repository["repositoryId"],
            "referenceType": "branch",
            "referenceName": "main",
            "referenceFullName": "refs/heads/main",
            "commitId": ids["first"],
        },
        {
            "event": "referenceUpdated",
            "repositoryName": REPO,
            "repositoryId": repository["repositoryId"],
            "referenceType": "branch",
            "referenceName": "main",
            "referenceFullName": "refs/heads/main",
            "commitId": ids["second"],
            "oldCommitId": ids["first"],
        },
    ]
    assert {event["source"] for event in received} == {"aws.codecommit"}
    assert received[0]["resources"] == [repository["Arn"]]


# --- moto server --------------------------------------------------------------------------------


def test_through_the_moto_server_with_racing_writers():
    codecommit.install()
    with moto_server() as endpoint:
        client = boto3.client("codecommit", region_name=REGION, endpoint_url=endpoint)
        client.create_repository(repositoryName=REPO)
        head = client.put_file(
            repositoryName=REPO, branchName="main", filePath="cluster/stack.yaml", fileContent=b"Resources: {}\n"
        )["commitId"]
        outcomes: list[str] = []

        def write(number: int) -> None:
            writer = boto3.client("codecommit", region_name=REGION, endpoint_url=endpoint)
            try:
                writer.create_commit(
                    repositoryName=REPO,
                    branchName="main",
                    parentCommitId=head,
                    putFiles=[{"filePath": f"writer-{number}.txt", "fileContent": b"x"}],
                )
                outcomes.append("committed")
            except ClientError as exc:
                outcomes.append(exc.response["Error"]["Code"])

        writers = [threading.Thread(target=write, args=(number,)) for number in range(4)]
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join()
        assert sorted(outcomes) == ["ParentCommitIdOutdatedException"] * 3 + ["committed"]
        folder = client.get_folder(repositoryName=REPO, folderPath="/", commitSpecifier="main")
        assert len(folder["files"]) == 1
        assert folder["subFolders"][0]["absolutePath"] == "cluster"
        assert client.get_file(repositoryName=REPO, filePath="cluster/stack.yaml")["fileContent"] == b"Resources: {}\n"
        with pytest.raises(client.exceptions.FileDoesNotExistException):
            client.get_file(repositoryName=REPO, filePath="missing.yaml", commitSpecifier=head)
