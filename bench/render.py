"""Render throughput: clusters rendered per second, for the example config and for Zalando's real one.

    .venv/bin/python bench/render.py [--clusters 100] [--manifests 50] [--corpus-repeat 10]

The example: the example config repository plus a synthetic component of templated manifests, 100 clusters x 50
objects. The corpus: Zalando's kubernetes-on-aws translated by `clm migrate`, rendered for the two sample clusters
of tests/corpus_samples.py (zalando-aws, zalando-eks) with CLM's values from EC2 on in-process moto, each
`--corpus-repeat` times. One Renderer for each (compiled templates and EC2 answers reused across clusters, as a
reconcile does).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from clm.config.local import LocalSource
from clm.config.tree import ConfigTree
from clm.registry.clusters_yaml import load_clusters
from clm.render.renderer import Renderer

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MANIFEST = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: bench-{n}
  namespace: kube-system
  annotations:
    hash: "{{{{ sha256(cluster.id ~ '{n}') }}}}"
data:
  cluster: "{{{{ cluster.id }}}}"
  zones: "{{{{ az_count(split(cluster.config_items.availability_zones)) }}}}"
{{% for pool in cluster.node_pools %}}  pool-{{{{ pool.name }}}}: "{{{{ pool.min_size }}}}-{{{{ pool.max_size }}}}"
{{% endfor %}}"""


def main() -> None:
    """Render the synthetic fleet and the corpus's sample clusters; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--manifests", type=int, default=50)
    parser.add_argument("--corpus-repeat", type=int, default=10, help="renders of each corpus sample cluster")
    args = parser.parse_args()
    example_figures(args.clusters, args.manifests)
    corpus_figures(args.corpus_repeat)


def example_figures(clusters: int, manifests: int) -> None:
    """The example config with synthetic manifests, for a fleet of `clusters`."""
    base = LocalSource(EXAMPLES / "config").fetch()
    files = dict(base.files)
    example_count = sum(1 for p in files if p.startswith("cluster/manifests/") and "deletions" not in p)
    for n in range(manifests - 7):  # the example already has 7 objects
        files[f"cluster/manifests/zz-bench/{n:03d}.yaml"] = MANIFEST.format(n=n).encode()
    tree = ConfigTree(version="bench", files=files, source="bench")
    template = load_clusters((EXAMPLES / "clusters.yaml").read_text())[1]
    fleet = [
        dataclasses.replace(template, id=f"aws:123456789012:eu-west-1:bench-{i}", local_id=f"bench-{i}")
        for i in range(clusters)
    ]

    renderer = Renderer(tree)
    start = time.perf_counter()
    first = renderer.render(fleet[0])
    cold = time.perf_counter() - start
    start = time.perf_counter()
    for cluster in fleet:
        renderer.render(cluster)
    warm = time.perf_counter() - start
    per_cluster = warm / len(fleet)
    print(f"config files: {len(files)} ({example_count} example manifest files + synthetic ones)")
    print(f"objects per cluster: {first.manifest_count}, node-pool stacks per cluster: {len(first.node_pool_stacks)}")
    print(f"first cluster (compiles templates): {cold * 1000:.1f} ms")
    print(f"{len(fleet)} clusters: {warm:.2f} s, {per_cluster * 1000:.1f} ms per cluster")
    print(f"throughput: {len(fleet) / warm:.1f} clusters/s, {len(fleet) * first.manifest_count / warm:.0f} objects/s")
    print(f"template cache speed-up (first / warm per cluster): {cold / per_cluster:.1f}x")


def corpus_figures(repeat: int) -> None:
    """Zalando's configuration (translated) for the two sample clusters, each rendered `repeat` times."""
    sys.path.insert(0, str(ROOT))  # tests/corpus_samples.py: the sample clusters, shared with the tests
    from tests.corpus_samples import NOT_COMPUTED, migrated_files, sample_clusters, sample_renderer, samples_on_moto
    from tests.unit.test_migrate_corpus import CORPUS

    if not CORPUS.is_dir():
        print(f"corpus: {CORPUS} is not here; skipped")
        return
    with tempfile.TemporaryDirectory() as folder:
        files = migrated_files(Path(folder), CORPUS)
    with samples_on_moto(files) as samples:
        renderer = sample_renderer(files, samples.ec2)
        clusters = sample_clusters(samples.ec2)
        for provider, cluster in clusters.items():
            start = time.perf_counter()
            rendered = renderer.render(cluster, NOT_COMPUTED)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            for _ in range(repeat):
                renderer.render(cluster, NOT_COMPUTED)
            per_cluster = (time.perf_counter() - start) / repeat
            objects = rendered.manifest_count + sum(len(m) for m in rendered.node_pool_manifests.values())
            print(
                f"corpus {provider}: {len(files)} templates, {1 + len(rendered.node_pool_stacks)} stacks, "
                f"{objects} objects; first {cold * 1000:.0f} ms, then {per_cluster * 1000:.0f} ms per cluster: "
                f"{1 / per_cluster:.1f} clusters/s, {objects / per_cluster:.0f} objects/s"
            )


if __name__ == "__main__":
    main()
