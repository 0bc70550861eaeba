"""RFC 6902 diff/apply: conformance suite, every op and error, atomicity, JSON type strictness."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agui_replay.errors import AguiReplayError, PatchError
from agui_replay.patch import MAX_DEPTH, apply_patch, diff, json_equal
from agui_replay.patch._json import canonical_json, compact_json

# --------------------------------------------------------------------------- conformance suite

SUITE = Path(__file__).resolve().parents[3] / "shared/conformance/json-patch-tests"


def _suite_cases() -> list[Any]:
    if not SUITE.is_dir():
        return [pytest.param(None, id="suite-missing")]
    cases = []
    for name in ("tests.json", "spec_tests.json"):
        for number, case in enumerate(json.loads((SUITE / name).read_text(encoding="utf-8"))):
            if case.get("disabled"):
                continue
            label = case.get("comment") or case.get("error") or "case"
            slug = re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-").lower()[:50]
            cases.append(pytest.param(case, id=f"{name.split('.')[0]}-{number:03d}-{slug}"))
    return cases


@pytest.mark.parametrize("case", _suite_cases())
def test_conformance_suite(case: dict[str, Any] | None) -> None:
    if case is None:
        pytest.skip(f"json-patch-tests not found at {SUITE} (the shared folder beside the repo)")
    doc_before = copy.deepcopy(case["doc"])
    if "error" in case:
        with pytest.raises(PatchError):
            apply_patch(case["doc"], case["patch"])
    else:
        result = apply_patch(case["doc"], case["patch"])
        if "expected" in case:
            assert json_equal(result, case["expected"]), (result, case["expected"])
    assert json_equal(case["doc"], doc_before)  # never mutated, failing or not


def test_conformance_suite_is_complete_when_present() -> None:
    if not SUITE.is_dir():
        pytest.skip(f"json-patch-tests not found at {SUITE}")
    # 95 + 17 cases, 4 disabled: guards against silently reading an empty or truncated copy.
    assert len(_suite_cases()) == 108


# ------------------------------------------------------------------------------------ each op


def test_add_to_object_array_end_and_root() -> None:
    doc = {"a": [1, 2]}
    assert apply_patch(doc, [{"op": "add", "path": "/b", "value": {"c": None}}]) == {
        "a": [1, 2],
        "b": {"c": None},
    }
    assert apply_patch(doc, [{"op": "add", "path": "/a/0", "value": 0}]) == {"a": [0, 1, 2]}
    assert apply_patch(doc, [{"op": "add", "path": "/a/2", "value": 3}]) == {"a": [1, 2, 3]}
    assert apply_patch(doc, [{"op": "add", "path": "/a/-", "value": 3}]) == {"a": [1, 2, 3]}
    assert apply_patch(doc, [{"op": "add", "path": "", "value": [7]}]) == [7]
    assert doc == {"a": [1, 2]}


def test_add_replaces_an_existing_member() -> None:
    assert apply_patch({"a": 1}, [{"op": "add", "path": "/a", "value": 2}]) == {"a": 2}


def test_remove_replace_move_copy_test() -> None:
    doc = {"a": {"b": [1, 2, 3]}, "c": "x"}
    assert apply_patch(doc, [{"op": "remove", "path": "/a/b/1"}]) == {"a": {"b": [1, 3]}, "c": "x"}
    assert apply_patch(doc, [{"op": "remove", "path": "/c"}]) == {"a": {"b": [1, 2, 3]}}
    assert apply_patch(doc, [{"op": "replace", "path": "/a/b/0", "value": 9}])["a"]["b"] == [
        9,
        2,
        3,
    ]
    assert apply_patch(doc, [{"op": "replace", "path": "", "value": 5}]) == 5
    assert apply_patch(doc, [{"op": "move", "from": "/c", "path": "/a/d"}]) == {
        "a": {"b": [1, 2, 3], "d": "x"}
    }
    # move inside one array: removal first, then insertion at the new index
    assert apply_patch(doc, [{"op": "move", "from": "/a/b/0", "path": "/a/b/2"}])["a"]["b"] == [
        2,
        3,
        1,
    ]
    assert apply_patch(doc, [{"op": "move", "from": "/c", "path": "/c"}]) == doc
    copied = apply_patch(doc, [{"op": "copy", "from": "/a", "path": "/e"}])
    assert copied["e"] == {"b": [1, 2, 3]}
    assert copied["e"] is not copied["a"]  # a copy, not a second reference
    copied["e"]["b"].append(4)
    assert copied["a"]["b"] == [1, 2, 3]
    assert apply_patch(doc, [{"op": "test", "path": "/a/b", "value": [1, 2, 3]}]) == doc
    assert apply_patch(doc, [{"op": "test", "path": "", "value": doc}]) == doc
    assert doc == {"a": {"b": [1, 2, 3]}, "c": "x"}


def test_operations_apply_in_sequence() -> None:
    ops = [
        {"op": "add", "path": "/list", "value": []},
        {"op": "add", "path": "/list/-", "value": {"n": 1}},
        {"op": "replace", "path": "/list/0/n", "value": 2},
        {"op": "copy", "from": "/list/0", "path": "/list/-"},
        {"op": "replace", "path": "/list/1/n", "value": 3},
        {"op": "test", "path": "/list", "value": [{"n": 2}, {"n": 3}]},
    ]
    assert apply_patch({}, ops) == {"list": [{"n": 2}, {"n": 3}]}


def test_pydantic_operation_models_are_accepted() -> None:
    from ag_ui.core import StateDeltaEvent

    event = StateDeltaEvent(
        delta=[  # type: ignore[list-item]
            {"op": "move", "from": "/a", "path": "/b"},
            {"op": "replace", "path": "/b", "value": None},
        ]
    )
    assert apply_patch({"a": 1}, event.delta) == {"b": None}


# ---------------------------------------------------------------------------------- error paths

ERRORS = [
    ({"a": 1}, [{"op": "remove", "path": "/b"}], r"#0 \(remove '/b'\).*no member 'b'"),
    ({"a": 1}, [{"op": "replace", "path": "/b", "value": 1}], r"no member 'b' to replace"),
    ({"a": 1}, [{"op": "add", "path": "/x/y", "value": 1}], r"no member 'x'"),
    ({"a": [1]}, [{"op": "add", "path": "/a/2", "value": 1}], r"index 2 is out of range.*length 1"),
    ({"a": [1]}, [{"op": "remove", "path": "/a/1"}], r"index 1 is out of range"),
    ({"a": [1]}, [{"op": "remove", "path": "/a/-"}], r"'-'.*only be used by add"),
    ({"a": [1]}, [{"op": "add", "path": "/a/01", "value": 1}], r"leading zeros"),
    ({"a": [1]}, [{"op": "add", "path": "/a/x", "value": 1}], r"'x' is not a valid index"),
    ({"a": "s"}, [{"op": "add", "path": "/a/b", "value": 1}], r"'/a' is a string"),
    ({"a": 1}, [{"op": "add", "path": "a", "value": 1}], r"invalid JSON pointer 'a'"),
    ({"a": 1}, [{"op": "add", "path": "/~2", "value": 1}], r"'~' must be followed by 0 or 1"),
    ({"a": 1}, [{"op": "add", "path": "/b"}], r'missing "value"'),
    ({"a": 1}, [{"op": "replace", "path": "/a"}], r'missing "value"'),
    ({"a": 1}, [{"op": "test", "path": "/a"}], r'missing "value"'),
    ({"a": 1}, [{"op": "add", "value": 1}], r'missing "path"'),
    ({"a": 1}, [{"op": "add", "path": None, "value": 1}], r'"path" must be a JSON pointer string'),
    ({"a": 1}, [{"op": "move", "path": "/b"}], r'missing "from"'),
    ({"a": 1}, [{"op": "copy", "from": 3, "path": "/b"}], r'"from" must be a JSON pointer string'),
    ({"a": 1}, [{"op": "copy", "from": "/z", "path": "/b"}], r"no member 'z'"),
    ({"a": {"b": 1}}, [{"op": "move", "from": "/a", "path": "/a/b/c"}], r"into its own child"),
    ({"a": 1}, [{"op": "spam", "path": "/a"}], r"unknown op 'spam'"),
    ({"a": 1}, [{"path": "/a"}], r'missing "op"'),
    ({"a": 1}, ["add"], r"#0: an operation must be a JSON object"),
    ({"a": 1}, [{"op": "remove", "path": ""}], r"cannot remove the whole document"),
    ({"a": 1}, [{"op": "test", "path": "/a", "value": 2}], r"test failed.*is 1 \(integer\)"),
    (5, [{"op": "add", "path": "/a", "value": 1}], r"the document is a integer"),
]


@pytest.mark.parametrize(("doc", "ops", "message"), ERRORS, ids=[m[:30] for _, _, m in ERRORS])
def test_error_paths_raise_patch_error_with_a_reason(doc: Any, ops: Any, message: str) -> None:
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError, match=message) as info:
        apply_patch(doc, ops)
    assert info.value.op_index == 0
    assert doc == before


def test_error_names_index_op_and_path() -> None:
    ops = [
        {"op": "add", "path": "/a", "value": 1},
        {"op": "remove", "path": "/missing"},
    ]
    with pytest.raises(PatchError) as info:
        apply_patch({}, ops)
    error = info.value
    assert error.op_index == 1
    assert error.op == ops[1]
    assert error.path == "/missing"
    assert str(error).startswith("operation #1 (remove '/missing'): path not found")


@pytest.mark.parametrize("ops", [{"op": "add"}, "[]", None, 3])
def test_a_patch_that_is_not_a_list_is_refused(ops: Any) -> None:
    with pytest.raises(PatchError, match="array of operations"):
        apply_patch({}, ops)


def test_values_that_are_not_json_are_refused() -> None:
    nan = float("nan")
    with pytest.raises(PatchError, match=r"not valid JSON at '/x/0'.*NaN"):
        apply_patch({}, [{"op": "add", "path": "/v", "value": {"x": [nan]}}])
    with pytest.raises(PatchError, match="JSON keys are strings"):
        apply_patch({}, [{"op": "add", "path": "/v", "value": {1: 2}}])
    with pytest.raises(PatchError, match="a set is not a JSON value"):
        apply_patch({}, [{"op": "add", "path": "/v", "value": {1, 2}}])
    with pytest.raises(PatchError, match="inf"):
        apply_patch({}, [{"op": "test", "path": "", "value": float("inf")}])


# ------------------------------------------------------------------------------------ atomicity


def test_failing_op_leaves_nothing_half_applied() -> None:
    doc = {"a": [1, 2], "b": {"c": 1}}
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError) as info:
        apply_patch(
            doc,
            [
                {"op": "add", "path": "/a/-", "value": 3},
                {"op": "replace", "path": "/b/c", "value": 2},
                {"op": "remove", "path": "/nope"},
            ],
        )
    assert info.value.op_index == 2
    assert doc == before
    assert doc["a"] == [1, 2]


def test_copy_on_write_shares_only_untouched_parts() -> None:
    doc = {"big": [{"n": i} for i in range(100)], "other": {"x": 1}}
    result = apply_patch(doc, [{"op": "replace", "path": "/big/5/n", "value": -1}])
    assert result["big"] is not doc["big"]
    assert result["big"][5] is not doc["big"][5]
    assert result["big"][6] is doc["big"][6]  # not deep-copied
    assert result["other"] is doc["other"]
    assert doc["big"][5] == {"n": 5}


def test_result_does_not_alias_the_operations() -> None:
    value = {"inner": [1, 2]}
    ops = [
        {"op": "add", "path": "/v", "value": value},
        {"op": "replace", "path": "/w", "value": value},
    ]
    result = apply_patch({"w": 0}, ops)
    result["v"]["inner"].append(3)
    assert value == {"inner": [1, 2]}
    assert result["w"] == {"inner": [1, 2]}
    value["inner"].append(9)
    assert result["v"]["inner"] == [1, 2, 3]


def test_empty_patch_returns_the_document() -> None:
    doc = {"a": 1}
    assert apply_patch(doc, []) is doc


# ----------------------------------------------------------------------------- JSON type traps

TRAPS = [
    (1, 1.0),
    (1, True),
    (1.0, True),
    (0, False),
    (0, 0.0),
    (0.0, -0.0),
    (None, False),
    ("1", 1),
    ([], {}),
]


@pytest.mark.parametrize(("a", "b"), TRAPS)
def test_type_traps_are_different_values(a: Any, b: Any) -> None:
    assert not json_equal(a, b)
    assert not json_equal([a], [b])
    assert not json_equal({"k": [{"x": a}]}, {"k": [{"x": b}]})
    assert canonical_json({"k": a}) != canonical_json({"k": b})


@pytest.mark.parametrize(("a", "b"), TRAPS)
@pytest.mark.parametrize(
    "wrap",
    [
        lambda v: v,
        lambda v: {"k": v},
        lambda v: [0, v, 2],
        lambda v: {"items": [{"id": 1, "v": v}, {"id": 2, "v": [v, v]}]},
        lambda v: {"m": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "v": v}},
    ],
    ids=["bare", "member", "item", "nested", "large-object"],
)
def test_diff_never_drops_a_type_change(a: Any, b: Any, wrap: Any) -> None:
    for old, new in ((wrap(a), wrap(b)), (wrap(b), wrap(a))):
        ops = diff(old, new)
        assert ops, (old, new)
        assert json_equal(apply_patch(old, ops), new)


def test_test_op_compares_numbers_by_value_but_never_a_boolean_with_a_number() -> None:
    # RFC 6902's `test` operation: numbers are equal when their values are; true/false/null
    # are literals.
    for actual, expected in [
        (1, 1.0),
        (0.0, -0.0),
        ([1, {"n": 2}], [1.0, {"n": 2.0}]),
        ({"a": [0]}, {"a": [0.0]}),
        (2**70, float(2**70)),
    ]:
        for doc, value in ((actual, expected), (expected, actual)):
            assert apply_patch({"v": doc}, [{"op": "test", "path": "/v", "value": value}])
    for actual, expected in [
        (1, True),
        (0, False),
        (0.0, False),
        ([1], [True]),
        ({"a": 0}, {"a": False}),
        (None, 0),
        ("1", 1),
        (2**53 + 1, float(2**53)),  # numerically different, though a double cannot tell
        ([1], [1, 1]),
        ({"a": 1}, {"a": 1, "b": 1}),
    ]:
        for doc, value in ((actual, expected), (expected, actual)):
            with pytest.raises(PatchError, match="test failed"):
                apply_patch({"v": doc}, [{"op": "test", "path": "/v", "value": value}])


def test_a_passing_numeric_test_lets_the_rest_of_the_patch_apply() -> None:
    # What @ag-ui/client (fast-json-patch) does with this delta: 1.0 tests equal to 1
    ops = [{"op": "test", "path": "/a", "value": 1.0}, {"op": "replace", "path": "/a", "value": 2}]
    assert apply_patch({"a": 1}, ops) == {"a": 2}
    with pytest.raises(PatchError, match="not a JSON number"):
        apply_patch({"a": [1]}, [{"op": "test", "path": "/a", "value": [float("nan")]}])


def test_diff_stays_type_strict_where_test_compares_numbers() -> None:
    assert diff({"a": 1}, {"a": 1.0}) == [{"op": "replace", "path": "/a", "value": 1.0}]
    assert diff([0.0], [-0.0]) == [{"op": "replace", "path": "/0", "value": -0.0}]


def test_json_equal_ignores_key_order_but_not_array_order() -> None:
    assert json_equal({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1})
    assert not json_equal([1, 2], [2, 1])
    assert json_equal((1, [2]), [1, (2,)])  # tuples are JSON arrays


def test_big_integers_survive() -> None:
    big = 2**70
    assert json_equal(big, big)
    assert not json_equal([big], [float(big)])
    assert diff({"n": big}, {"n": float(big)}) == [
        {"op": "replace", "path": "/n", "value": 1.1805916207174113e21}
    ]
    assert apply_patch({}, [{"op": "add", "path": "/n", "value": big}]) == {"n": big}
    assert compact_json({"n": big}) == b'{"n":1180591620717411303424}'


def test_canonical_and_compact_json() -> None:
    value = {"b": [1, 1.0, True, None], "a": "é"}
    assert compact_json(value) == '{"b":[1,1.0,true,null],"a":"é"}'.encode()
    assert canonical_json(value) == '{"a":"é","b":[1,1.0,true,null]}'.encode()
    with pytest.raises(PatchError, match="NaN"):
        compact_json({"x": [None, float("nan")]})
    with pytest.raises(PatchError, match="JSON keys are strings"):
        canonical_json({1: 2})


# ---------------------------------------------------------------------- keys that need escaping

ODD_KEYS = ["", "~", "/", "~1", "~0", "a/b~c", "0", "01", "-", "é", "🙂", " "]


@pytest.mark.parametrize("key", ODD_KEYS)
def test_odd_keys_round_trip_through_diff_and_apply(key: str) -> None:
    old = {key: {key: [1]}, "0": 0}
    new = {key: {key: [1, {key: 2}]}, "0": 0}
    if key != "0":
        new["x"] = {key: None}
    ops = diff(old, new)
    assert json_equal(apply_patch(old, ops), new)
    removed = diff(new, {})
    assert json_equal(apply_patch(new, removed), {})


def test_pointer_escapes_follow_rfc_6901() -> None:
    doc = {"a/b": 1, "m~n": 2, "~1": 3, "": {"": 4}}
    assert apply_patch(doc, [{"op": "test", "path": "/a~1b", "value": 1}]) is doc
    assert apply_patch(doc, [{"op": "test", "path": "/m~0n", "value": 2}]) is doc
    assert apply_patch(doc, [{"op": "test", "path": "/~01", "value": 3}]) is doc
    assert apply_patch(doc, [{"op": "test", "path": "//", "value": 4}]) is doc
    assert diff({}, {"a/b": 1}) == [{"op": "add", "path": "/a~1b", "value": 1}]
    assert diff({}, {"~1": 1}) == [{"op": "add", "path": "/~01", "value": 1}]


def test_digit_keys_in_objects_are_keys_not_indexes() -> None:
    doc = {"0": "zero", "10": "ten"}
    assert apply_patch(doc, [{"op": "remove", "path": "/0"}]) == {"10": "ten"}
    assert apply_patch(doc, [{"op": "add", "path": "/01", "value": 1}])["01"] == 1
    assert apply_patch(doc, [{"op": "add", "path": "/-", "value": 1}])["-"] == 1


# ---------------------------------------------------------------------------------- array diffs


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ([1, 2, 3], [1, 2, 3, 4], [{"op": "add", "path": "/3", "value": 4}]),
        ([1, 2, 3], [0, 1, 2, 3], [{"op": "add", "path": "/0", "value": 0}]),
        ([1, 2, 3], [1, 9, 2, 3], [{"op": "add", "path": "/1", "value": 9}]),
        ([1, 2, 3], [1, 3], [{"op": "remove", "path": "/1"}]),
        ([1, 2, 3, 4], [1, 4], [{"op": "remove", "path": "/2"}, {"op": "remove", "path": "/1"}]),
        ([1, 2, 3], [1, 5, 3], [{"op": "replace", "path": "/1", "value": 5}]),
        (
            [{"a": 1}, {"a": 2}],
            [{"a": 1}, {"a": 3}],
            [{"op": "replace", "path": "/1/a", "value": 3}],
        ),
        (
            [1, 2, 3],
            [],
            [
                {"op": "remove", "path": "/2"},
                {"op": "remove", "path": "/1"},
                {"op": "remove", "path": "/0"},
            ],
        ),
        ([], [1], [{"op": "add", "path": "/0", "value": 1}]),
    ],
)
def test_array_edits_give_small_patches(
    old: list[Any], new: list[Any], expected: list[Any]
) -> None:
    ops = diff(old, new)
    assert ops == expected
    assert json_equal(apply_patch(old, ops), new)


def test_one_change_in_a_long_array_is_one_operation() -> None:
    old = [{"id": i, "done": False} for i in range(5000)]
    new = copy.deepcopy(old)
    new[3210]["done"] = True
    assert diff(old, new) == [{"op": "replace", "path": "/3210/done", "value": True}]
    new[3210]["done"] = 0  # == False in Python, but another JSON value
    new[3211]["done"] = 0.0
    assert diff(old, new) == [
        {"op": "replace", "path": "/3210/done", "value": 0},
        {"op": "replace", "path": "/3211/done", "value": 0.0},
    ]


def test_large_object_member_changes() -> None:
    old = {f"k{i}": {"v": i} for i in range(200)}
    new = copy.deepcopy(old)
    new["k7"]["v"] = True
    new["k150"] = [1]
    del new["k3"]
    ops = diff(old, new)
    assert {op["path"] for op in ops} == {"/k3", "/k7/v", "/k150"}
    assert json_equal(apply_patch(old, ops), new)


def test_diff_values_are_independent_copies() -> None:
    new = {"a": {"list": [1]}}
    ops = diff({}, new)
    new["a"]["list"].append(2)
    assert ops == [{"op": "add", "path": "/a", "value": {"list": [1]}}]


def test_diff_refuses_values_that_are_not_json() -> None:
    with pytest.raises(PatchError, match=r"diff argument b is not valid JSON at '/x'.*NaN"):
        diff({"x": 1}, {"x": float("nan")})
    with pytest.raises(PatchError, match="diff argument a"):
        diff({"x": float("inf")}, {"x": 1})
    with pytest.raises(PatchError, match="JSON keys are strings"):
        diff({}, {"x": {2: 1}})
    with pytest.raises(PatchError, match="object is not a JSON value"):
        diff({}, {"x": object()})


# ------------------------------------------------------------------------------- deep documents


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_documents_up_to_max_depth_work() -> None:
    deep = _nested(MAX_DEPTH)
    ops = diff(deep, _nested(MAX_DEPTH, 2))
    assert ops == [{"op": "replace", "path": "/0" * (MAX_DEPTH), "value": 2}]
    assert json_equal(apply_patch(deep, ops), _nested(MAX_DEPTH, 2))


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 300, 5000])
def test_deep_documents_fail_with_a_clear_error(depth: int) -> None:
    deep = _nested(depth)
    with pytest.raises(PatchError, match=f"MAX_DEPTH={MAX_DEPTH}"):
        diff(deep, 1)
    with pytest.raises(PatchError, match=f"MAX_DEPTH={MAX_DEPTH}"):
        diff({}, {"a": deep})
    with pytest.raises(PatchError, match=f"MAX_DEPTH={MAX_DEPTH}"):
        apply_patch({}, [{"op": "add", "path": "/a", "value": deep}])
    with pytest.raises(PatchError, match=f"MAX_DEPTH={MAX_DEPTH}"):
        compact_json(deep)
    with pytest.raises(PatchError, match="MAX_DEPTH"):
        apply_patch({"a": deep}, [{"op": "test", "path": "/a", "value": deep}])
    with pytest.raises(PatchError, match="MAX_DEPTH"):
        apply_patch({}, [{"op": "add", "path": "/0" * depth, "value": 1}])


def test_patch_cannot_build_a_document_deeper_than_max_depth() -> None:
    almost = _nested(MAX_DEPTH - 1)
    doc = {"a": almost, "b": [[1]]}
    with pytest.raises(PatchError, match="MAX_DEPTH"):
        apply_patch(doc, [{"op": "copy", "from": "/b", "path": "/a" + "/0" * (MAX_DEPTH - 2)}])
    with pytest.raises(PatchError, match="MAX_DEPTH"):
        apply_patch(doc, [{"op": "move", "from": "/b", "path": "/a" + "/0" * (MAX_DEPTH - 2)}])
    fine = apply_patch(
        doc, [{"op": "move", "from": "/b/0/0", "path": "/a" + "/0" * (MAX_DEPTH - 2)}]
    )
    assert "b" in fine


# ------------------------------------------------------------------------------------ properties

ODD_KEY = st.sampled_from(ODD_KEYS) | st.text(max_size=4)
TRAP_SCALARS = st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, True, False, None, "", "1", 2**64, 2.5])
SCALARS = (
    TRAP_SCALARS
    | st.integers(min_value=-(2**66), max_value=2**66)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
JSON = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(ODD_KEY, children, max_size=5)
    ),
    max_leaves=25,
)


def _paths(value: Any, prefix: str = "") -> list[str]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, f"{prefix}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, f"{prefix}/{index}")
        found.append(f"{prefix}/-")
    return found


def _retyped(value: Any) -> Any:
    """A value that Python's == calls equal to ``value`` but JSON does not (when there is one)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and abs(value) < 2**53:
        return bool(value) if value in (0, 1) else float(value)
    if isinstance(value, float) and value.is_integer():
        return -value if value == 0 else int(value)
    if isinstance(value, list):
        return [_retyped(item) for item in value]
    if isinstance(value, dict):
        return {key: _retyped(item) for key, item in value.items()}
    return value


