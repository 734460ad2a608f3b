"""Scale a namespace's Deployments to zero: before a decommission deletes the stacks, so that controllers stop
creating what the stacks' deletion must not find (load balancers, volumes): CLM provisioner/clusterpy.go
downscaleDeployments("kube-system")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clm.kube.client import MERGE_PATCH

if TYPE_CHECKING:
    from clm.kube.client import KubeClient


def scale_down_deployments(kube: KubeClient, namespace: str) -> list[str]:
    """Set replicas 0 on every Deployment of `namespace` that has other replicas; returns their names."""
    path = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    scaled = []
    for deployment in (kube.get(path) or {}).get("items", []):
        if (deployment.get("spec") or {}).get("replicas", 1) == 0:
            continue
        name = deployment["metadata"]["name"]
        kube.request("PATCH", f"{path}/{name}", body={"spec": {"replicas": 0}}, content_type=MERGE_PATCH)
        scaled.append(name)
    return scaled
