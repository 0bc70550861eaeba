"""The StateManager after a snapshot, when it keeps the state only as JSON bytes: a different
change diffed from the part of the bytes that changed (patch._window). Both must give what
the size rule gives with the full type-strict diff, whatever the shortcut (see
``tests.support.state_rule``)."""

from __future__ import annotations

import copy
import enum
import json
import sys
import uuid
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.errors import PatchError
from agui_replay.patch import apply_patch
from agui_replay.state import Delta, Snapshot, StateManager, Unchanged
from tests.support.state_rule import check, expected, strict

SETTINGS = settings(max_examples=60, deadline=None, database=None)


BIG = 40_000  # bytes of a member beside the list: from 32 KB on, deltas after a snapshot are
# diffed from the changed part alone (smaller states decode the baseline at the first)


def board(items: int, salt: str = "", pad: int = 0, extra: int = 0) -> dict[str, Any]:
    return {
        "meta": {"title": "board", "version": 1, "extra": "e" * extra},
        "items": [
            {"id": i, "name": f"item {i}{salt}", "note": f"note {i}{salt}", "pad": [7] * pad}
            for i in range(items)
        ],
    }


# -- the sketch: a snapshot after a snapshot ---------------------------------------------------


LONG = "x" * 600  # a member name: its path alone makes each replace under it long


def grid(step: int, pad: int, extra: int, long: bool = False, items: int = 60) -> dict[str, Any]:
    """``items`` objects whose two sketched members are one-digit strings, ``step`` apart, so
    the sketch's bound (a replace per changed member) is nearly the patch."""
    names = [LONG, "aa"] if long else ["aa", "bb"]
    return {
        "meta": {"extra": "e" * extra},
        "items": [
            {"i": i, **{name: str((i + k * step) % 10) for k, name in enumerate(names, 1)}}
            | {"pad": [7] * pad}
            for i in range(items)
        ],
    }


@pytest.mark.parametrize("extra", range(0, 400, 7))
def test_the_snapshot_after_a_snapshot_follows_the_rule_at_its_boundary(extra: int) -> None:
    # Every sketched member changes, nothing else: the patch is the same for every ``extra``,
    # the document grows with it, so across the range the outcome goes from snapshot to delta
    # a few bytes at a time. A bound in the sketch two bytes too high per operation turns some
    # of these deltas into snapshots.
    second, third = grid(1, 31, extra), grid(2, 31, extra)
    states = StateManager()
    states.publish(grid(0, 0, 0))
    assert isinstance(states.publish(second), Snapshot)  # after a snapshot: leaves a sketch
    check(states, second, second, third)


def across_the_boundary(lead_in: Callable[[StateManager, Any, Any], None]) -> StateManager:
    """For each size across the boundary: a manager, ``lead_in(states, second, third)``, then
    the publish of ``third`` (the 32-object grid with every sketched member changed) after
    ``second``, which must give the rule's outcome; both outcomes must occur. Returns the
    manager of the smallest size, the farthest from the boundary."""
    outcomes, managers = set(), []
    for extra in range(0, 240):
        second = grid(1, 31, extra, items=32)
        third = grid(2, 31, extra, items=32)
        states = StateManager()
        lead_in(states, second, third)
        check(states, second, orjson.loads(orjson.dumps(second)), third)
        outcomes.add(expected(second, third))
        managers.append(states)
    assert outcomes == {Delta, Snapshot}
    return managers[0]


def test_one_replace_too_many_in_the_bound_is_seen() -> None:
    # 32 objects, the fewest a sketch is made for: the bound counts one digit per index, so
    # its slack is the second digit of 22 indexes in two columns (44 bytes), less than one
    # replace (about 50). A bound that counts one replace too many gives a snapshot where the
    # rule gives a delta somewhere in this range, which crosses the boundary. (One too few
    # only leaves the proof to the slower walk, which reaches the same outcome.)
    def after_a_snapshot(states: StateManager, second: Any, third: Any) -> None:
        states.publish(grid(0, 0, 0, items=32))
        assert isinstance(states.publish(second), Snapshot)

    across_the_boundary(after_a_snapshot)


def test_outcomes_on_both_sides_of_the_boundary_are_met() -> None:
    # The tests around here are only worth something if their range crosses the boundary.
    outcomes = {expected(grid(1, 31, extra), grid(2, 31, extra)) for extra in range(0, 400, 7)}
    assert outcomes == {Delta, Snapshot}
    outcomes.clear()
    for extra in range(0, 400, 7):  # the documents of test_a_sketch_follows_the_deltas_made_from_it
        second, third = grid(1, 26, extra, long=True), grid(2, 26, extra, long=True)
        second["items"][5][LONG] = third["items"][5][LONG]
        outcomes.add(expected(second, third))
    assert outcomes == {Delta, Snapshot}


