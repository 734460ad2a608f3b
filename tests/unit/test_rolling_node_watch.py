"""The plan's watch of booting Nodes (clm.rolling.node_watch): it wakes on the first booting instance's Node Ready and
hands back the Node list as the watch's events left it, so that the plan decides again without listing them."""

from __future__ import annotations

from typing import Any

from clm.rolling.node_watch import ReadyWatch


def node(name: str, instance: str, ready: bool, version: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "resourceVersion": version},
        "spec": {"providerID": f"aws:///eu-central-1a/{instance}"},
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


LISTED = {
    "kind": "NodeList",
    "metadata": {"resourceVersion": "10"},
    "items": [node("old-1", "i-1", True, "5"), node("old-2", "i-2", True, "6"), node("new", "i-9", False, "9")],
}


def test_the_list_as_the_events_left_it_once_a_booting_node_is_ready() -> None:
    watch = ReadyWatch({"i-9"})
    relevant = watch.spec("10").relevant
    assert watch.spec("10").resource_version == "10"
    assert not relevant("MODIFIED", node("old-1", "i-1", True, "11"))  # a heartbeat of another node
    assert not relevant("DELETED", node("old-2", "i-2", True, "12"))
    assert not relevant("ADDED", node("other", "i-7", True, "13"))  # Ready, but not one the plan waits for
    assert relevant("MODIFIED", node("new", "i-9", True, "14"))

    after = watch.after(LISTED)
    assert after is not None and after["metadata"] == {"resourceVersion": "14"} and after["kind"] == "NodeList"
    items = {n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in after["items"]}
    assert items == {"old-1": "11", "new": "14", "other": "13"}
    assert LISTED["items"][2]["metadata"]["resourceVersion"] == "9"  # the list it started from is not changed


def test_a_watch_that_did_not_end_on_a_ready_node_leaves_the_listing_to_a_new_list() -> None:
    watch = ReadyWatch({"i-9"})
    assert not watch.spec("10").relevant("MODIFIED", node("new", "i-9", False, "11"))  # still booting
    assert watch.after(LISTED) is None  # woken by an error or the watch's end: the plan lists again