def _containers(value: Any) -> list[Any]:
    found = [value] if isinstance(value, (dict, list)) else []
    if isinstance(value, (dict, list)):
        for child in value.values() if isinstance(value, dict) else value:
            found += _containers(child)
    return found


@st.composite
def _mutated(draw: st.DrawFn, value: Any, steps: int = 4) -> Any:
    """A close relative of ``value``: a few random inserts, removals, type or value changes."""
    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(0, steps))):
        containers = _containers(value)
        if not containers:
            return draw(JSON)
        node = draw(st.sampled_from(containers))
        action = draw(st.sampled_from(["set", "insert", "remove", "retype"]))
        if isinstance(node, dict):
            key = draw(st.sampled_from(sorted(node)) if node and action != "insert" else ODD_KEY)
            if action == "remove" and key in node:
                del node[key]
            elif action == "retype" and key in node:
                node[key] = _retyped(node[key])
            else:
                node[key] = draw(JSON)
        else:
            if action == "insert" or not node:
                node.insert(draw(st.integers(0, len(node))), draw(JSON))
            elif action == "remove":
                node.pop(draw(st.integers(0, len(node) - 1)))
            elif action == "retype":
                index = draw(st.integers(0, len(node) - 1))
                node[index] = _retyped(node[index])
            else:
                node[draw(st.integers(0, len(node) - 1))] = draw(TRAP_SCALARS | JSON)
    return value


