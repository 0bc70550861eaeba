"""StateManager.publish and apply_patch on a ~1 MB state, as ratios to orjson.dumps.

Run: ``python benchmarks/bench_state.py`` (``--rounds N`` for more samples).

Each round times ``orjson.dumps`` of the same state right before the measured call, so the ratio
is taken under the same machine load; the table shows medians over the rounds. Targets (issue 2):
publish of a one-field change <= 5x orjson.dumps, apply of a one-op delta <= 1x.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable
from typing import Any

import jsonpatch
import orjson

from agui_replay.patch import apply_patch, diff
from agui_replay.state import Delta, StateManager


def make_state(items: int = 10_000) -> dict[str, Any]:
    return {
        "meta": {"title": "board", "version": 1, "owner": "bench"},
        "items": [
            {
                "id": i,
                "name": f"item {i}",
                "done": i % 3 == 0,
                "score": i * 1.5,
                "tags": ["alpha", "beta"],
                "note": "lorem ipsum dolor sit amet",
            }
            for i in range(items)
        ],
    }


def timed(call: Callable[[], object]) -> float:
    start = time.perf_counter()
    call()
    return time.perf_counter() - start


def measure(
    state: Any, rounds: int, prepare: Callable[[int], Callable[[], object]]
) -> tuple[float, float]:
    """Median time of the call that ``prepare(round)`` returns, and its median ratio to dumps."""
    times, ratios = [], []
    for number in range(rounds):
        call = prepare(number)
        base = timed(lambda: orjson.dumps(state))
        spent = timed(call)
        times.append(spent)
        ratios.append(spent / base)
    return statistics.median(times), statistics.median(ratios)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args()
    rounds: int = args.rounds

    state = make_state()
    size = len(orjson.dumps(state))
    rows: list[tuple[str, float, float, str]] = []

    dumps_time, _ = measure(state, rounds, lambda _: lambda: orjson.dumps(state))
    rows.append(("orjson.dumps (baseline)", dumps_time, 1.0, ""))

    # publish: the caller edits its state in place and publishes it again
    states = StateManager()
    states.publish(state)
    middle = len(state["items"]) // 2

    def one_field(number: int) -> Callable[[], object]:
        state["items"][middle]["name"] = f"renamed {number}"

        def publish() -> None:
            assert isinstance(states.publish(state), Delta)

        return publish

    t, r = measure(state, rounds, one_field)
    rows.append(("StateManager.publish, one field changed", t, r, "target <= 5x"))

    def type_only(number: int) -> Callable[[], object]:
        # 1 <-> True inside an object that Python == calls unchanged: the strict fallback path
        state["items"][middle]["tags"] = [1, "beta"] if number % 2 else [True, "beta"]

        def publish() -> None:
            assert isinstance(states.publish(state), Delta)

        return publish

    t, r = measure(state, max(5, rounds // 4), type_only)
    rows.append(("StateManager.publish, 1 -> true in a list", t, r, "fallback, info"))

    def unchanged(_: int) -> Callable[[], object]:
        return lambda: states.publish(state)

    t, r = measure(state, rounds, unchanged)
    rows.append(("StateManager.publish, nothing changed", t, r, "info"))

    old = copy.deepcopy(state)
    new = copy.deepcopy(state)
    new["items"][middle]["name"] = "renamed"
    t, r = measure(state, max(5, rounds // 4), lambda _: lambda: jsonpatch.make_patch(old, new))
    rows.append(("jsonpatch.make_patch, same change", t, r, "for comparison"))
    t, r = measure(state, max(5, rounds // 4), lambda _: lambda: diff(old, new))
    rows.append(("agui_replay.patch.diff, same change", t, r, "validates inputs, info"))

    ops = [{"op": "replace", "path": f"/items/{middle}/name", "value": "x"}]
    t, r = measure(state, rounds, lambda _: lambda: apply_patch(old, ops))
    rows.append(("apply_patch, one-op delta", t, r, "target <= 1x"))
    t, r = measure(state, max(5, rounds // 4), lambda _: lambda: jsonpatch.apply_patch(old, ops))
    rows.append(("jsonpatch.apply_patch (copies first)", t, r, "for comparison"))

    print(
        f"state: {len(state['items'])} objects, {size / 1e6:.2f} MB compact JSON; {rounds} rounds"
    )
    print(f"{'operation':<44} {'median ms':>10} {'x dumps':>9}  note")
    for name, seconds, ratio, note in rows:
        print(f"{name:<44} {seconds * 1e3:>10.3f} {ratio:>9.2f}  {note}")


if __name__ == "__main__":
    main()
