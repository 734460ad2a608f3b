"""Typed errors of the stacks module; each names the cluster, the stack and, when known, the failed resource."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clm.errors import ClmError

if TYPE_CHECKING:
    from clm.stacks.events import Failure


class StackError(ClmError):
    """A CloudFormation stack of a cluster could not be brought to the desired state."""

    asl_name = "StackError"

    def __init__(self, message: str, cluster_id: str, stack_name: str):
        self.cluster_id = cluster_id
        self.stack_name = stack_name
        self.message = message
        place = ": ".join(p for p in (cluster_id and f"cluster {cluster_id}", f"stack {stack_name}") if p)
        super().__init__(f"{place}: {message}")


class InvalidStackSpec(StackError):
    """The rendered stack cannot be submitted: bad name, missing or unknown parameters."""

    asl_name = "InvalidStackSpec"


class TemplateTooLarge(StackError):
    """The template is over CloudFormation's inline limit and no template bucket was given."""

    asl_name = "TemplateTooLarge"

    def __init__(self, cluster_id: str, stack_name: str, size: int, limit: int):
        self.size = size
        super().__init__(
            f"template is {size} bytes, over CloudFormation's {limit}-byte limit for inline "
            "templates; configure a template bucket",
            cluster_id,
            stack_name,
        )


class StackRejected(StackError):
    """CloudFormation refused the request (invalid template, parameters, capabilities...)."""

    asl_name = "StackRejected"

    def __init__(self, cluster_id: str, stack_name: str, operation: str, reason: str):
        self.operation = operation
        self.reason = reason
        super().__init__(f"CloudFormation rejected {operation}: {reason}", cluster_id, stack_name)


class StackNotOwned(StackError):
    """A stack of the name CLM gives one of the cluster's stacks lacks the cluster's ownership tags: CLM leaves it
    alone (no update, no termination-protection change, no delete)."""

    asl_name = "StackNotOwned"

    def __init__(self, cluster_id: str, stack_name: str, missing: list[str], what: str = "CLM's stack of the cluster"):
        self.missing = missing
        super().__init__(
            f"the stack of this name is not {what} (it lacks the tags {', '.join(missing)}); "
            "CLM does not change it: rename the stack or the cluster's local_id, or tag the stack if it is the "
            "cluster's",
            cluster_id,
            stack_name,
        )


class StackFailed(StackError):
    """A create, update or delete ended in a failed state; names the first failed resource."""

    asl_name = "StackFailed"
    hint = ""

    def __init__(self, cluster_id: str, stack_name: str, status: str, failure: Failure | None, stack_reason: str = ""):
        self.status = status
        self.failure = failure
        detail = failure.describe() if failure else (stack_reason or "no failed resource reported")
        super().__init__(f"{status}: {detail}" + (f" ({self.hint})" if self.hint else ""), cluster_id, stack_name)


class StackNeedsAttention(StackFailed):
    """The stack is in a state CLM does not repair by itself; a human has to look at it."""

    asl_name = "StackNeedsAttention"
    hint = "CLM does not repair this state by itself"


class ClusterStackRolledBack(StackNeedsAttention):
    """The cluster stack's creation failed and was rolled back; CLM never deletes a cluster stack."""

    asl_name = "ClusterStackRolledBack"
    hint = "CLM never deletes a cluster stack: fix the cause and delete the stack by hand; the next run creates it"


class NodePoolInventoryError(StackError):
    """A node-pool stack has no usable auto scaling group or launch template."""

    asl_name = "NodePoolInventoryError"
