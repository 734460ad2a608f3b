"""The node simulator: the kubelets (simulator) with their AWS, Kubernetes and bootstrap sides (aws, kube, pods,
watch, bootstrap, timers, model), the Karpenter stand-in (karpenter*) and one simulator per cluster (fleet)."""

from clm_sandbox.nodesim.aws import create_node_pool
from clm_sandbox.nodesim.model import EventKind, SimEvent
from clm_sandbox.nodesim.simulator import NodeSimulator

__all__ = ["EventKind", "NodeSimulator", "SimEvent", "create_node_pool"]
