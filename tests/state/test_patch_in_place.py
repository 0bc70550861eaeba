"""apply_patch_in_place: changes the document itself, and undoes everything when an op fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_replay.client import Session
from agui_replay.errors import PatchError
from agui_replay.patch import apply_patch, apply_patch_in_place, json_equal
from agui_replay.patch._json import compact_json

SUITE = Path(__file__).resolve().parents[3] / "shared/conformance/json-patch-tests"


def _containers(value: Any) -> list[Any]:
    """Every dict and list in ``value``, outermost first."""
    found = [value] if isinstance(value, (dict, list)) else []
    for child in value.values() if isinstance(value, dict) else value if found else ():
        found += _containers(child)
    return found


def _fingerprint(doc: Any) -> tuple[bytes, list[int]]:
    """The exact bytes (key order included) and the identity of every container."""
    return compact_json(doc), [id(node) for node in _containers(doc)]


# ------------------------------------------------------------------------------ conformance suite


def _suite() -> list[Any]:
    if not SUITE.is_dir():
        return [pytest.param(None, id="suite-missing")]
    cases = []
    for name in ("tests.json", "spec_tests.json"):
        for number, case in enumerate(json.loads((SUITE / name).read_text(encoding="utf-8"))):
            if not case.get("disabled"):
                cases.append(pytest.param(case, id=f"{name.split('.')[0]}-{number:03d}"))
    return cases


@pytest.mark.parametrize("case", _suite())
def test_conformance_suite_in_place(case: dict[str, Any] | None) -> None:
    if case is None:
        pytest.skip(f"json-patch-tests not found at {SUITE}")
    doc = copy.deepcopy(case["doc"])
    before = _fingerprint(doc)
    if "error" in case:
        with pytest.raises(PatchError):
            apply_patch_in_place(doc, case["patch"])
        assert _fingerprint(doc) == before  # restored exactly, the same objects
    else:
        result = apply_patch_in_place(doc, case["patch"])
        if "expected" in case:
            assert json_equal(result, case["expected"])


# ------------------------------------------------------------------- every op kind, then a failure

DOC: dict[str, Any] = {
    "first": 1,
    "obj": {"a": 1, "b": [1, 2], "c": {"d": True}, "z": None},
    "list": [{"n": 0}, {"n": 1}, {"n": 2}],
    "last": "end",
}

SUCCEEDING = {
    "add a new member": {"op": "add", "path": "/obj/new", "value": {"x": [1]}},
    "add over a member": {"op": "add", "path": "/obj/a", "value": [9]},
    "add into an array": {"op": "add", "path": "/list/1", "value": {"n": 9}},
    "append to an array": {"op": "add", "path": "/list/-", "value": 3},
    "add the root": {"op": "add", "path": "", "value": {"other": 1}},
    "remove a middle member": {"op": "remove", "path": "/obj/b"},
    "remove the first member": {"op": "remove", "path": "/first"},
    "remove the last member": {"op": "remove", "path": "/last"},
    "remove an array item": {"op": "remove", "path": "/list/0"},
    "replace a member": {"op": "replace", "path": "/obj/c/d", "value": 1},
    "replace an array item": {"op": "replace", "path": "/list/2", "value": []},
    "replace the root": {"op": "replace", "path": "", "value": [1]},
    "move a member": {"op": "move", "from": "/obj/a", "path": "/obj/zz"},
    "move across arrays": {"op": "move", "from": "/list/0", "path": "/obj/b/0"},
    "move within an array": {"op": "move", "from": "/list/0", "path": "/list/2"},
    "copy": {"op": "copy", "from": "/obj", "path": "/list/-"},
    "test": {"op": "test", "path": "/obj/b", "value": [1.0, 2]},
}

FAILING = {
    "missing member": {"op": "remove", "path": "/nope"},
    "index out of range": {"op": "replace", "path": "/list/7", "value": 1},
    "failed test": {"op": "test", "path": "/first", "value": True},
    "bad value": {"op": "add", "path": "/x", "value": float("nan")},
    "unknown op": {"op": "frobnicate", "path": "/first"},
}


@pytest.mark.parametrize("failing", FAILING.values(), ids=FAILING.keys())
@pytest.mark.parametrize("succeeding", SUCCEEDING.values(), ids=SUCCEEDING.keys())
def test_a_failing_op_after_any_op_restores_the_document_exactly(
    succeeding: dict[str, Any], failing: dict[str, Any]
) -> None:
    doc = copy.deepcopy(DOC)
    before = _fingerprint(doc)
    expected = apply_patch(DOC, [succeeding])  # the copy-on-write apply agrees first
    ops = [succeeding, {"op": "add", "path": "/first", "value": 2}, failing]
    if succeeding["path"] == "":  # the document was replaced: aim the failure at the new one
        ops = [succeeding, failing]
    with pytest.raises(PatchError) as raised:
        apply_patch_in_place(doc, ops)
    assert raised.value.op_index == len(ops) - 1
    assert _fingerprint(doc) == before
    result = apply_patch_in_place(doc, [succeeding])
    assert compact_json(result) == compact_json(expected)


def test_many_changes_to_one_object_are_undone_in_key_order() -> None:
    doc = {"a": 1, "b": 2, "c": 3, "d": 4}
    ops = [
        {"op": "remove", "path": "/b"},
        {"op": "add", "path": "/e", "value": 5},
        {"op": "remove", "path": "/a"},
        {"op": "move", "from": "/c", "path": "/b"},
        {"op": "add", "path": "/c", "value": 0},
        {"op": "remove", "path": "/nope"},
    ]
    with pytest.raises(PatchError):
        apply_patch_in_place(doc, ops)
    assert list(doc.items()) == [("a", 1), ("b", 2), ("c", 3), ("d", 4)]


def test_in_place_changes_the_document_and_shares_nothing_with_the_ops() -> None:
    doc: dict[str, Any] = {"log": [], "meta": {"n": 0}}
    log = doc["log"]
    value = {"line": "hello"}
    result = apply_patch_in_place(
        doc,
        [
            {"op": "add", "path": "/log/-", "value": value},
            {"op": "replace", "path": "/meta/n", "value": 1},
        ],
    )
    assert result is doc
    assert doc["log"] is log
    assert doc == {"log": [{"line": "hello"}], "meta": {"n": 1}}
    value["line"] = "changed"  # inserted values are copies
    assert doc["log"][0] == {"line": "hello"}


def test_tuples_in_the_document_become_lists_where_written() -> None:
    doc: dict[str, Any] = {"t": (1, 2)}
    assert apply_patch_in_place(doc, [{"op": "add", "path": "/t/-", "value": 3}]) == {
        "t": [1, 2, 3]
    }
    assert apply_patch_in_place((1,), [{"op": "add", "path": "/-", "value": 2}]) == [1, 2]


def test_owned_ids_keep_handed_out_values_unchanged() -> None:
    doc = {"log": [1], "other": {"k": [0]}}
    handed_out = doc  # e.g. session.state, read by a caller
    frozen = compact_json(handed_out)
    owned: set[int] = set()
    new = apply_patch_in_place(doc, [{"op": "add", "path": "/log/-", "value": 2}], owned=owned)
    assert compact_json(handed_out) == frozen
    assert new is not handed_out
    assert new["other"] is handed_out["other"]  # untouched parts are shared, not copied
    log = new["log"]
    # The copies are owned now: the next delta writes them in place.
    again = apply_patch_in_place(new, [{"op": "add", "path": "/log/-", "value": 3}], owned=owned)
    assert again is new
    assert again["log"] is log
    assert log == [1, 2, 3]
    assert compact_json(handed_out) == frozen
    # A failure rolls back the ownership it added, and the document.
    before = _fingerprint(again)
    with pytest.raises(PatchError):
        apply_patch_in_place(
            again,
            [{"op": "add", "path": "/other/k/-", "value": 1}, {"op": "remove", "path": "/x"}],
            owned=owned,
        )
    assert _fingerprint(again) == before
    assert id(handed_out["other"]) not in owned


# ---------------------------------------------------------------------- Session, client-side


def test_session_test_op_compares_numbers_by_value() -> None:
    # A numeric test compares by value (1 equals 1.0): the reference client ends with {"a": 2}
    session = Session(verify=False)
    session.apply({"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}})
    session.apply(
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "test", "path": "/a", "value": 1.0},
                {"op": "replace", "path": "/a", "value": 2},
            ],
        }
    )
    assert session.state == {"a": 2}
    assert not session.errors
    assert not session.needs_resync
    session.apply({"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/a", "value": True}]})
    assert session.needs_resync
    assert session.state == {"a": 2}


def test_session_state_read_earlier_never_changes() -> None:
    session = Session(state={"log": [], "count": 0}, verify=False)
    seen = []
    for step in range(6):
        session.apply(
            {
                "type": "STATE_DELTA",
                "delta": [
                    {"op": "add", "path": "/log/-", "value": {"step": step}},
                    {"op": "replace", "path": "/count", "value": step + 1},
                ],
            }
        )
        if step % 2:
            state = session.state
            seen.append((state, compact_json(state)))
    for state, frozen in seen:
        assert compact_json(state) == frozen
    assert session.state == {"log": [{"step": n} for n in range(6)], "count": 6}
    # a failing delta keeps the very same state object
    state = session.state
    session.apply({"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/log/99"}]})
    assert session.state is state
    assert len(session.errors) == 1


# ------------------------------------------------------------------------------------ property

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LEAF = st.integers(-5, 5) | st.text(max_size=3) | st.none() | st.booleans()


@st.composite
def _delta(draw: st.DrawFn, size: int) -> list[dict[str, Any]]:
    """Ops against ``{"log": [...], "items": [{"v": ...}, ...]}``; some fail (bad index, missing
    member, wrong test), placed anywhere in the delta."""
    ops: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["append", "insert", "remove", "replace", "set", "fail"]))
        index = draw(st.integers(0, size + 3))  # may be out of range: then the delta fails
        if kind == "append":
            ops.append({"op": "add", "path": "/log/-", "value": {"at": draw(LEAF)}})
        elif kind == "insert":
            ops.append({"op": "add", "path": f"/log/{index}", "value": draw(LEAF)})
        elif kind == "remove":
            ops.append({"op": "remove", "path": f"/log/{index}"})
        elif kind == "replace":
            ops.append({"op": "replace", "path": f"/items/{index}/v", "value": draw(LEAF)})
        elif kind == "set":
            ops.append(
                {
                    "op": "add",
                    "path": f"/items/{index}/k{draw(st.integers(0, 2))}",
                    "value": [draw(LEAF)],
                }
            )
        else:
            ops.append(
                draw(
                    st.sampled_from(
                        [
                            {"op": "test", "path": "/items/0/v", "value": "never"},
                            {"op": "remove", "path": "/missing"},
                            {"op": "replace", "path": "/log/100000", "value": 1},
                        ]
                    )
                )
            )
    return ops


@PROPS
@given(data=st.data(), size=st.integers(0, 300))
def test_property_session_matches_jsonpatch_over_failing_and_succeeding_deltas(
    data: st.DataObject, size: int
) -> None:
    initial = {"log": list(range(size)), "items": [{"v": i} for i in range(size)]}
    session = Session(state=initial, verify=False)
    reference = copy.deepcopy(initial)
    kept: list[tuple[Any, bytes]] = []
    for _ in range(data.draw(st.integers(1, 12))):
        ops = data.draw(_delta(len(reference["log"])))
        try:
            reference = jsonpatch.apply_patch(reference, ops, in_place=False)
            failed = False
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
            failed = True  # jsonpatch's own copy is dropped: the reference stays as it was
        errors = len(session.errors)
        session.apply({"type": "STATE_DELTA", "delta": ops})
        assert (len(session.errors) > errors) == failed, ops
        if data.draw(st.booleans()):  # sometimes a caller reads the state and keeps it
            state = session.state
            kept.append((state, compact_json(state)))
            assert compact_json(state) == compact_json(reference)
    assert compact_json(session.state) == compact_json(reference)
    for state, frozen in kept:  # what a caller kept never moved
        assert compact_json(state) == frozen