@pytest.mark.parametrize("extra", range(0, 400, 7))
def test_a_sketch_follows_the_deltas_made_from_it(extra: int) -> None:
    # A delta diffed from the changed part alone keeps the baseline as bytes and updates the
    # sketch: a column still holding the old value would count it as changed once more, a
    # long replace (its member's name is long) that is not in the patch.
    second, third = grid(1, 26, extra, long=True), grid(2, 26, extra, long=True)
    states = StateManager()
    states.publish(grid(0, 0, 0, long=True))
    assert isinstance(states.publish(second), Snapshot)
    second["items"][5][LONG] = third["items"][5][LONG]
    pointer = "/items/5/" + LONG
    assert states.publish(second) == Delta(
        [{"op": "replace", "path": pointer, "value": third["items"][5][LONG]}]
    )
    check(states, second, orjson.loads(orjson.dumps(second)), third)


def test_a_sketch_never_trusts_the_object_published_before() -> None:
    states = StateManager()
    states.publish(board(50))
    published = board(50, salt="a")
    states.publish(published)  # a snapshot after a snapshot: from here on a sketch exists
    for item in published["items"]:  # the published object, rewritten after the publish
        item["name"] = "changed"
    close = board(50, salt="a")
    close["items"][7]["name"] = "seven"
    # Diffed from that object, every name would differ (a snapshot); from the baseline, one.
    assert states.publish(close) == Delta(
        [{"op": "replace", "path": "/items/7/name", "value": "seven"}]
    )


def after_a_delta(items: int) -> tuple[StateManager, dict[str, Any]]:
    """A manager that published a board of ``items`` objects, then a delta of it (its
    version), and that board."""
    states = StateManager()
    doc = board(items)
    states.publish(doc)
    doc["meta"]["version"] = 2
    assert isinstance(states.publish(doc), Delta)
    return states, doc


def test_a_snapshot_the_diff_finds_after_a_delta_is_sketched_in_hashes() -> None:
    # The same rule for a sketch made from the state itself: here a document that does not
    # look new (its first, middle and last objects are the old ones), so the diff finds the
    # snapshot.
    states, doc = after_a_delta(1000)
    new = board(1000, salt="x")
    for index in (0, 500, 999):
        new["items"][index] = copy.deepcopy(doc["items"][index])
    names = [item["name"] for item in new["items"]]
    counts = list(map(sys.getrefcount, names))
    check(states, doc, copy.deepcopy(doc), new)
    assert list(map(sys.getrefcount, names)) == counts


def test_the_first_snapshot_of_a_large_state_leaves_a_sketch() -> None:
    # From 32 KB on the first publish sketches the state, so that a new document after it
    # (or after deltas diffed from the changed bytes, which keep the sketch up to date) is
    # proved a snapshot without the walk from the object published before. Across this range
    # of sizes the rule's outcome goes from snapshot to delta.
    outcomes = set()
    for extra in range(3000, 5600, 100):
        second = grid(1, 31, extra, items=700)
        third = grid(2, 31, extra, items=700)
        states = StateManager()
        assert isinstance(states.publish(second), Snapshot)
        check(states, second, second, third)
        outcomes.add(expected(second, third))
    assert outcomes == {Delta, Snapshot}
    small = StateManager()
    small.publish(grid(1, 0, 0))  # under 32 KB: the first delta decodes, which drops it


def test_a_new_document_after_a_delta_follows_the_rule_at_its_boundary() -> None:
    # Under 32 KB a delta decodes the baseline; another document after it is proved to need a
    # snapshot. The bound's slack is as small as in the test above, so a bound counted from
    # the wrong document, or one replace too high, gives a snapshot where the rule gives a
    # delta.
    def after_a_delta(states: StateManager, second: Any, third: Any) -> None:
        states.publish(second)
        second["items"][1]["aa"] = third["items"][1]["aa"]  # not a sampled object
        assert isinstance(states.publish(second), Delta)

    across_the_boundary(after_a_delta)
    # far from the boundary, proved from the sketch, which it leaves for the next document
    # (the diff's snapshot leaves none)


