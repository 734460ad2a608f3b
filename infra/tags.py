"""The tags and names CLM's IAM conditions rely on, as the layer writes or reads them (each names its twin)."""

from __future__ import annotations

NODE_POOL_TAG = "kubernetes.io/node-pool"  # clm.stacks.names.NODE_POOL_TAG (CLM's, provisioner/node_pools.go)
MANAGED_BY_TAG = "clm:managed-by"  # clm.stacks.names.MANAGED_BY_TAG
MANAGED_BY = "clm"  # clm.stacks.names.MANAGED_BY
CNI_CLUSTER_TAG = "cluster.k8s.amazonaws.com/name"  # clm.stacks.leftovers.CNI_CLUSTER_TAG
VOLUME_CLUSTER_TAG = "KubernetesCluster"  # clm.stacks.leftovers.VOLUME_CLUSTER_TAG
CLUSTER_ID_TAG = "clm:cluster-id"  # clm.kube.auth.CLUSTER_ID_TAG
KARPENTER_NODEPOOL_TAG = "karpenter.sh/nodepool"  # clm.stacks.karpenter_pool.NODEPOOL_TAG
ETCD_KEY_ALIAS = "alias/etcd-cluster"  # clm.render.account_lookups.ETCD_KEY_ALIAS (CLM's etcd key)
INGRESS_APP_TAG = "kubernetes:application"  # clm.stacks.names.INGRESS_APP_TAG
INGRESS_CONTROLLER = "kube-ingress-aws-controller"  # clm.stacks.names.INGRESS_CONTROLLER
