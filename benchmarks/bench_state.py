"""StateManager.publish and patch.diff across sizes and change shapes, and the client Session
on long STATE_DELTA streams; every figure is a ratio to orjson.dumps measured in the same run.

Run: ``python benchmarks/bench_state.py`` (``--rounds N`` for more samples, ``--quick`` for a
smoke run on small sizes, ``--no-stream`` / ``--no-table`` to skip a part). Each cell of the
table runs in this interpreter, each after the ones before; ``--isolated`` runs each in a
fresh interpreter instead, once untimed and then timed, so that no cell inherits the heap of
the ones before or pays the process's warm-up (this takes much longer).

The table: states of 10 KB to 10 MB (``make_state``: small objects in a list). Each round
changes the state the way the row says, then times ``orjson.dumps`` of the new state and the
measured call back to back, so the ratio is taken under the same machine load; a cell is the
median ratio over the rounds. The StateManager is pure Python; what each row measures:

- one field / 1% of the objects / every object / every object's title: one publish of the
  state after the round's change made in place, the rounds before being deltas too (the
  manager's baseline is then its decoded copy, patched in place by each delta). "Every
  object's title" rewrites each object's ``name`` string, the longest change per object.
- a new document: one publish of a document that shares no value with the previous one; the
  rounds alternate between two such documents, each round a fresh copy (``orjson.loads`` of
  its JSON, outside the timing: an agent builds a new state from new strings, whose hashes
  Python has not computed yet), so every publish is a snapshot that follows a snapshot. After
  a snapshot the manager keeps only the bytes it encoded (``agui_replay/state/_baseline.py``) and
  the object it was given: the next publish walks from that object to show that a snapshot is
  due, after checking that its JSON is still those bytes.
- a new document after a delta: each round changes one field of the document published last
  and publishes it (a delta, untimed, which decodes the baseline), then publishes a fresh copy
  of the other document (timed): the diff from the decoded baseline stops as soon as the patch
  cannot be shorter than the document.
- a new document, then one field (or 1% of the objects): what the bytes kept after the
  snapshot cost when a delta follows: a new document (a fresh object) is published, then one
  of its fields (or 1% of its objects) changed in place and published again; the cell is the
  time of both publishes over the time of both dumps, with the delta alone beside it (that
  delta decodes the baseline).

Goals: one field and 1% of the objects <= 10x, every object <= 25x, a new document <= 8x,
no row above 30x. ``jsonpatch.make_patch`` of the same change is beside it (it compares with
``==``, so it is not type-strict), timed after all of our rounds of the cell, so that the heap
its allocations leave cannot weigh on ours.

Instruction counts: ``--calls WHAT ITEMS COUNT`` publishes ``COUNT`` new documents (or dumps
them, or neither) untimed; run under ``valgrind --tool=callgrind``, the difference from
``none`` over ``COUNT`` is one call's instructions, which other processes do not change.

The stream: a ``Session`` fed a STATE_SNAPSHOT and then N STATE_DELTAs, either appending to a
list (``add /log/-``) or replacing one scalar; the growth exponent from the smallest to the
largest N is ``log(t_large / t_small) / log(N_large / N_small)`` (1.0 is linear). Goal: <= 1.1.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import jsonpatch
import orjson

from agui_replay.client import Session
from agui_replay.patch import diff
from agui_replay.state import Delta, Snapshot, StateManager


def make_state(items: int = 10_000, salt: int = 0) -> dict[str, Any]:
    return {
        "meta": {"title": "board", "version": 1 + salt, "owner": "bench"},
        "items": [
            {
                "id": i + salt * items,
                "name": f"item {i} v{salt}",
                "done": (i + salt) % 3 == 0,
                "score": i * 1.5 + salt,
                "tags": ["alpha", "beta"] if salt % 2 == 0 else ["gamma", "delta"],
                "note": "lorem ipsum dolor sit amet" if salt % 2 == 0 else "consectetur elit",
            }
            for i in range(items)
        ],
    }


def _fresh(document: Any) -> Any:
    """A copy of ``document`` made of new objects, as an agent's new state is."""
    return orjson.loads(orjson.dumps(document))


def timed(call: Callable[..., object], *args: Any) -> float:
    """CPU seconds of one call (process time: other processes on the machine do not count)."""
    start = time.process_time()
    call(*args)
    return time.process_time() - start


# --------------------------------------------------------------------------------- the table


