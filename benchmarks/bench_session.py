"""A long conversation through the client ``Session``: events/s, and growth 10k -> 100k -> 1M.

Run:  .venv/bin/python benchmarks/bench_session.py            (add --quick to skip 1M)

The shape is a conversation-heavy recording, built from the strategies: runs drawn from
``agui_replay.strategies.event_streams`` (text, tool calls with results, reasoning, steps,
chunks, CUSTOM, MESSAGES_SNAPSHOT) and re-labelled run after run, so one thread grows to about
27 events and 1.8 messages per run, with a MESSAGES_SNAPSHOT every few runs (the reference
client keeps reasoning messages across a snapshot that has none, so they pile up: the merge
must not walk them). The first table is the 107k-event file: ``verify_stream`` alone (the
baseline, measured in the same run), ``Session`` over the parsed events, and the file path
(read + ``orjson.loads`` per line + ``Session``). The second is growth: events/s at 10k, 100k
and 1M events, which must stay flat (linear time). The third: two shapes that were once
quadratic (n tool results under one assistant message; n results reusing one messageId).

Not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, Phase, given, settings

from agui_replay.client import Session
from agui_replay.strategies import event_streams
from agui_replay.verify import verify_stream

SHAPE_EVENTS = 107_135
KINDS = (
    "text",
    "text",
    "text",
    "tool",
    "tool",
    "reasoning",
    "step",
    "custom",
    "text_chunks",
    "tool_chunks",
    "messages_snapshot",
)


def _pool(size: int) -> list[bytes]:
    """Runs drawn from the strategies (derandomized: the same pool every time), kept as JSON
    text to re-label cheaply."""
    strategy = event_streams(
        max_runs=1, min_items=3, max_items=8, kinds=KINDS, state=True, run_errors=False
    )
    pool: list[bytes] = []

    @settings(
        max_examples=size,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
        deadline=None,
    )
    @given(strategy)
    def collect(stream: list[dict[str, Any]]) -> None:
        pool.append(orjson.dumps(stream))

    collect()
    return pool


def conversation(events: int, pool: list[bytes], seed: int = 14) -> list[dict[str, Any]]:
    """About ``events`` events: pool runs one after another, ids re-labelled per run."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    run = 0
    while len(out) < events:
        run += 1
        text = rng.choice(pool).replace(b'"run-1', b'"run-%d' % run)
        out.extend(orjson.loads(text))
    return out


def _rate(n: int, work: Callable[[], object], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return n / best


def _session(events: list[dict[str, Any]]) -> Session:
    session = Session()
    apply = session.apply
    for event in events:
        apply(event)
    return session.finish()


def _file_session(path: Path) -> Session:
    session = Session()
    apply = session.apply
    loads = orjson.loads
    for line in path.read_bytes().splitlines():
        apply(loads(line))
    return session.finish()


def _state_command(path: Path) -> None:
    """``agui-replay state FILE``, in process, what it prints thrown away."""
    from agui_replay.cli import main as cli

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
        code = cli(["state", str(path)])
    if code != 0:
        raise SystemExit(f"agui-replay state {path} exited {code}")


def _write(path: Path, events: list[dict[str, Any]]) -> None:
    path.write_bytes(b"\n".join(orjson.dumps(e) for e in events) + b"\n")


def _quadratic_shapes(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    run = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    parent = [
        {"type": "TEXT_MESSAGE_START", "messageId": "p"},
        {"type": "TEXT_MESSAGE_END", "messageId": "p"},
    ]
    calls: list[dict[str, Any]] = []
    for i in range(n):
        calls.append(
            {
                "type": "TOOL_CALL_START",
                "toolCallId": f"c{i}",
                "toolCallName": "f",
                "parentMessageId": "p",
            }
        )
        calls.append({"type": "TOOL_CALL_END", "toolCallId": f"c{i}"})
    under_one = [
        *run,
        *parent,
        *calls,
        *(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": f"m{i}",
                "toolCallId": f"c{i}",
                "content": "ok",
            }
            for i in range(n)
        ),
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    one_id = [
        *run,
        *parent,
        *calls,
        *(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "same",
                "toolCallId": f"c{i}",
                "content": "ok",
            }
            for i in range(n)
        ),
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    return under_one, one_id


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the 1M-event growth point")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    pool = _pool(400)
    events = conversation(SHAPE_EVENTS, pool)
    session = _session(events)
    snapshots = sum(1 for e in events if e["type"] == "MESSAGES_SNAPSHOT")
    runs = sum(1 for e in events if e["type"] == "RUN_STARTED")
    print(
        f"shape: {len(events):,} events, {runs:,} runs, {snapshots:,} MESSAGES_SNAPSHOT, "
        f"{len(session.messages):,} messages at the end (python {sys.version.split()[0]})"
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conversation.jsonl"
        _write(path, events)
        n = len(events)
        base = _rate(n, lambda: verify_stream(events), args.rounds)
        rows = [
            ("verify_stream (client mode), parsed events", base),
            ("Session, parsed events", _rate(n, lambda: _session(events), args.rounds)),
            (
                "file -> Session (read + orjson.loads + Session)",
                _rate(n, lambda: _file_session(path), args.rounds),
            ),
            (
                "agui-replay state FILE (in process, output discarded)",
                _rate(n, lambda: _state_command(path), args.rounds),
            ),
        ]
        print(f"\n| {n:,} events | events/s | x verify_stream |\n|---|---|---|")
        for name, rate in rows:
            print(f"| {name} | {rate:,.0f} | {rate / base:.2f} |")

        sizes = [10_000, 100_000] + ([] if args.quick else [1_000_000])
        print(
            "\n| growth | events | Session events/s | file -> Session events/s |\n|---|---|---|---|"
        )
        for size in sizes:
            grown = conversation(size, pool, seed=size)
            _write(path, grown)
            rounds = 1 if size >= 1_000_000 else args.rounds
            rate = _rate(len(grown), lambda grown=grown: _session(grown), rounds)
            file_rate = _rate(len(grown), lambda: _file_session(path), rounds)
            print(f"| {size:,} | {len(grown):,} | {rate:,.0f} | {file_rate:,.0f} |")

    print("\n| shapes once quadratic | n | Session events/s |\n|---|---|---|")
    for n_results in (1_000, 10_000, 50_000):
        under_one, one_id = _quadratic_shapes(n_results)
        for name, stream in (
            ("results under one parent", under_one),
            ("results reusing one messageId", one_id),
        ):
            rate = _rate(len(stream), lambda stream=stream: _session(stream), 1)
            print(f"| {name} | {n_results:,} | {rate:,.0f} |")


if __name__ == "__main__":
    main()
