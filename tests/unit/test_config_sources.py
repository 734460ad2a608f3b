"""Config sources: the tree, a local directory, S3 and CodeCommit (moto); combined: test_config_combined.py."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from clm.config.codecommit import CodeCommitSource
from clm.config.local import LocalSource
from clm.config.s3 import ATTEMPTS, S3Source
from clm.config.tree import ConfigTree
from clm.errors import ConfigSourceError
from clm_sandbox.moto_server import free_port
from clm_sandbox.patches.codecommit import install as install_codecommit
from tests.conftest import REGION

BUCKET = "clm-config"
STACK_KEY = "config/cluster/stack.yaml"
REPO_FILES = {
    "cluster/stack.yaml": b"Resources: {}\n",
    "cluster/config-defaults.yaml": b"vpc_cidr: 10.0.0.0/16\n",
    "cluster/manifests/coredns/deployment.yaml": b"kind: Deployment\n",
    "cluster/manifests/deletions.yaml": b"pre_apply: []\n",
}


def write(root: Path, files: dict[str, bytes]) -> None:
    for path, content in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(content)


# --- ConfigTree ---------------------------------------------------------------------------------


def test_tree_read_exists_list():
    tree = ConfigTree(version="abc", files={**REPO_FILES, "cluster/manifests-old/x.yaml": b""}, source="s3://b/p/")
    assert tree.read("cluster/stack.yaml") == b"Resources: {}\n"
    assert tree.exists("cluster/stack.yaml")
    assert not tree.exists("cluster/cluster.yaml")
    expected = ["cluster/manifests/coredns/deployment.yaml", "cluster/manifests/deletions.yaml"]
    assert tree.list("cluster/manifests/") == expected
    assert tree.list("cluster/manifests") == expected
    assert tree.list("") == sorted(tree.files)
    with pytest.raises(ConfigSourceError, match=r"cluster/cluster\.yaml not found in s3://b/p/"):
        tree.read("cluster/cluster.yaml")


def test_tree_rejects_unsafe_version():
    with pytest.raises(ValueError, match="version"):
        ConfigTree(version="a#b", files={}, source="x")


# --- LocalSource --------------------------------------------------------------------------------


def test_local_version_is_stable_and_follows_content(tmp_path):
    write(tmp_path, REPO_FILES)
    source = LocalSource(tmp_path)
    version = source.version()
    assert re.fullmatch(r"[0-9a-f]{12}", version)
    assert source.version() == version
    (tmp_path / "cluster/stack.yaml").write_bytes(b"Resources: {Changed: 1}\n")
    assert source.version() != version
    (tmp_path / "cluster/stack.yaml").write_bytes(REPO_FILES["cluster/stack.yaml"])
    assert source.version() == version
    (tmp_path / "cluster/stack.yaml").rename(tmp_path / "cluster/cluster.yaml")
    assert source.version() != version


def test_local_fetch_reads_every_file_and_ignores_dot_entries(tmp_path):
    write(tmp_path, REPO_FILES)
    source = LocalSource(tmp_path)
    version = source.version()
    write(
        tmp_path,
        {
            ".git/HEAD": b"ref: refs/heads/main\n",
            ".gitignore": b"*.swp\n",
            "cluster/.stack.yaml.swp": b"junk",
            ".github/workflows/ci.yaml": b"on: push\n",
        },
    )
    tree = source.fetch()
    assert dict(tree.files) == REPO_FILES
    assert tree.version == version == source.version()
    assert tree.source == str(tmp_path.resolve())


def test_local_missing_directory(tmp_path):
    with pytest.raises(ConfigSourceError, match="missing"):
        LocalSource(tmp_path / "missing").fetch()


# --- S3Source -----------------------------------------------------------------------------------


def make_bucket(aws, versioned: bool = False):
    """An S3 client with BUCKET holding REPO_FILES under config/ (plus noise elsewhere)."""
    client = aws.client("s3")
    client.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    if versioned:
        client.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    upload(client, REPO_FILES)
    client.put_object(Bucket=BUCKET, Key="config/", Body=b"")  # a console "folder"
    client.put_object(Bucket=BUCKET, Key="other/cluster/stack.yaml", Body=b"not ours")
    return client


@pytest.fixture(params=[False, True], ids=["unversioned", "versioned"])
def s3(aws, request):
    return make_bucket(aws, versioned=request.param)


def upload(client, files: dict[str, bytes], prefix: str = "config/") -> None:
    for path, content in files.items():
        client.put_object(Bucket=BUCKET, Key=prefix + path, Body=content)


def count_calls(client, operation: str) -> list[dict]:
    calls: list[dict] = []
    client.meta.events.register(f"before-call.s3.{operation}", lambda params, **_: calls.append(params))
    return calls


def test_s3_fetch_is_relative_to_the_prefix(s3):
    source = S3Source(s3, BUCKET, "config")
    tree = source.fetch()
    assert dict(tree.files) == REPO_FILES
    assert tree.version == source.version()
    assert re.fullmatch(r"[0-9a-f]{12}", tree.version)
    assert tree.source == source.describe() == f"s3://{BUCKET}/config/"


def test_s3_version_changes_on_upload(s3):
    source = S3Source(s3, BUCKET, "config/")
    version = source.version()
    assert source.version() == version
    upload(s3, {"cluster/stack.yaml": b"Resources: {Changed: 1}\n"})
    assert source.version() != version
    assert source.fetch().read("cluster/stack.yaml") == b"Resources: {Changed: 1}\n"


def test_s3_version_reads_no_object(s3):
    source = S3Source(s3, BUCKET, "config/")
    gets = count_calls(s3, "GetObject")
    source.version()
    assert gets == []
    source.fetch()
    assert len(gets) == len(REPO_FILES)


def overwrite_before_read(s3, aws, times: int) -> None:
    """Make another writer overwrite cluster/stack.yaml just before each of its first `times` reads."""
    writer = aws.client("s3")
    done: list[int] = []

    def hook(params, **_):
        if params["Key"] == STACK_KEY and len(done) < times:
            done.append(1)
            writer.put_object(Bucket=BUCKET, Key=STACK_KEY, Body=f"v{len(done)}".encode())

    s3.meta.events.register("before-parameter-build.s3.GetObject", hook)


def test_s3_concurrent_overwrite_gives_a_consistent_snapshot(s3, aws):
    source = S3Source(s3, BUCKET, "config/")
    before = source.version()
    versioned = s3.get_bucket_versioning(Bucket=BUCKET).get("Status") == "Enabled"
    overwrite_before_read(s3, aws, times=1)
    tree = source.fetch()
    if versioned:  # the listed versions are read, and the version names exactly them
        assert tree.read("cluster/stack.yaml") == REPO_FILES["cluster/stack.yaml"]
        assert tree.version == before
    else:  # the change is detected and the snapshot is taken again
        assert tree.read("cluster/stack.yaml") == b"v1"
        assert tree.version != before
    assert source.version() == S3Source(s3, BUCKET, "config/").fetch().version
    assert dict(tree.files) == {**REPO_FILES, "cluster/stack.yaml": tree.read("cluster/stack.yaml")}


def test_s3_unversioned_object_deleted_between_list_and_read(aws):
    client = make_bucket(aws)
    lists = count_calls(client, "ListObjectsV2")
    writer = aws.client("s3")

    def delete_once(params, **_):
        if params["Key"] == STACK_KEY and len(lists) == 1:
            writer.delete_object(Bucket=BUCKET, Key=STACK_KEY)

    client.meta.events.register("before-parameter-build.s3.GetObject", delete_once)
    tree = S3Source(client, BUCKET, "config/").fetch()
    assert sorted(tree.files) == sorted(set(REPO_FILES) - {"cluster/stack.yaml"})
    assert len(lists) == 2


def test_s3_unversioned_gives_up_when_objects_keep_changing(aws):
    client = make_bucket(aws)
    overwrite_before_read(client, aws, times=ATTEMPTS)
    with pytest.raises(ConfigSourceError, match=f"s3://{BUCKET}/config/: .*kept changing"):
        S3Source(client, BUCKET, "config/").fetch()


def test_s3_missing_bucket_is_named(aws):
    source = S3Source(aws.client("s3"), "no-such-bucket", "config")
    for call in (source.version, source.fetch):
        with pytest.raises(ConfigSourceError, match="s3://no-such-bucket/config/: NoSuchBucket"):
            call()


def test_s3_access_denied_is_named():
    client = boto3.client("s3", region_name=REGION)
    with Stubber(client) as stub:
        stub.add_client_error("get_bucket_versioning", "AccessDenied", "Access Denied", 403)
        with pytest.raises(ConfigSourceError, match=f"s3://{BUCKET}/: AccessDenied: Access Denied"):
            S3Source(client, BUCKET).version()


# --- CodeCommitSource (moto with the sandbox's CodeCommit file APIs) ----------------------------

REPOSITORY = "cluster-config"


def head(client) -> str:
    return client.get_branch(repositoryName=REPOSITORY, branchName="main")["branch"]["commitId"]


def commit(client, files: dict[str, bytes], deletes: tuple[str, ...] = (), links: tuple[str, ...] = ()) -> str:
    """Commit `files` (and symbolic links to stack.yaml) on main, on top of its head; returns the commit id."""
    parent = {"parentCommitId": head(client)} if client.list_branches(repositoryName=REPOSITORY)["branches"] else {}
    puts = [{"filePath": path, "fileContent": content} for path, content in files.items()]
    puts += [{"filePath": path, "fileContent": b"stack.yaml", "fileMode": "SYMLINK"} for path in links]
    return client.create_commit(
        repositoryName=REPOSITORY,
        branchName="main",
        putFiles=puts,
        deleteFiles=[{"filePath": path} for path in deletes],
        **parent,
    )["commitId"]


@pytest.fixture
def codecommit(aws):
    """A CodeCommit client on moto holding REPOSITORY, with README.md, REPO_FILES and a symbolic link on main."""
    install_codecommit()
    client = aws.client("codecommit")
    client.create_repository(repositoryName=REPOSITORY)
    commit(client, {"README.md": b"# config\n", **REPO_FILES}, links=("cluster/latest",))
    return client


def test_codecommit_reads_every_file_at_the_head_commit(codecommit):
    source = CodeCommitSource(codecommit, REPOSITORY, "main")
    tree = source.fetch()
    # the symbolic link cluster/latest -> stack.yaml reads as its target, as CLM's git checkout reads it
    assert dict(tree.files) == {"README.md": b"# config\n", **REPO_FILES, "cluster/latest": b"Resources: {}\n"}
    assert tree.version == source.version() == head(codecommit)
    assert tree.source == source.describe() == f"codecommit://{REPOSITORY}@main"


def test_codecommit_follows_links_to_folders_and_leaves_out_dangling_ones(codecommit):
    """As Zalando's profiles share files (worker-combined/files.yaml -> ../worker-splitaz/files.yaml)."""
    puts = [
        {"filePath": "cluster/node-pools/b/files.yaml", "fileContent": b"../a/files.yaml", "fileMode": "SYMLINK"},
        {"filePath": "cluster/node-pools/a/files.yaml", "fileContent": b"files: []\n"},
        {"filePath": "cluster/shared", "fileContent": b"manifests/coredns", "fileMode": "SYMLINK"},
        {"filePath": "cluster/gone", "fileContent": b"../nowhere.yaml", "fileMode": "SYMLINK"},
    ]
    parent = head(codecommit)
    codecommit.create_commit(repositoryName=REPOSITORY, branchName="main", parentCommitId=parent, putFiles=puts)
    files = CodeCommitSource(codecommit, REPOSITORY, "main").fetch().files
    assert files["cluster/node-pools/b/files.yaml"] == b"files: []\n"
    assert files["cluster/shared/deployment.yaml"] == b"kind: Deployment\n"
    assert "cluster/gone" not in files


