"""Render throughput: clusters rendered per second for 100 clusters x 50 manifests.

    .venv/bin/python bench/render.py [--clusters 100] [--manifests 50]

Uses the example config repository plus a synthetic component of templated manifests, and one
Renderer for the whole fleet (compiled templates are reused across clusters, as a reconcile does).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from clm.config.local import LocalSource
from clm.config.tree import ConfigTree
from clm.registry.clusters_yaml import load_clusters
from clm.render.renderer import Renderer

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
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
    """Render the synthetic fleet and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--manifests", type=int, default=50)
    args = parser.parse_args()

    base = LocalSource(EXAMPLES / "config").fetch()
    files = dict(base.files)
    example_count = sum(1 for p in files if p.startswith("cluster/manifests/") and "deletions" not in p)
    for n in range(args.manifests - 7):  # the example already has 7 objects
        files[f"cluster/manifests/zz-bench/{n:03d}.yaml"] = MANIFEST.format(n=n).encode()
    tree = ConfigTree(version="bench", files=files, source="bench")
    template = load_clusters((EXAMPLES / "clusters.yaml").read_text())[1]
    fleet = [
        dataclasses.replace(template, id=f"aws:123456789012:eu-west-1:bench-{i}", local_id=f"bench-{i}")
        for i in range(args.clusters)
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


if __name__ == "__main__":
    main()
