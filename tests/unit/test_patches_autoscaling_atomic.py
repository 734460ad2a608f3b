"""A batch's terminations at once: each instance goes, each gets a successor, as on AWS (moto rebuilt a group's
instances under another call's feet: bench/roll.py's 200-node roll in batches of 20 failed on a StopIteration)."""

from __future__ import annotations

import threading
import time

import boto3

from clm_sandbox.nodesim import create_node_pool
from clm_sandbox.patches import autoscaling_atomic


def test_twenty_terminations_at_once_each_replace_their_instance(aws: boto3.Session, monkeypatch) -> None:
    from moto.autoscaling.models import FakeAutoScalingGroup

    autoscaling_atomic.install()
    autoscaling_atomic.install()
    resize = FakeAutoScalingGroup.set_desired_capacity

    def slow_resize(group: FakeAutoScalingGroup, desired: int | None) -> None:
        """A group counts its instances, then launches or trims to `desired` a moment later (the race's window:
        two calls counting the same instances launch one too many, and the trim takes another call's instance)."""
        time.sleep(0.02)
        resize(group, desired)

    monkeypatch.setattr(FakeAutoScalingGroup, "set_desired_capacity", slow_resize)
    group = create_node_pool(aws, "aws:123456789012:eu-central-1:kube-1", "workers", 20)
    autoscaling = aws.client("autoscaling")
    old = [i["InstanceId"] for i in autoscaling.describe_auto_scaling_groups()["AutoScalingGroups"][0]["Instances"]]
    errors: list[Exception] = []

    def terminate(instance: str) -> None:
        try:
            autoscaling.terminate_instance_in_auto_scaling_group(
                InstanceId=instance, ShouldDecrementDesiredCapacity=False
            )
        except Exception as exc:  # what the race raised
            errors.append(exc)

    threads = [threading.Thread(target=terminate, args=(instance,)) for instance in old]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    [described] = autoscaling.describe_auto_scaling_groups(AutoScalingGroupNames=[group])["AutoScalingGroups"]
    now = {i["InstanceId"] for i in described["Instances"]}
    assert len(now) == 20 and not now & set(old)