def test_codecommit_a_later_commit_changes_the_version(codecommit):
    source = CodeCommitSource(codecommit, REPOSITORY, "main")
    before = source.version()
    after = commit(
        codecommit, {"cluster/stack.yaml": b"Resources: {Changed: 1}\n"}, deletes=("cluster/manifests/deletions.yaml",)
    )
    assert source.version() == after != before
    tree = source.fetch()
    assert tree.version == after
    assert tree.read("cluster/stack.yaml") == b"Resources: {Changed: 1}\n"
    assert not tree.exists("cluster/manifests/deletions.yaml")


def test_codecommit_reads_one_commit_while_the_branch_moves(codecommit, aws):
    source = CodeCommitSource(codecommit, REPOSITORY, "main")
    before = source.version()
    writer = aws.client("codecommit")
    moved: list[str] = []
    once = threading.Lock()  # files are read in parallel: one thread commits

    def commit_once(**_):
        with once:
            if not moved:
                moved.append(commit(writer, {"cluster/stack.yaml": b"Resources: {Moved: 1}\n"}))

    codecommit.meta.events.register("before-call.codecommit.GetFile", commit_once)
    tree = source.fetch()
    assert moved
    assert tree.version == before
    assert dict(tree.files) == {
        "README.md": b"# config\n",
        **REPO_FILES,
        "cluster/latest": REPO_FILES["cluster/stack.yaml"],
    }
    assert source.version() == moved[0]