def test_a_sketch_kept_through_a_delta_follows_the_rule_at_its_boundary() -> None:
    # A snapshot that leaves a sketch (the second document, shown due from the walk), then a
    # delta that changes a sketched member (decoding the baseline, which keeps the sketch and
    # follows the delta), then another document, proved from that sketch. The sketch must
    # have taken the delta: item 1 is the same in the delta's document and the next one, and
    # a stale hash there counts one replace too many, a snapshot where the rule gives a delta.
    def kept_through_a_delta(states: StateManager, second: Any, third: Any) -> None:
        states.publish(grid(0, 0, 0, items=32))
        assert isinstance(states.publish(second), Snapshot)
        second["items"][1]["aa"] = third["items"][1]["aa"]  # a sketched member, not sampled
        assert isinstance(states.publish(second), Delta)

    across_the_boundary(kept_through_a_delta)


@pytest.mark.parametrize("kind", ["nan", "uuid", "enum"])
def test_a_new_document_after_a_delta_with_a_bad_value_is_refused(kind: str) -> None:
    # The sketch's proof holds for exact JSON types only: a value that is not JSON, outside
    # the sketched members, still raises, and the baseline is kept.
    states, doc = after_a_delta(60)
    other = board(60, salt="x")
    bad = {"nan": float("nan"), "uuid": uuid.UUID(int=7), "enum": Color.RED}[kind]
    other["items"][30]["id"] = bad
    with pytest.raises(PatchError):
        states.publish(other)
    assert states.published == doc
    other["items"][30]["id"] = 30
    assert isinstance(states.publish(other), Snapshot)


@SETTINGS
@given(
    data=st.data(),
    size=st.integers(32, 90),
    root_list=st.booleans(),
    blob=st.sampled_from([BIG, 0]),
    tail=st.sampled_from(["", "~" * 700]),
)
def test_publishes_after_snapshots_follow_the_rule(
    data: st.DataObject, size: int, root_list: bool, blob: int, tail: str
) -> None:
    # Fresh documents and in-place edits, interleaved: every outcome is the rule's, and the
    # client rebuilt from what was sent is the document. Without the blob (and with a list
    # at the root) the state is small: deltas decode the baseline, and a fresh document after
    # one is proved a snapshot from a sketch of the decoded baseline. With the blob, the
    # sketch never proves one (its columns are short beside the blob). With long strings
    # (``tail``) the items alone pass 32 KB: deltas on one object are diffed from the bytes
    # (the sketch's strings hashed first), and fresh documents, whose members are then
    # strings that start with their own number, are proved from the sketch, of strings or of
    # hashes.
    values = st.sampled_from([0, 1, 1.0, True, None, "", "a", "item 3", "é", ["x"], {"k": 1}])
    generation = [0]

    def long(value: Any) -> Any:
        return f"{generation[0]}{value}{tail}" if tail and isinstance(value, str) else value

    texts = (st.text(max_size=14) | values).map(long)
    firsts = st.text(max_size=14).map(long) if tail else texts  # a fresh document's strings

    def fresh() -> Any:
        generation[0] += 1
        items = [
            {"id": i, "name": data.draw(firsts), "note": data.draw(firsts), "n": i % 4}
            for i in range(size)
        ]
        meta = {"v": data.draw(values), "blob": "b" * blob}
        return items if root_list else {"meta": meta, "items": items}

    states = StateManager()
    doc = fresh()
    client = states.publish(doc).value
    previous = orjson.loads(orjson.dumps(doc))
    for _ in range(data.draw(st.integers(1, 6))):
        how = data.draw(st.sampled_from(["fresh", "copy", "in place", "in place", "shuffle"]))
        if how == "fresh":
            doc = fresh()
        else:
            if how == "copy":
                doc = copy.deepcopy(doc)
            items = doc if root_list else doc["items"]
            share = data.draw(st.sampled_from([1, 2, 10, size]))
            for index in range(0, len(items), share):
                member = data.draw(st.sampled_from(["name", "note", "n", "id"]))
                items[index][member] = data.draw(texts)
            if how == "shuffle":  # the same members, another key order
                items[0] = dict(reversed(list(items[0].items())))
            if data.draw(st.booleans()) and len(items) > 1:
                items.pop(data.draw(st.integers(0, len(items) - 1)))
        client = check(states, client, previous, doc)
        previous = orjson.loads(orjson.dumps(doc))


# -- the window: a small change after a snapshot -------------------------------------------------