PROPS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPS
@given(data=st.data(), a=JSON)
def test_property_diff_then_apply_rebuilds_the_target(data: st.DataObject, a: Any) -> None:
    b = data.draw(_mutated(a) | JSON)
    a_before, b_before = canonical_json(a), canonical_json(b)
    ops = diff(a, b)
    assert json_equal(apply_patch(a, ops), b)
    assert (ops == []) == json_equal(a, b)
    assert canonical_json(a) == a_before
    assert canonical_json(b) == b_before


OP_NAMES = st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope", None, 3])


@st.composite
def _random_ops(draw: st.DrawFn, doc: Any) -> list[Any]:
    paths = [*_paths(doc), "/zz", "bad", "/~2", "/0/0/0", "/01", "/-/x", ""]
    pointer = st.sampled_from(paths) | st.none() | st.integers()
    ops: list[Any] = []
    for _ in range(draw(st.integers(0, 4))):
        if draw(st.integers(0, 15)) == 0:
            ops.append(draw(st.none() | st.integers() | st.text(max_size=3) | st.lists(st.none())))
            continue
        op: dict[str, Any] = {}
        if draw(st.booleans()) or draw(st.booleans()):
            op["op"] = draw(OP_NAMES)
        if draw(st.integers(0, 9)):
            op["path"] = draw(pointer)
        if draw(st.booleans()):
            op["from"] = draw(pointer)
        if draw(st.booleans()):
            op["value"] = draw(JSON | st.sampled_from([float("nan"), {1: 2}, object()]))
        ops.append(op)
    return ops


@PROPS
@given(data=st.data(), doc=JSON)
def test_property_apply_fuzz_raises_only_patch_error_and_never_mutates(
    data: st.DataObject, doc: Any
) -> None:
    ops = data.draw(_random_ops(doc))
    before = canonical_json(doc)
    error: PatchError | None = None
    try:
        result = apply_patch(doc, ops)
    except PatchError as exc:  # anything else (KeyError, TypeError...) fails the test
        error = exc
    if error is None:
        canonical_json(result)  # the result is valid JSON
    else:
        assert isinstance(error, AguiReplayError)
        assert error.op_index is not None
    assert canonical_json(doc) == before
