"""Load cost of a 1,000-event cassette against read + json.loads of the same file (same run).

Run: ``.venv/bin/python benchmarks/bench_cassette_load.py``
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agui_replay.cassette import Cassette, CassetteRun, load_cassette, save_cassette
from agui_replay.normalize import normalize_events


def stream(n: int = 1000) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    i = 0
    while len(events) < n - 1:
        i += 1
        m = f"r-msg-{i}"
        events.append({"type": "TEXT_MESSAGE_START", "messageId": m, "role": "assistant"})
        events += [
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": f"word {k} "}
            for k in range(6)
        ]
        events.append({"type": "TEXT_MESSAGE_END", "messageId": m})
    return [*events[: n - 1], {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}]


def median_ms(fn: Callable[[], Any], repeat: int = 40) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    events = stream()
    run_input = {"threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": []}
    path = Path(tempfile.mkdtemp()) / "c.json"
    save_cassette(Cassette(runs=[CassetteRun(input=run_input, events=events)]), path)
    base = median_ms(lambda: json.loads(path.read_bytes()))
    full = median_ms(lambda: load_cassette(path))
    shape = median_ms(lambda: load_cassette(path, validate="shape"))
    norm = median_ms(lambda: normalize_events(events))
    print(f"{path.stat().st_size} bytes, {len(events)} events")
    print(f"baseline read + json.loads      {base:6.2f} ms")
    print(f"load_cassette(validate='full')  {full:6.2f} ms  {full / base:5.2f}x")
    print(f"load_cassette(validate='shape') {shape:6.2f} ms  {shape / base:5.2f}x")
    print(f"normalize_events                {norm:6.2f} ms  {norm / base:5.2f}x")


if __name__ == "__main__":
    main()