def test_one_field_after_a_snapshot_is_diffed_from_its_object_alone() -> None:
    doc = board(200, extra=BIG)
    states = StateManager()
    states.publish(doc)
    doc["items"][120]["note"] = "changed"
    assert states.publish(doc) == Delta(
        [{"op": "replace", "path": "/items/120/note", "value": "changed"}]
    )
    doc["items"][120]["note"] = True  # a type change, and then one that == hides
    assert states.publish(doc) == Delta(
        [{"op": "replace", "path": "/items/120/note", "value": True}]
    )
    doc["items"][120]["note"] = 1
    assert states.publish(doc) == Delta([{"op": "replace", "path": "/items/120/note", "value": 1}])
    assert states.publish(doc) == Unchanged()
    assert strict(states.published) == strict(doc)


def test_every_small_change_after_a_snapshot_leaves_the_baseline_bytes() -> None:
    # From 32 KB on, no delta decodes the whole baseline while each change sits in one object;
    # a change spread over most of the document does, and the deltas after it are diffed from
    # the decoded baseline. Outcomes are the size rule's.
    doc = board(200, extra=BIG)
    states = StateManager()
    states.publish(doc)
    client = orjson.loads(orjson.dumps(doc))
    for number, index in enumerate((120, 3, 199, 120, 0)):
        previous = orjson.loads(orjson.dumps(doc))
        doc["items"][index]["name"] = f"renamed {number}"
        client = check(states, client, previous, doc)
    previous = orjson.loads(orjson.dumps(doc))
    doc["meta"]["title"] = doc["items"][190]["note"] = "both ends"
    client = check(states, client, previous, doc)
    previous = orjson.loads(orjson.dumps(doc))
    doc["items"][50]["name"] = "after the decode"
    check(states, client, previous, doc)


def test_the_keys_of_a_changed_object_in_another_order() -> None:
    doc = board(100, extra=BIG)
    states = StateManager()
    states.publish(doc)
    item = doc["items"][40]
    doc["items"][40] = {"note": "new", **{k: v for k, v in item.items() if k != "note"}}
    assert states.publish(doc) == Delta(
        [{"op": "replace", "path": "/items/40/note", "value": "new"}]
    )
    assert states.publish(doc) == Unchanged()


class Color(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("bad", "reason"),
    [(Color.RED, "not a JSON value"), (uuid.UUID(int=7), "not a JSON value")],
)
def test_a_value_that_is_not_json_is_refused_where_its_bytes_are_unchanged(
    bad: Any, reason: str
) -> None:
    # The enum writes "red", as the string it replaces did; the UUID too. Only the other edit
    # changes bytes: the refusal must not depend on where the change is.
    doc = board(100, extra=BIG)
    doc["items"][3]["name"] = "red" if isinstance(bad, Color) else str(bad)
    states = StateManager()
    states.publish(doc)
    doc["items"][3]["name"] = bad
    doc["items"][90]["note"] = "changed"
    with pytest.raises(PatchError, match=reason):
        states.publish(doc)
    doc["items"][3]["name"] = "red" if isinstance(bad, Color) else str(bad)
    assert states.publish(doc) == Delta(
        [{"op": "replace", "path": "/items/90/note", "value": "changed"}]
    )


def test_nan_where_a_null_was_is_refused_beside_another_change() -> None:
    doc = board(100, extra=BIG)
    doc["items"][3]["name"] = None
    states = StateManager()
    states.publish(doc)
    doc["items"][3]["name"] = float("nan")
    doc["items"][90]["note"] = "changed"
    with pytest.raises(PatchError, match="NaN"):
        states.publish(doc)


def test_an_integer_beyond_64_bits_takes_the_slow_path() -> None:
    doc = board(100, extra=BIG)
    states = StateManager()
    states.publish(doc)
    doc["items"][50]["id"] = 2**70
    assert states.publish(doc) == Delta([{"op": "replace", "path": "/items/50/id", "value": 2**70}])
    assert states.published["items"][50]["id"] == 2**70


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.sampled_from([1.0, 0.5])
    | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=3), inner, max_size=5)
    ),
    max_leaves=30,
)


# strings that hold the "},{" between two objects of a list, and objects that repeat
TRICKY = st.sampled_from(["a", "},{", '"},{"', "}", ",{", "x},{y", ""])


class Label(str):
    pass


class Level(enum.IntEnum):
    HIGH = 3


HOSTILE = st.sampled_from(
    [
        Label("x"),
        Level.HIGH,
        (1, 2),
        ("a",),
        float("nan"),
        float("inf"),
        2**70,
        Color.RED,
        uuid.UUID(int=1),
        {1: "a"},
        object(),
        "x",
        3,
        None,
    ]
)


