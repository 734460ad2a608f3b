"""Configuration read of a large tree from S3 and from CodeCommit on the sandbox's moto server: one request at a
time (as before) against the bounded thread pool of clm.config.parallel (now).

    .venv/bin/python bench/config_read.py [--files 2000]

The tree is Zalando's configuration (../shared/corpus/kubernetes-on-aws, read in place, never copied into the
project) plus generated manifests up to --files. It is uploaded to a bucket (unversioned: each object read with
IfMatch, as the run step does) and committed to a CodeCommit repository (100 files per commit, CodeCommit's
limit), on a moto server in a process of its own (requests go over loopback HTTP, as a Lambda's go over the
network). Each source is then read once sequentially and once in parallel; printed: seconds and requests.
moto answers in ~1-3 ms; AWS's S3 GETs take ~10-30 ms from a Lambda, so the gain there is larger than here.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import boto3

from clm.config import parallel
from clm.config.codecommit import CodeCommitSource
from clm.config.s3 import S3Source
from clm.config.tree import ConfigTree
from clm_sandbox.moto_server import SANDBOX_ENV, moto_server_process

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "kubernetes-on-aws"
BUCKET, PREFIX, REPOSITORY = "clm-config", "config/", "cluster-config"
COMMIT_FILES = 100
PARALLEL = parallel.MAX_WORKERS
MANIFEST = """apiVersion: v1
kind: ConfigMap
metadata:
  name: generated-{n}
  namespace: kube-system
data:
  value: "{{{{ cluster.config_items.get('generated_{n}', '{n}') }}}}"
"""


def tree(files: int) -> dict[str, bytes]:
    """The corpus's files, then generated manifests until there are `files`."""
    found = {p.relative_to(CORPUS).as_posix(): p.read_bytes() for p in sorted(CORPUS.rglob("*")) if p.is_file()}
    found = dict(list(found.items())[:files])
    for n in range(files - len(found)):
        found[f"cluster/manifests/generated-{n // 50:02d}/cm-{n:04d}.yaml"] = MANIFEST.format(n=n).encode()
    return found


def upload(session: boto3.Session, files: dict[str, bytes]) -> None:
    s3 = session.client("s3")
    s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": session.region_name})
    parallel.read_all(files, lambda path: s3.put_object(Bucket=BUCKET, Key=PREFIX + path, Body=files[path]))
    codecommit = session.client("codecommit")
    codecommit.create_repository(repositoryName=REPOSITORY)
    paths, parent = sorted(files), {}
    for start in range(0, len(paths), COMMIT_FILES):
        puts = [{"filePath": p, "fileContent": files[p]} for p in paths[start : start + COMMIT_FILES]]
        commit = codecommit.create_commit(repositoryName=REPOSITORY, branchName="main", putFiles=puts, **parent)
        parent = {"parentCommitId": commit["commitId"]}


def timed(fetch: Callable[[], ConfigTree], workers: int, calls: list[str]) -> tuple[float, int, ConfigTree]:
    """Seconds, requests and the tree of one fetch with `workers` reads at a time."""
    parallel.MAX_WORKERS, before = workers, len(calls)
    started = time.perf_counter()
    result = fetch()
    return time.perf_counter() - started, len(calls) - before, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    files = tree(args.files)
    print(f"tree: {len(files)} files, {sum(map(len, files.values())) / 1e6:.1f} MB ({CORPUS.name} + generated)")
    with moto_server_process() as endpoint:
        os.environ.update({**SANDBOX_ENV, "AWS_ENDPOINT_URL": endpoint})
        session = boto3.Session(region_name=SANDBOX_ENV["AWS_DEFAULT_REGION"])
        started = time.perf_counter()
        upload(session, files)
        print(f"uploaded to S3 and CodeCommit in {time.perf_counter() - started:.1f} s (moto server at {endpoint})")
        calls: list[str] = []
        sources = {}
        for service, make in (
            ("s3", lambda c: S3Source(c, BUCKET, PREFIX)),
            ("codecommit", lambda c: CodeCommitSource(c, REPOSITORY, "main")),
        ):
            service_client = session.client(service)
            service_client.meta.events.register(f"before-call.{service}", lambda **kw: calls.append(kw["model"].name))
            sources[service] = make(service_client)
        for name, source in sources.items():
            results = [timed(source.fetch, workers, calls) for workers in (1, PARALLEL)]
            (seq, requests, first), (par, _, second) = results
            assert dict(first.files) == dict(second.files) and len(first.files) == len(files), name
            print(
                f"{source.describe():<32} {requests:5d} requests: one at a time {seq:6.2f} s, "
                f"{PARALLEL} at a time {par:6.2f} s ({seq / par:.1f}x)"
            )
    print(f"load average: {os.getloadavg()[0]:.2f} (2 cores; times depend on it)")


if __name__ == "__main__":
    main()
