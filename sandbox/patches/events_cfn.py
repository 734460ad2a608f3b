"""``Ref`` of an ``AWS::Events::EventBus`` created by CloudFormation gives the bus name, as in AWS.

moto 5.2.5's EventBus has no physical resource id, so ``Ref`` yields moto's object and a rule on that bus
(``EventBusName: {"Ref": "Bus"}``, how CDK wires a custom bus) fails the stack with an AttributeError.
"""

from __future__ import annotations

from clm_sandbox.patches._patching import replace


def install() -> None:
    """Give moto's EventBus its physical resource id, the bus name (idempotent)."""
    from moto.events.models import EventBus

    replace(EventBus, "physical_resource_id", property(lambda bus: bus.name, doc="The bus name (what Ref gives)."))
