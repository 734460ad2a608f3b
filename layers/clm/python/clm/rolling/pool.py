"""What a node pool looks like right now, as the rolling-update planner sees it.

Built from observed state only (the auto scaling group, its instances and their Kubernetes Nodes), so that
any execution can pick up a roll where another one died.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Node label values, as Zalando CLM sets them (`lifecycle-status`).
LIFECYCLE_READY = "ready"
LIFECYCLE_DRAINING = "draining"
LIFECYCLE_DECOMMISSION_PENDING = "decommission-pending"
# Who drains a node (annotation clm/drained-by, clm.kube.nodes): this CLM, or the in-cluster controller.
DRAINED_BY_CLM, DRAINED_BY_CONTROLLER = "clm", "cluster-lifecycle-controller"


@dataclass(frozen=True)
class NodeState:
    """The Kubernetes Node of an instance."""

    name: str
    ready: bool
    unschedulable: bool = False
    lifecycle_status: str = LIFECYCLE_READY
    volumes_attached: bool = False
    disrupted_by_karpenter: bool = False  # Karpenter is taking it out (consolidation, drift, expiry)
    # Set aside with its drain blocked (clm.rolling.blocked): seconds until the roll comes back to it (<= 0: due).
    set_aside_seconds: float | None = None
    replaces: str = ""  # the old node it was paired with as its successor (clm.rolling.replaced)
    drained_by: str = ""  # who drains it (clm.kube.nodes.DRAINED_BY): CLM, the cluster-lifecycle-controller, or ""
    taint_effect: str = ""  # the effect of CLM's decommission taint on it (clm.kube.nodes.TAINT_KEY), "" without

    @property
    def being_replaced(self) -> bool:
        """Taken out: draining, or marked and cordoned (CLM cordons a batch before its drains label them draining),
        or handed to the cluster-lifecycle-controller. A node only marked still serves."""
        if self.lifecycle_status == LIFECYCLE_DECOMMISSION_PENDING:
            return self.unschedulable or self.drained_by == DRAINED_BY_CONTROLLER
        return self.lifecycle_status == LIFECYCLE_DRAINING

    @property
    def with_controller(self) -> bool:
        """Handed to the cluster-lifecycle-controller (`update_strategy: clc`) and not taken back."""
        return self.being_replaced and self.drained_by == DRAINED_BY_CONTROLLER

    @property
    def set_aside(self) -> bool:
        """Its drain is blocked by budgets and the roll goes on without it until due (`drain_blocked: continue`)."""
        return self.being_replaced and self.set_aside_seconds is not None and self.set_aside_seconds > 0


@dataclass(frozen=True)
class Member:
    """One instance of the pool's auto scaling group and its Node, if it has registered."""

    instance_id: str
    az: str
    lifecycle_state: str  # the ASG's: Pending, InService, Terminating, ...
    outdated: bool
    seconds_since_launch: float
    node: NodeState | None = None
    group: str = ""  # its auto scaling group; "" in a pool of one group (PoolState.asg_name) or Karpenter's

    @property
    def in_service(self) -> bool:
        """Counted by the group: neither leaving it nor on standby."""
        return self.lifecycle_state.startswith(("Pending", "InService"))

    @property
    def serving(self) -> bool:
        """In service with a Ready Node that CLM is not taking out."""
        return self.in_service and self.node is not None and self.node.ready and not self.node.being_replaced


@dataclass(frozen=True)
class RollSettings:
    """How a pool is rolled: `surge` extra nodes first, at most `max_unavailable` nodes out at once;
    `continue_blocked`: a node whose drain budgets block is set aside, cordoned, while the roll goes on."""

    surge: int = 0
    max_unavailable: int = 1
    node_startup_timeout: float = 600.0
    continue_blocked: bool = False

    def __post_init__(self) -> None:
        if self.surge < 0 or self.max_unavailable < 0:
            raise ValueError("surge and max_unavailable must not be negative")
        if self.surge == 0 and self.max_unavailable == 0:
            raise ValueError("surge and max_unavailable cannot both be 0: the pool could never be rolled")


@dataclass(frozen=True)
class GroupState:
    """One auto scaling group of a pool: its sizes and, while surged, its desired capacity before the surge."""

    name: str
    desired: int
    min_size: int
    max_size: int
    baseline_desired: int | None = None

    @property
    def capacity(self) -> int:
        """The group's desired capacity to return to at the end of the roll."""
        return self.desired if self.baseline_desired is None else self.baseline_desired


@dataclass(frozen=True)
class PoolState:
    """A node pool's group and members.

    `baseline_desired` is the desired capacity before a surge, if any; `typical_boot_seconds` how long this
    pool's instances took from launch to a Ready Node, if known (it times the waits for new nodes). `karpenter`:
    the pool's instances are launched by Karpenter for pending pods, not by a group (nothing to scale or surge;
    `desired` is the number of live instances; a drained pod with volumes gets a node in their AZ from Karpenter).
    `groups`: a pool of several groups (one per zone: Zalando's worker-splitaz), whose sizes the pool's `desired`,
    `min_size`, `max_size` and `baseline_desired` sum up; empty for a pool of one group, `asg_name`.
    """

    name: str
    asg_name: str
    desired: int
    min_size: int
    max_size: int
    members: list[Member] = field(default_factory=list)
    baseline_desired: int | None = None
    typical_boot_seconds: float | None = None
    karpenter: bool = False
    groups: tuple[GroupState, ...] = ()

    @property
    def capacity(self) -> int:
        """The desired capacity to return to at the end of the roll."""
        return self.desired if self.baseline_desired is None else self.baseline_desired

    @property
    def group_states(self) -> tuple[GroupState, ...]:
        """The pool's groups (a pool of one group: that one, named `asg_name`)."""
        if self.groups:
            return self.groups
        return (GroupState(self.asg_name, self.desired, self.min_size, self.max_size, self.baseline_desired),)

    def group_of(self, member: Member) -> GroupState:
        """The group `member` belongs to (the pool's only group when it has one)."""
        groups = self.group_states
        return next((group for group in groups if group.name == member.group), groups[0])
