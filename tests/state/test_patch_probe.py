"""The budgeted walk's probe (``patch._diff._objects_overflow``): on a long list of objects it
counts the changed members a column at a time and stops the walk when the patch is sure to
reach the budget (a new document). Its bound must never exceed the full type-strict diff's
length, whatever the values (strings count their length, tuples and lists are equal as JSON,
members go missing), and where nothing is left out of it, it is the patch's length."""

from __future__ import annotations

import copy
import string
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agui_replay.patch._diff as walk
from agui_replay.patch import diff, diff_exceeds
from agui_replay.patch._json import compact_json
from agui_replay.state import Snapshot, StateManager
from tests.support.state_rule import check

MEMBERS = ["id", "name", "note", "x~/", "é"]
VALUES = (
    st.sampled_from([0, 1, 1.0, True, False, None, "", "a", "é", "~/", [1], (1,), {"k": 1}])
    | st.text(max_size=10)
    | st.integers(-1000, 1000)
)
# Columns where the bound is nearly the patch: strings without escapes and one-digit numbers.
TIGHT = st.text(string.ascii_letters, max_size=10) | st.integers(0, 9)


def objects(data: st.DataObject, size: int, values: Any = VALUES) -> list[dict[str, Any]]:
    keys = data.draw(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=5, unique=True))
    return [{key: data.draw(values) for key in keys} for _ in range(size)]


def edited(
    data: st.DataObject, items: list[dict[str, Any]], values: Any = VALUES
) -> list[dict[str, Any]]:
    """A copy of ``items`` with a drawn share of its objects changed member by member (some
    members dropped, added, or a list turned into the tuple of its items)."""
    new = copy.deepcopy(items)
    share = data.draw(st.sampled_from([0.1, 0.5, 0.9, 1.0]))
    for item in new:
        if data.draw(st.floats(0, 1)) >= share:
            continue
        for key in list(item):
            how = data.draw(st.sampled_from(["value", "value", "keep", "drop", "tuple"]))
            if values is TIGHT:
                how = "value"
            if how == "value":
                item[key] = data.draw(values)
            elif how == "drop":
                del item[key]
            elif how == "tuple" and isinstance(item[key], list):
                item[key] = tuple(item[key])
        if data.draw(st.integers(0, 5)) == 0:
            item[data.draw(st.sampled_from(MEMBERS))] = data.draw(VALUES)
    return new


@settings(max_examples=80, deadline=None, database=None)
@given(data=st.data(), size=st.integers(16, 140), wrapped=st.booleans(), tight=st.booleans())
def test_the_budgeted_walk_never_claims_more_than_the_full_diff(
    data: st.DataObject, size: int, wrapped: bool, tight: bool
) -> None:
    values = TIGHT if tight else VALUES
    old = objects(data, size, values)
    new = edited(data, old, values)
    a, b = ({"items": old}, {"items": new}) if wrapped else (old, new)
    length = len(compact_json(diff(a, b)))
    # The walk may stop only once the patch is sure to take the budget: never one byte more.
    assert not diff_exceeds(a, b, length + 1)
    margin = data.draw(st.integers(0, length))
    assert not diff_exceeds(a, b, length + 1 + margin)


@settings(max_examples=30, deadline=None, database=None)
@given(data=st.data(), size=st.integers(16, 140))
def test_new_documents_near_the_boundary_follow_the_rule(data: st.DataObject, size: int) -> None:
    # A fresh document after a snapshot (the walk from the previous object), then one after a
    # delta (the walk from the decoded baseline): the rule's outcome each time.
    old = objects(data, size)
    states = StateManager()
    assert isinstance(states.publish(old), Snapshot)
    client: Any = orjson.loads(orjson.dumps(old))
    previous = client
    for _ in range(data.draw(st.integers(1, 4))):
        new = edited(data, previous)
        client = check(states, client, previous, new)
        previous = orjson.loads(orjson.dumps(new))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("old {}", "a new value {}"),  # a string: its length counts, plus 12 bytes
        (1, 2),  # another scalar: 11 bytes beyond the removal's (one digit here)
    ],
)
def test_the_probe_bound_is_the_patch_where_nothing_is_left_out(old: Any, new: Any) -> None:
    # Three members changed in each of ten objects (one-digit indexes, keys without escapes):
    # each replacement is what the bound counts for it, so the probe stops the walk at the
    # patch's very length, and not one byte before.
    def item(value: Any, i: int) -> dict[str, Any]:
        return {key: value.format(i) if isinstance(value, str) else value for key in "pqr"}

    a = [item(old, i) for i in range(10)]
    b = [item(new, i) for i in range(10)]
    length = len(compact_json(diff(a, b)))
    assert walk._objects_overflow(a, b, "", 0, len(b), length - 1)
    assert not walk._objects_overflow(a, b, "", 0, len(b), length)
