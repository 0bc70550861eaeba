"""Is a cheaper byte check after a delta worth having? The StateManager's publish as it is
("encoded": the patched baseline is encoded again and compared with the new state's bytes,
which catches a change of type that ``==`` hid) against the same publish with that check
made free ("spliced": the bound that any check spliced from the baseline's old bytes could
reach, since it cannot cost less than nothing). The removed splice check was worth keeping
only if that bound is well below the encoding arm.

Run: ``python benchmarks/bench_state_splice.py [ITEMS] [ROUNDS]`` (defaults: 84 items, about
10 KB, and 300 rounds). Each round runs five publishes of each arm in turn, on one state and
one manager, so that both see the same heap and the same machine load; every publish changes
the state the way ``bench_state.py`` does (one field; 1% of the objects) and is timed against
``orjson.dumps`` of it just before. The figures are medians of those ratios. The free arm
swaps a private function of ``agui_replay.patch._diff`` for one that trusts the walk; it only
measures, its outcomes are not checked.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).parent))

from bench_state import make_state, one_field, one_percent

from agui_replay.patch import _diff
from agui_replay.state import StateManager


def _trusted(patched: Any, b: Any, b_bytes: bytes) -> bytes:
    return b_bytes


def compare(
    items: int, rounds: int, change: Callable[[dict[str, Any], int], None]
) -> dict[str, float]:
    verified = _diff._verified
    arms: dict[str, Callable[..., Any]] = {"spliced": _trusted, "encoded": verified}
    ratios: dict[str, list[float]] = {name: [] for name in arms}
    state = make_state(items)
    states = StateManager()
    states.publish(state)
    change(state, -1)
    states.publish(state)  # a delta: the baseline is decoded from here on
    number = 0
    try:
        for _ in range(rounds):
            for name, check in arms.items():
                _diff._verified = check  # type: ignore[assignment]
                for _ in range(5):
                    number += 1
                    change(state, number)
                    start = time.process_time()
                    orjson.dumps(state)
                    middle = time.process_time()
                    states.publish(state)
                    ratios[name].append((time.process_time() - middle) / (middle - start))
    finally:
        _diff._verified = verified
    return {name: statistics.median(values) for name, values in ratios.items()}


def main() -> None:
    items = int(sys.argv[1]) if len(sys.argv) > 1 else 84
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    size = len(orjson.dumps(make_state(items)))
    print(f"publish as x orjson.dumps, {size / 1e3:.0f} KB, medians of {rounds * 5} publishes")
    print("spliced: the byte check made free (a bound for any splice); encoded: as it is")
    for label, change in (("one field", one_field), ("1% of the objects", one_percent)):
        result = compare(items, rounds, change)
        print(f"{label}: spliced {result['spliced']:.2f}x, encoded {result['encoded']:.2f}x")


if __name__ == "__main__":
    main()
