"""The StateManager after a snapshot, for a change spread over a long list of objects: the
objects whose bytes changed are found by splitting both encodings of the list between its
objects (patch._spread), and only those are decoded and diffed. Every outcome must be the
size rule's (``tests.support.state_rule``), from the full type-strict diff, whether the bytes
could tell or not."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.state import StateManager
from tests.support.state_rule import check


def copied(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


def board(items: int, note: str = "note") -> dict[str, Any]:
    """A state whose list is most of it, past 32 KB from 500 objects."""
    return {
        "meta": {"title": "board"},
        "items": [
            {"id": i, "name": f"item {i:04}", "note": f"{note} {i} ~~~~~~~~~~~~~~~~~~~~"}
            for i in range(items)
        ],
    }


def test_a_change_spread_over_the_list_keeps_the_baseline_bytes_once() -> None:
    # The first spread change after a snapshot is diffed from the changed objects alone and
    # the baseline stays bytes; the second decodes it, once for the deltas after it.
    doc = board(700)
    states = StateManager()
    client = states.publish(doc).value
    previous = copied(doc)
    for index in range(3, 700, 100):
        doc["items"][index]["note"] = f"changed {index}"
    doc["items"][650]["id"] = True  # a type change == would hide (1 == True) is seen too
    client = check(states, client, previous, doc, exact=True)
    previous = copied(doc)
    for index in range(5, 700, 100):
        doc["items"][index]["name"] = None
    check(states, client, previous, doc, exact=True)


def test_a_spread_change_the_bytes_cannot_tell_follows_the_rule() -> None:
    # Each is diffed from the decoded baseline instead, with the same outcome.
    for edit in ("separator", "key order", "length", "separator before"):
        doc = board(700)
        states = StateManager()
        client = states.publish(doc).value
        previous = copied(doc)
        for index in range(0, 700, 100):
            doc["items"][index]["note"] = "changed"
        if edit == "separator":
            doc["items"][333]["name"] = "},{"
        elif edit == "key order":
            doc["items"][100] = dict(reversed(list(doc["items"][100].items())))
        elif edit == "length":
            doc["items"].append({"id": 700})
        else:  # another object, where a string held what lies between two
            doc["items"][0]["name"] = "},{"
        check(states, client, previous, doc, exact=True)


def test_removals_follow_the_key_order_the_client_holds() -> None:
    # The last object's keys are reversed (no operation: the client and the baseline keep
    # their order), then it is paired with an object that has only its first key: its other
    # members are removed in the order the client holds, not in the caller's new order.
    doc = board(600)
    states = StateManager()
    client = states.publish(doc).value
    previous = copied(doc)
    items = doc["items"]
    for index in range(0, 600, 50):
        items[index]["note"] = "changed"
    items[-1] = dict(reversed(list(items[-1].items())))
    client = check(states, client, previous, doc, exact=True)
    previous = copied(doc)
    items.pop(-2)
    items.append({"id": 0})
    check(states, client, previous, doc, exact=True)


TRICKY = st.sampled_from(["a", "},{", '"},{"', "}", ",{", "x},{y", "", "é"])


@settings(max_examples=60, deadline=None, database=None)
@given(data=st.data(), size=st.integers(500, 650))
def test_spread_changes_after_snapshots_follow_the_rule(data: st.DataObject, size: int) -> None:
    # Long lists (past 32 KB) of objects whose strings may hold the bytes between two
    # objects, changed at a drawn share of the objects, now and then with objects added,
    # removed or with their keys in another order, or a fresh document (a snapshot) between.
    values = TRICKY | st.sampled_from([0, 1, 1.0, True, None, ["x"], {"k": "},{"}])
    states = StateManager()
    doc = board(size, note=data.draw(TRICKY))
    client = states.publish(doc).value
    previous = copied(doc)
    for _ in range(data.draw(st.integers(1, 4))):
        if data.draw(st.integers(0, 4)) == 0:
            doc = board(size, note=f"fresh {data.draw(TRICKY)}")
        else:
            items = doc["items"]
            step = data.draw(st.sampled_from([7, 50, 150, 300]))
            for index in range(data.draw(st.integers(0, step - 1)), len(items), step):
                items[index][data.draw(st.sampled_from(["id", "name", "note"]))] = data.draw(values)
            edit = data.draw(st.sampled_from(["none", "none", "append", "pop", "order"]))
            if edit == "append":
                items.append({"id": data.draw(values)})
            elif edit == "pop":
                items.pop(data.draw(st.integers(0, len(items) - 1)))
            elif edit == "order":
                index = data.draw(st.integers(0, len(items) - 1))
                items[index] = dict(reversed(list(items[index].items())))
        client = check(states, client, previous, doc, exact=True)
        previous = copied(doc)
