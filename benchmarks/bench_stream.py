"""Verify + apply a 100,000-event AG-UI stream; compare with ag-ui-validate on the same file.

Run:  .venv/bin/python benchmarks/bench_stream.py

Two streams are written to a temporary folder as JSONL (one event per line):

* ``varied``: many runs, each with reasoning, steps, interleaved text and tool calls, results,
  chunked text and tool calls, activity, state snapshots and JSON Patch deltas, CUSTOM / RAW.
* ``long-message``: one run with 100,000 TEXT_MESSAGE_CONTENT events into a single message
  (checks that building a long message is linear, not quadratic).

For each: our ``Session`` (client-mode verifier + applier) over the parsed events, and the
same from the file (read + ``orjson.loads`` per line + verify + apply); then ag-ui-validate's
``Validator.feed`` over the same parsed events and its CLI on the file. Ratios are measured in
this run, on this machine. Not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from ag_ui_validate import create_validator

from agui_replay.client import Session

TARGET = 100_000


def _varied_run(rng: random.Random, run: int, t0: int) -> Iterator[dict[str, Any]]:
    run_id = f"run-{run}"
    msg = 0

    def mid() -> str:
        nonlocal msg
        msg += 1
        return f"{run_id}-msg-{msg}"

    state: dict[str, Any] = {"counter": 0, "items": [], "status": "start"}
    yield {"type": "RUN_STARTED", "threadId": "thread-1", "runId": run_id}
    yield {"type": "STATE_SNAPSHOT", "snapshot": orjson.loads(orjson.dumps(state))}
    yield {"type": "STEP_STARTED", "stepName": "plan"}
    block, thought = mid(), mid()
    yield {"type": "REASONING_START", "messageId": block}
    yield {"type": "REASONING_MESSAGE_START", "messageId": thought, "role": "reasoning"}
    for i in range(40):
        yield {"type": "REASONING_MESSAGE_CONTENT", "messageId": thought, "delta": f"idea {i} "}
    yield {"type": "REASONING_MESSAGE_END", "messageId": thought}
    yield {"type": "REASONING_END", "messageId": block}
    yield {"type": "STEP_FINISHED", "stepName": "plan"}

    # A text message and a tool call streaming at the same time, with state deltas beside them.
    text_id, call_id = mid(), f"{run_id}-call-1"
    yield {"type": "TEXT_MESSAGE_START", "messageId": text_id, "role": "assistant"}
    yield {
        "type": "TOOL_CALL_START",
        "toolCallId": call_id,
        "toolCallName": "search",
        "parentMessageId": text_id,
    }
    args = orjson.dumps({"query": "weather " * 30, "limit": 10}).decode()
    pieces = [args[i : i + 4] for i in range(0, len(args), 4)]
    for i in range(300):
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": text_id, "delta": f"w{i} "}
        if i < len(pieces):
            yield {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": pieces[i]}
        if i % 20 == 0:
            state["counter"] += 1
            yield {
                "type": "STATE_DELTA",
                "delta": [{"op": "replace", "path": "/counter", "value": state["counter"]}],
            }
        if i % 50 == 0:
            item = {"id": i, "label": f"item {i}", "score": rng.random()}
            state["items"].append(item)
            yield {
                "type": "STATE_DELTA",
                "delta": [{"op": "add", "path": "/items/-", "value": item}],
            }
    for piece in pieces[300:]:
        yield {"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": piece}
    yield {"type": "TOOL_CALL_END", "toolCallId": call_id}
    yield {"type": "TEXT_MESSAGE_END", "messageId": text_id}
    yield {
        "type": "TOOL_CALL_RESULT",
        "messageId": mid(),
        "toolCallId": call_id,
        "content": "sunny, 21 degrees",
        "role": "tool",
    }

    # Chunked text and a chunked tool call (expanded by the client).
    chunked = mid()
    yield {"type": "TEXT_MESSAGE_CHUNK", "messageId": chunked, "role": "assistant", "delta": "A"}
    for i in range(120):
        yield {"type": "TEXT_MESSAGE_CHUNK", "delta": f" c{i}"}
    chunk_call = f"{run_id}-call-2"
    yield {
        "type": "TOOL_CALL_CHUNK",
        "toolCallId": chunk_call,
        "toolCallName": "save",
        "delta": "[",
    }
    for i in range(60):
        yield {"type": "TOOL_CALL_CHUNK", "delta": f"{i},"}
    yield {"type": "TOOL_CALL_CHUNK", "delta": "0]"}

    activity = mid()
    yield {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": activity,
        "activityType": "progress",
        "content": {"done": 0, "of": 20},
    }
    for i in range(1, 21):
        yield {
            "type": "ACTIVITY_DELTA",
            "messageId": activity,
            "activityType": "progress",
            "patch": [{"op": "replace", "path": "/done", "value": i}],
        }
    yield {"type": "CUSTOM", "name": "acme.metrics", "value": {"tokens": 1234}}
    yield {"type": "RAW", "event": {"provider": "x", "n": run}, "source": "provider"}

    closing = mid()
    yield {"type": "TEXT_MESSAGE_START", "messageId": closing, "role": "assistant"}
    for i in range(250):
        yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": closing, "delta": f"t{i} "}
    yield {"type": "TEXT_MESSAGE_END", "messageId": closing}
    state["status"] = "done"
    yield {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/status", "value": "done"}]}
    yield {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": run_id}


def varied_stream() -> list[dict[str, Any]]:
    rng = random.Random(7)
    events: list[dict[str, Any]] = []
    run = 0
    while len(events) < TARGET:
        run += 1
        events.extend(_varied_run(rng, run, len(events)))
    return _stamp(events)


def long_message_stream() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [
        {"type": "RUN_STARTED", "threadId": "thread-1", "runId": "long"},
        {"type": "TEXT_MESSAGE_START", "messageId": "long-msg-1", "role": "assistant"},
    ]
    events += [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "long-msg-1", "delta": f"token{i} "}
        for i in range(TARGET - 4)
    ]
    events += [
        {"type": "TEXT_MESSAGE_END", "messageId": "long-msg-1"},
        {"type": "RUN_FINISHED", "threadId": "thread-1", "runId": "long"},
    ]
    return _stamp(events)


def _stamp(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Timestamps as real servers send them (ag-ui-validate warns about streams without any).
    base = 1_700_000_000_000
    return [{**e, "timestamp": base + i} for i, e in enumerate(events)]


def best_of(repeat: int, fn: Callable[[], Any]) -> tuple[float, Any]:
    best = float("inf")
    out: Any = None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return best, out


def ours(events: list[dict[str, Any]]) -> Session:
    session = Session()  # client-mode verification on, as by default
    session.apply_all(events)
    session.finish()
    return session


def ours_from_file(path: Path) -> Session:
    session = Session()
    apply = session.apply
    loads = orjson.loads
    with path.open("rb") as handle:
        for line in handle:
            apply(loads(line))
    session.finish()
    return session


def parse_only(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if orjson.loads(line))


def validator(events: list[dict[str, Any]]) -> Counter[str]:
    v = create_validator()
    counts: Counter[str] = Counter()
    for event in events:
        for d in v.feed(event):
            counts[f"{d.severity} {d.rule}"] += 1
    for d in v.finalize():
        counts[f"{d.severity} {d.rule}"] += 1
    return counts


def validator_cli(path: Path) -> tuple[float, int] | None:
    exe = shutil.which("ag-ui-validate") or str(Path(sys.executable).with_name("ag-ui-validate"))
    if not Path(exe).exists():
        return None
    start = time.perf_counter()
    done = subprocess.run([exe, str(path), "--json"], capture_output=True, check=False)
    return time.perf_counter() - start, done.returncode


def python_startup() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import ag_ui_validate"], check=True)
    return time.perf_counter() - start


def bench(name: str, events: list[dict[str, Any]], folder: Path) -> None:
    path = folder / f"{name}.jsonl"
    with path.open("wb") as handle:
        for event in events:
            handle.write(orjson.dumps(event) + b"\n")
    n = len(events)
    kinds = len({e["type"] for e in events})
    print(f"\n== {name}: {n:,} events, {kinds} event types, {path.stat().st_size / 1e6:.1f} MB")

    t_ours, session = best_of(3, lambda: ours(events))
    assert not session.errors, session.errors
    t_file, _ = best_of(3, lambda: ours_from_file(path))
    t_parse, _ = best_of(3, lambda: parse_only(path))
    t_val, diagnostics = best_of(2, lambda: validator(events))
    errors = {k: v for k, v in diagnostics.items() if k.startswith("error")}

    content = sum(len(m.get("content") or "") for m in session.messages)
    print(f"  session: {len(session.messages)} messages, {content:,} chars of content")
    print(f"  ag-ui-validate diagnostics: {dict(diagnostics) or 'none'}")
    if errors:
        print("  WARNING: ag-ui-validate reports errors on this stream")
    print(f"  {'':38} {'seconds':>8} {'events/s':>12}")
    rows = [
        ("agui_replay verify+apply (parsed)", t_ours),
        ("agui_replay read+parse+verify+apply", t_file),
        ("  of which read+orjson.loads alone", t_parse),
        ("ag-ui-validate Validator.feed (parsed)", t_val),
    ]
    for label, seconds in rows:
        print(f"  {label:38} {seconds:8.3f} {n / seconds:12,.0f}")
    print(f"  ratio, parsed events: agui_replay is {t_val / t_ours:.1f}x ag-ui-validate's speed")
    cli = validator_cli(path)
    if cli is not None:
        seconds, code = cli
        startup = python_startup()
        print(
            f"  ag-ui-validate CLI on the file: {seconds:.3f} s (exit {code}; includes "
            f"~{startup:.2f} s interpreter start), {n / seconds:,.0f} events/s; "
            f"agui_replay from the file is {seconds / t_file:.1f}x faster"
        )


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="agui-bench-"))
    try:
        print(f"python {sys.version.split()[0]}, files in {folder}")
        bench("varied", varied_stream(), folder)
        bench("long-message", long_message_stream(), folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