@pytest.mark.parametrize(
    ("repository", "branch", "code"),
    [
        ("missing", "main", "RepositoryDoesNotExistException"),
        (REPOSITORY, "dev", "BranchDoesNotExistException"),
        ("empty", "main", "BranchDoesNotExistException"),
    ],
)
def test_codecommit_missing_repository_or_branch_is_named(codecommit, repository, branch, code):
    codecommit.create_repository(repositoryName="empty")
    source = CodeCommitSource(codecommit, repository, branch)
    for call in (source.version, source.fetch):
        with pytest.raises(ConfigSourceError, match=f"codecommit://{repository}@{branch}: {code}"):
            call()


def test_codecommit_missing_config_folder_is_named(codecommit):
    commit(codecommit, {}, deletes=tuple(REPO_FILES), links=())
    tree = CodeCommitSource(codecommit, REPOSITORY, "main").fetch()
    assert list(tree.files) == ["README.md"]
    expected = rf"cluster/stack\.yaml not found in codecommit://{REPOSITORY}@main at version {head(codecommit)}"
    with pytest.raises(ConfigSourceError, match=expected):
        tree.read("cluster/stack.yaml")


def test_codecommit_unreachable_endpoint_is_named():
    port = free_port()  # nothing listens there
    client = boto3.client(
        "codecommit",
        region_name=REGION,
        endpoint_url=f"http://127.0.0.1:{port}",
        config=Config(retries={"total_max_attempts": 1}, connect_timeout=2),
    )
    with pytest.raises(ConfigSourceError, match=f"codecommit://{REPOSITORY}@main: Could not connect"):
        CodeCommitSource(client, REPOSITORY, "main").version()


@pytest.mark.parametrize(
    ("failing", "code", "named"),
    [
        ("get_folder", "EncryptionKeyUnavailableException", "/"),
        ("get_file", "FileTooLargeException", "big.bin"),
    ],
)
def test_codecommit_errors_moto_cannot_produce_name_the_path(failing, code, named):
    """Encrypted-key outages and files over 6 MB (pushed with git) only happen on AWS."""
    client = boto3.client("codecommit", region_name=REGION)
    commit_id = "4c2a8f0e1b9d3a7c6e5f4d3c2b1a09f8e7d6c5b4"
    with Stubber(client) as stub:
        stub.add_response("get_branch", {"branch": {"branchName": "main", "commitId": commit_id}})
        if failing == "get_file":
            stub.add_response(
                "get_folder",
                {
                    "commitId": commit_id,
                    "folderPath": "",
                    "files": [
                        {"absolutePath": "big.bin", "relativePath": "big.bin", "fileMode": "NORMAL", "blobId": "0" * 40}
                    ],
                },
            )
        stub.add_client_error(failing, code, "refused", 400)
        with pytest.raises(ConfigSourceError, match=rf"codecommit://repo@main \({re.escape(named)}\): {code}"):
            CodeCommitSource(client, "repo", "main").fetch()