@settings(max_examples=80, deadline=None, database=None)
@given(data=st.data())
def test_hostile_values_after_a_snapshot_raise_a_patch_error_or_follow_the_rule(
    data: st.DataObject,
) -> None:
    # Values that are not plain JSON (subclasses, tuples, NaN, big integers, enums, UUIDs,
    # non-string keys, objects), put into a large state between publishes: every publish
    # either raises PatchError and keeps the baseline, or gives the rule's outcome.
    doc = board(60, extra=BIG)
    states = StateManager()
    states.publish(doc)
    previous = json.loads(json.dumps(doc))
    for _ in range(data.draw(st.integers(1, 5))):
        if data.draw(st.booleans()):
            doc = copy.deepcopy(previous)
        index = data.draw(st.integers(0, 59))
        member = data.draw(st.sampled_from(["name", "note", "id"]))
        doc["items"][index][member] = data.draw(HOSTILE)
        if data.draw(st.booleans()):
            doc["items"][data.draw(st.integers(0, 59))]["note"] = data.draw(st.text(max_size=5))
        try:
            plain = json.loads(json.dumps(_plain(doc), allow_nan=False))
        except (TypeError, ValueError):
            with pytest.raises(PatchError):
                states.publish(doc)
            assert exact(states.published) == exact(previous)
            doc = copy.deepcopy(previous)
            continue
        result = states.publish(doc)
        assert type(result) is expected(previous, plain), result
        assert exact(states.published) == exact(plain)
        previous = plain


def exact(value: Any) -> str:
    """:func:`strict` for integers beyond 64 bits too (1, 1.0 and true still differ)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _plain(value: Any) -> Any:
    """``value`` as the JSON the StateManager accepts (subclasses as their base type, tuples
    as lists); anything else raises TypeError."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, enum.Enum) and not isinstance(value, (int, str)):
        raise TypeError("an enum")
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("a key")
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    raise TypeError(type(value).__name__)


@settings(max_examples=80, deadline=None, database=None)
@given(data=st.data(), size=st.integers(32, 70))
def test_a_fresh_document_after_a_delta_follows_the_rule(data: st.DataObject, size: int) -> None:
    # Small states, so a delta decodes the baseline; then documents whose sketched members
    # differ at the objects the guess samples (so the sketch's proof is tried), each sharing a
    # drawn part of its values with the one before (so the proof holds or falls short), now
    # and then with a value that is not plain JSON: every publish raises PatchError and keeps
    # the baseline, or gives the rule's outcome.
    texts = st.text(max_size=12)
    sampled = {0, size // 2, size - 1}

    def fresh(tag: int, before: Any) -> Any:
        share = data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]))
        items = []
        for i in range(size):
            if before is not None and i not in sampled and data.draw(st.floats(0, 1)) < share:
                items.append(copy.deepcopy(before[i]))
                continue
            items.append(
                {"id": i, "name": f"{data.draw(texts)}/{tag}", "note": f"{tag}:{i}", "n": i}
            )
        if data.draw(st.integers(0, 4)) == 0:
            items[data.draw(st.integers(0, size - 1))]["n"] = data.draw(HOSTILE)
        return items

    def publish(client: Any, previous: Any, new: Any) -> tuple[Any, Any]:
        """Publish ``new``: PatchError with the baseline kept when it is not JSON, else the
        rule's outcome and a client rebuilt from it (``check`` for integers beyond 64 bits
        too); the client and the new previous document."""
        try:
            plain = json.loads(json.dumps(_plain(new), allow_nan=False))
        except (TypeError, ValueError):
            with pytest.raises(PatchError):
                states.publish(new)
            assert exact(states.published) == exact(previous)
            return client, previous
        result = states.publish(new)
        want = Snapshot if previous is None else expected(previous, plain)
        assert type(result) is want, result
        if isinstance(result, Delta):
            client = apply_patch(client, result.ops)
        elif isinstance(result, Snapshot):
            client = result.value
        assert exact(client) == exact(plain)
        assert exact(states.published) == exact(plain)
        return client, plain

    states = StateManager()
    client, previous = publish(None, None, fresh(0, None))
    if previous is None:
        return  # the first document was not JSON
    for tag in range(1, data.draw(st.integers(2, 5))):
        # deltas: the first decodes the baseline, which the next ones patch in place (where
        # a sketch of it would look is found once per baseline object, so they may change a
        # sketched member's type under that choice)
        for _ in range(data.draw(st.integers(1, 3))):
            doc = copy.deepcopy(previous)
            member = data.draw(st.sampled_from(["n", "name", "note"]))
            doc[data.draw(st.integers(0, size - 1))][member] = data.draw(
                st.sampled_from([-1, 7, "z", None])
            )
            client, previous = publish(client, previous, doc)
        client, previous = publish(client, previous, fresh(tag, previous))
