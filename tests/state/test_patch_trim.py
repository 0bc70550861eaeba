"""The common prefix and suffix that the diff trims from two lists before pairing their items.

Both are searched in steps (a scan of the first items, then slices, from the end growing each
time), so the lists here are long enough to reach every step, with the difference anywhere.
Lists of one length up to 128 items are not trimmed: one pass finds the items that differ, and
the pairing is handed them.
"""

from __future__ import annotations

import operator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agui_replay.patch._diff as walk
from agui_replay.patch import apply_patch, diff, diff_in_place
from agui_replay.patch._diff import _common_run
from agui_replay.patch._json import _strict_eq


def _naive_prefix(a: list[Any], b: list[Any], limit: int) -> int:
    k = 0
    while k < limit and a[k] == b[k]:
        k += 1
    return k


def _naive_suffix(a: list[Any], b: list[Any], limit: int) -> int:
    k = 0
    while k < limit and a[len(a) - 1 - k] == b[len(b) - 1 - k]:
        k += 1
    return k


@st.composite
def _pairs(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """Two lists that share a head and a tail of any length (up to past the longest step),
    with a middle that differs or not, as objects that are equal but not the same."""
    head = draw(st.integers(0, 40_000))
    tail = draw(st.sampled_from([0, 1, 127, 128, 129, 191, 192, 500, 16_500, 40_000]))
    middle_a = draw(st.lists(st.integers(0, 3), max_size=4))
    middle_b = draw(st.lists(st.integers(0, 3), max_size=4))
    a = [{"i": i} for i in range(head)] + middle_a + [{"t": i} for i in range(tail)]
    b = [{"i": i} for i in range(head)] + middle_b + [{"t": i} for i in range(tail)]
    return a, b


@settings(max_examples=150, deadline=None)
@given(_pairs(), st.data())
def test_the_trimmed_ends_are_the_longest_equal_ones(pair: Any, data: st.DataObject) -> None:
    a, b = pair
    shorter = min(len(a), len(b))
    limit = data.draw(st.integers(0, shorter))
    for eq in (operator.eq, _strict_eq):  # == scans and gallops; the strict one bisects
        assert _common_run(a, b, limit, eq) == _naive_prefix(a, b, limit)
        assert _common_run(a, b, limit, eq, from_end=True) == _naive_suffix(a, b, limit)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 20_000), st.integers(1, 20_000), st.data())
def test_one_changed_item_anywhere_in_a_long_list_is_one_replace(
    before: int, after: int, data: st.DataObject
) -> None:
    a = [{"n": i} for i in range(before + after)]
    b = [{"n": i} for i in range(before + after)]
    where = data.draw(st.integers(0, before + after - 1))
    b[where] = {"n": -1}
    ops = diff(a, b)
    assert ops == [{"op": "replace", "path": f"/{where}/n", "value": -1}]
    assert apply_patch(a, ops) == b


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 128), st.data())
def test_lists_of_one_length_are_paired_from_one_pass(size: int, data: st.DataObject) -> None:
    # The walk alone must give the strict diff's very operations: the slow path it falls back
    # to when the patched baseline is not the new state's JSON would hide a missed item, so it
    # is made to fail here. Up to 128 objects, a few or many changed (from 32 changed objects
    # with the same keys on, they are compared a column at a time), with the budget's probe on.
    old = [{"id": i, "name": f"n{i}", "tags": ["a"]} for i in range(size)]
    new = [dict(item, tags=list(item["tags"])) for item in old]
    for index in data.draw(st.lists(st.integers(0, size - 1), max_size=size)):
        item = new[index]
        change = data.draw(st.sampled_from(["name", "tags", "add", "remove", "every"]))
        if change == "name":
            item["name"] = data.draw(st.text(max_size=3))
        elif change == "tags":
            item["tags"].append(data.draw(st.integers(0, 9)))
        elif change == "add":
            item["extra"] = index
        elif change == "remove":
            item.pop("id", None)
        else:
            for other in new:
                other["name"] = "all"

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the walk's patch did not make the new state")

    baseline = orjson.loads(orjson.dumps(old))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(walk, "_strict_eq", refused)
        result = diff_in_place(baseline, new)
    assert result is not None
    assert result[0] == diff(old, new)
    assert result[1] == new