def one_field(state: dict[str, Any], number: int) -> None:
    items = state["items"]
    items[len(items) // 2]["name"] = f"renamed {number}"


def one_percent(state: dict[str, Any], number: int) -> None:
    items = state["items"]
    for k in range(max(1, len(items) // 100)):
        i = (number * 7 + k * 100) % len(items)
        items[i]["score"] = number * 1000 + i + 0.25


def every_object(state: dict[str, Any], number: int) -> None:
    for item in state["items"]:
        item["done"] = number % 2 == 0


def every_title(state: dict[str, Any], number: int) -> None:
    for i, item in enumerate(state["items"]):
        item["name"] = f"item {i} r{number}"


SHAPES: dict[str, tuple[Callable[[dict[str, Any], int], None], type, float]] = {
    "one field": (one_field, Delta, 10.0),
    "1% of the objects": (one_percent, Delta, 10.0),
    "every object": (every_object, Delta, 25.0),
    "every object's title": (every_title, Delta, 30.0),
}
NEW_DOCUMENT_GOAL = 8.0
ANY_ROW_GOAL = 30.0


def _jsonpatch_rounds(items: int) -> int:
    return 3 if items < 10_000 else 1  # jsonpatch is slow


def publish_cell(items: int, shape: str, rounds: int, theirs: bool = True) -> tuple[float, float]:
    """Median ratios (publish, jsonpatch.make_patch) to orjson.dumps for one shape and size.

    jsonpatch runs after all of our rounds (``theirs``: at all), so that the heap it leaves
    behind (hundreds of MB of allocations on a 10 MB state) cannot weigh on them."""
    if shape == "a new document after a delta":
        return after_delta_cell(items, rounds, theirs)
    states = StateManager()
    if shape == "a new document":
        docs = [make_state(items, salt) for salt in range(2)]
        states.publish(docs[1])
        mutate = None
    else:
        state = make_state(items)
        states.publish(state)
        mutate, expected, _ = SHAPES[shape]
        mutate(state, -1)
        states.publish(state)
    ours = []
    for number in range(rounds):
        if mutate is None:
            new, kind = _fresh(docs[number % 2]), Snapshot
        else:
            mutate(state, number)
            new, kind = state, expected
        base = timed(orjson.dumps, new)
        start = time.process_time()
        result = states.publish(new)
        ours.append((time.process_time() - start) / base)
        assert type(result) is kind, (shape, result)
    ratios = []
    for number in range(_jsonpatch_rounds(items) if theirs else 0):
        if mutate is None:
            old, new = docs[(number + 1) % 2], docs[number % 2]
        else:
            old = copy.deepcopy(state)
            mutate(state, rounds + number)
            new = state
        base = timed(orjson.dumps, new)
        ratios.append(timed(jsonpatch.make_patch, old, new) / base)
    return statistics.median(ours), statistics.median(ratios) if ratios else math.nan


def after_delta_cell(items: int, rounds: int, theirs: bool = True) -> tuple[float, float]:
    """ "A new document after a delta": each round changes one field of the document published
    last and publishes it (a delta, untimed), then publishes a fresh copy of the other
    document (timed: a snapshot whose baseline is the one the delta decoded).
    jsonpatch: the same pairs, after our rounds."""
    docs = [make_state(items, salt) for salt in range(2)]
    states = StateManager()
    old = _fresh(docs[1])
    states.publish(old)
    ours = []
    for number in range(rounds):
        one_field(old, number)
        assert type(states.publish(old)) is Delta
        new = _fresh(docs[number % 2])
        base = timed(orjson.dumps, new)
        start = time.process_time()
        result = states.publish(new)
        ours.append((time.process_time() - start) / base)
        assert type(result) is Snapshot, result
        old = new
    ratios = []
    for number in range(_jsonpatch_rounds(items) if theirs else 0):
        old, new = docs[(number + 1) % 2], docs[number % 2]
        base = timed(orjson.dumps, new)
        ratios.append(timed(jsonpatch.make_patch, old, new) / base)
    return statistics.median(ours), statistics.median(ratios) if ratios else math.nan


def sequence_cell(items: int, rounds: int, shape: str = "one field") -> tuple[float, float]:
    """Median ratios for "a new document, then one field" (or ``shape``, another change of
    SHAPES): (both publishes over both dumps, the delta alone over its dumps)."""
    mutate = SHAPES[shape or "one field"][0]
    docs = [make_state(items, salt) for salt in range(2)]
    states = StateManager()
    states.publish(docs[1])
    pairs, deltas = [], []
    for number in range(rounds):
        new = _fresh(docs[number % 2])  # outside the timing
        base = timed(orjson.dumps, new)
        start = time.process_time()
        result = states.publish(new)
        spent = time.process_time() - start
        assert type(result) is Snapshot, result
        mutate(new, number)
        second = timed(orjson.dumps, new)
        start = time.process_time()
        result = states.publish(new)
        delta = time.process_time() - start
        assert type(result) is Delta, result
        pairs.append((spent + delta) / (base + second))
        deltas.append(delta / second)
    return statistics.median(pairs), statistics.median(deltas)


def diff_cell(items: int, rounds: int) -> tuple[float, float]:
    old = make_state(items)
    ratios, theirs = [], []
    for number in range(rounds):
        new = copy.deepcopy(old)
        one_field(new, number)
        base = timed(orjson.dumps, new)
        ratios.append(timed(diff, old, new) / base)
        if number < (3 if items < 10_000 else 1):
            base = timed(orjson.dumps, new)
            theirs.append(timed(jsonpatch.make_patch, old, new) / base)
    return statistics.median(ratios), statistics.median(theirs)


def _rounds(items: int, rounds: int) -> int:
    """More rounds for small states (a call is short and noisy), fewer for 10 MB."""
    if items < 1_000:
        return rounds * (10 if items < 100 else 3)
    return rounds if items < 10_000 else max(3, rounds // 2)


def _size_label(size: int) -> str:
    return f"{size / 1e6:.2f} MB" if size >= 1e6 else f"{size / 1e3:.0f} KB"


def measure(
    kind: str, shape: str, items: int, rounds: int, theirs: bool = True
) -> tuple[float, float]:
    if kind == "publish":
        return publish_cell(items, shape, rounds, theirs)
    if kind == "sequence":
        return sequence_cell(items, rounds, shape)
    return diff_cell(items, rounds)


def cell(kind: str, shape: str, items: int, rounds: int, isolated: bool) -> tuple[float, float]:
    """One cell; ``isolated``: in a fresh interpreter that runs it once untimed first. In
    turn, a cell inherits the heap of the ones before (a 10 KB cell right after a 10 MB one),
    and the first cell of a process pays its warm-up."""
    if not isolated:
        return measure(kind, shape, items, rounds)
    command = [sys.executable, __file__, "--cell", kind, shape, str(items), str(rounds)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    ours, theirs = json.loads(done.stdout)
    return float(ours), float(theirs)


def table(sizes: list[int], rounds: int, isolated: bool = False) -> list[str]:
    lines = []
    labels = [_size_label(len(orjson.dumps(make_state(n)))) for n in sizes]
    header = "| | " + " | ".join(labels) + " | goal |"
    lines += [header, "|---" * (len(sizes) + 2) + "|"]
    rows = [*SHAPES, "a new document", "a new document after a delta"]
    for shape in rows:
        cells, jsonpatch_cells = [], []
        goal = SHAPES[shape][2] if shape in SHAPES else NEW_DOCUMENT_GOAL
        outcome = "Delta" if shape in SHAPES else "Snapshot"
        for items in sizes:
            ours, theirs = cell("publish", shape, items, _rounds(items, rounds), isolated)
            mark = "" if ours <= goal else " (over)"
            cells.append(f"{ours:.1f}x{mark}")
            jsonpatch_cells.append(f"{theirs:.0f}x")
        lines.append(f"| publish, {shape} -> {outcome} | " + " | ".join(cells) + f" | {goal:g}x |")
        lines.append(f"| `jsonpatch.make_patch`, {shape} | " + " | ".join(jsonpatch_cells) + " | |")
    for shape in ("one field", "1% of the objects"):
        cells = []
        for items in sizes:
            pair, delta = cell("sequence", shape, items, _rounds(items, rounds), isolated)
            mark = "" if pair <= ANY_ROW_GOAL else " (over)"
            cells.append(f"{pair:.1f}x{mark} (the delta {delta:.1f}x)")
        lines.append(
            f"| publish, a new document, then {shape} -> Snapshot, Delta | "
            + " | ".join(cells)
            + f" | {ANY_ROW_GOAL:g}x |"
        )
    cells, jsonpatch_cells = [], []
    for items in sizes:
        ours, theirs = cell("diff", "", items, max(3, _rounds(items, rounds) // 2), isolated)
        cells.append(f"{ours:.1f}x")
        jsonpatch_cells.append(f"{theirs:.0f}x")
    lines.append(
        "| `patch.diff`, one field (validates both inputs) | " + " | ".join(cells) + " | |"
    )
    lines.append("| `jsonpatch.make_patch`, one field | " + " | ".join(jsonpatch_cells) + " | |")
    return lines


def calls(what: str, items: int, count: int) -> None:
    """Untimed, for instruction counts (``valgrind --tool=callgrind``, which a loaded machine
    does not move): ``count`` fresh copies of the two new documents, published after one of
    them, then ``orjson.dumps`` of each copy (``dumps``), a publish of each (``publish``,
    every one a snapshot), or nothing (``none``: the setup alone, to subtract)."""
    docs = [make_state(items, salt) for salt in range(2)]
    copies = [_fresh(docs[number % 2]) for number in range(count)]
    states = StateManager()
    states.publish(_fresh(docs[1]))
    if what == "dumps":
        for new in copies:
            orjson.dumps(new)
    elif what == "publish":
        for new in copies:
            states.publish(new)


# -------------------------------------------------------------------------------- the stream


def _deltas(kind: str, start: int, stop: int) -> list[dict[str, Any]]:
    if kind == "append":
        return [
            {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/log/-", "value": {"n": n}}]}
            for n in range(start, stop)
        ]
    return [
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/count", "value": n}]}
        for n in range(start, stop)
    ]


def stream_time(kind: str, events: int) -> float:
    """CPU seconds a Session spends applying a STATE_SNAPSHOT and ``events`` STATE_DELTAs.

    The events are built in batches outside the timed part (a million of them at once would
    take a gigabyte).
    """
    session = Session(verify=False)
    session.apply({"type": "STATE_SNAPSHOT", "snapshot": {"log": [], "count": 0}})
    spent = 0.0
    for start in range(0, events, 100_000):
        batch = _deltas(kind, start, min(events, start + 100_000))
        begin = time.process_time()
        for event in batch:
            session.apply(event)
        spent += time.process_time() - begin
    assert not session.errors
    return spent


def streams(counts: list[int], repeats: int) -> list[str]:
    lines = ["| stream | " + " | ".join(f"{n:,} events" for n in counts) + " | growth exponent |"]
    lines.append("|---" * (len(counts) + 2) + "|")
    for kind, label in (("append", "append `add /log/-`"), ("replace", "replace `/count`")):
        medians = []
        for events in counts:
            medians.append(statistics.median(stream_time(kind, events) for _ in range(repeats)))
        exponent = math.log(medians[-1] / medians[0]) / math.log(counts[-1] / counts[0])
        cells = [f"{t:.2f} s ({n / t / 1e3:,.0f}k/s)" for n, t in zip(counts, medians, strict=True)]
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {exponent:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="small sizes, few rounds (smoke)")
    parser.add_argument("--no-table", action="store_true")
    parser.add_argument("--no-stream", action="store_true")
    parser.add_argument(
        "--isolated", action="store_true", help="every cell in a fresh interpreter, warmed up"
    )
    parser.add_argument("--cell", nargs=4, metavar=("KIND", "SHAPE", "ITEMS", "ROUNDS"))
    parser.add_argument(
        "--calls",
        nargs=3,
        metavar=("WHAT", "ITEMS", "COUNT"),
        help="new documents, untimed, for callgrind: WHAT is none, dumps or publish",
    )
    args = parser.parse_args()
    if args.calls:
        what, items, count = args.calls
        calls(what, int(items), int(count))
        return
    if args.cell:  # one cell, for table(): its two ratios as JSON, after a warm-up run
        kind, shape, items, rounds = args.cell
        measure(kind, shape, int(items), max(3, int(rounds) // 3), theirs=False)
        print(json.dumps(measure(kind, shape, int(items), int(rounds))))
        return
    if args.quick:
        sizes, rounds, counts, repeats = [84, 840], 3, [1_000, 10_000], 1
    else:
        sizes, rounds = [84, 840, 8_400, 84_000], args.rounds
        counts, repeats = [100_000, 1_000_000], 3
    if not args.no_table:
        print("publish / diff: CPU time as x orjson.dumps of the new state, medians of")
        print(f"{rounds} rounds at 1 MB (more for smaller states, fewer at 10 MB)")
        print("\n".join(table(sizes, rounds, isolated=args.isolated)), flush=True)
    if not args.no_stream:
        print(f"\nSession on STATE_DELTA streams: CPU seconds, median of {repeats}")
        print("\n".join(streams(counts, repeats)))


if __name__ == "__main__":
    main()
