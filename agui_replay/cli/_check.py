"""``agui-replay verify``, ``diff`` and ``state``: check a recording, compare two, fold one."""

from __future__ import annotations

import argparse
import io
import json
from contextlib import closing
from pathlib import Path
from typing import Any, TextIO

from agui_replay.cassette import (
    Recording,
    initial_state,
    load_recording,
    state_at,
    verify_recording,
)
from agui_replay.cli._common import EXIT_DIFFERENT, EXIT_OK, _select_runs, _UsageError
from agui_replay.cli._progress import Progress
from agui_replay.cli._style import _describe_ops, _Style, _want_color
from agui_replay.errors import ProtocolViolation
from agui_replay.patch import diff as state_diff

# --- verify ---------------------------------------------------------------------------------------


def _violation_dict(recording: Recording, error: ProtocolViolation) -> dict[str, Any]:
    line = recording.line_of(error.index) if error.index is not None else None
    return {
        "rule": error.rule,
        "event_type": error.event_type,
        "index": error.index,
        "ids": list(error.ids),
        "detail": error.detail,
        "hint": error.hint,
        "message": str(error),
        "line": line,
    }


def _verify_paths(given: list[str]) -> list[str]:
    """The files to verify: each file as given, each folder's cassettes (``*.json``) sorted."""
    paths: list[str] = []
    for name in given:
        folder = Path(name)
        if folder.is_dir():
            found = sorted(str(p) for p in folder.rglob("*.json") if p.is_file())
            if not found:
                raise _UsageError(f"{name}: a folder with no cassette (*.json) in it")
            paths.extend(found)
        else:
            paths.append(name)
    return paths


def _verify(args: argparse.Namespace, out: TextIO) -> int:
    files = args.file if isinstance(args.file, list) else [args.file]
    paths = _verify_paths(files)
    if len(paths) == 1 and not Path(files[0]).is_dir():
        return _verify_one(args, paths[0], out)
    worst = EXIT_OK
    results: list[str] = []
    for path in paths:
        buffer = io.StringIO()
        code = _verify_one(args, path, buffer)
        worst = max(worst, code)
        if args.json:
            results.append(buffer.getvalue().strip())
        else:
            out.write(buffer.getvalue() if code != EXIT_OK else f"{path}: {buffer.getvalue()}")
    if args.json:
        out.write("[\n" + ",\n".join(results) + "\n]\n")
    elif worst == EXIT_OK:
        out.write(f"all {len(paths)} file(s) follow the AG-UI ordering rules ({args.mode} mode)\n")
    return worst


def _verify_one(args: argparse.Namespace, path: str, out: TextIO) -> int:
    recording = load_recording(path)
    with closing(Progress("verify", len(recording.events))) as progress:
        violations, problems = verify_recording(
            recording, args.mode, limit=args.max_errors, progress=progress
        )
    ok = not violations and not problems
    if args.json:
        result = {
            "file": str(recording.path),
            "mode": args.mode,
            "ok": ok,
            "events": len(recording.events),
            "runs": len(recording.runs),
            "violations": [_violation_dict(recording, v) for v in violations],
            "invalid_events": [
                {"index": p.index, "line": recording.line_of(p.index or 0), "message": str(p)}
                for p in problems
            ],
        }
        out.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK if ok else EXIT_DIFFERENT
    color = _Style(_want_color(args, out))
    for violation in violations:
        out.write(f"{recording.where(violation.index)}: {color.red(str(violation))}\n")
        if violation.hint:
            out.write(f"  fix: {violation.hint}\n")
    for problem in problems:
        out.write(f"{recording.where(problem.index)}: {color.red(str(problem))}\n")
    if ok:
        out.write(
            color.green("ok")
            + f": {len(recording.events)} event(s) in {len(recording.runs)} run(s) follow the "
            f"AG-UI ordering rules ({args.mode} mode)\n"
        )
        return EXIT_OK
    count = len(violations) + len(problems)
    out.write(f"{count} problem(s) in {recording.path} ({args.mode} mode)\n")
    return EXIT_DIFFERENT


# --- diff -----------------------------------------------------------------------------------------


def _diff(args: argparse.Namespace, out: TextIO) -> int:
    if getattr(args, "interactions", False):
        from agui_replay.cli._exchanges import diff_interactions

        return diff_interactions(args, out)
    from agui_replay.assertions import explain_stream_diff

    left, right = load_recording(args.a), load_recording(args.b)
    a_events, b_events = left.events, right.events
    a_state, b_state = state_at(left), state_at(right)
    if not args.raw:
        a_events, b_events, a_state, b_state = _normalize_pair(left, right, a_state, b_state)
    lines = explain_stream_diff(
        a_events, b_events, context=args.context, left_name=str(args.a), right_name=str(args.b)
    )
    color = _Style(_want_color(args, out))
    how = "raw" if args.raw else "ids and timestamps normalized"
    if not lines:
        out.write(color.green("same") + f": {len(a_events)} event(s) ({how})\n")
        return EXIT_OK
    out.write(color.red(lines[0]) + color.dim(f"  ({how})") + "\n")
    for line in lines[1:]:
        out.write(line + "\n")
    ops = state_diff(a_state, b_state)
    if ops:
        out.write(f"final state differs: {_describe_ops(ops, None)}\n")
    else:
        out.write("final state: same\n")
    return EXIT_DIFFERENT


def _input_ids(recording: Recording) -> set[str]:
    """The message and tool-call ids a cassette's recorded inputs carry (the test chose them)."""
    ids: set[str] = set()
    for run in recording.runs:
        messages = (run.input or {}).get("messages")
        for message in messages if isinstance(messages, list) else ():
            _add_message_ids(ids, message)
    return ids


def _add_message_ids(ids: set[str], message: Any) -> None:
    """Adds a message's id, tool call reference and tool call ids to ``ids``."""
    if isinstance(message, dict):
        ids.update(v for k in ("id", "toolCallId") if isinstance(v := message.get(k), str))
        for call in message.get("toolCalls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                ids.add(call["id"])


def _normalize_pair(
    left: Recording, right: Recording, a_state: Any, b_state: Any
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Any, Any]:
    """Both streams normalized onto one set of names, with their final states.

    Each side is normalized (ids already of the normalized form ``run-1-msg-1``, and the ids
    the recorded inputs carry, stay as they are: fixed points), then the names the right side
    minted are mapped onto the left side's names at the same places, so a raw capture and the
    cassette of the same run compare equal even where the cassette's fixed points moved the
    numbering (a normalized id a snapshot renamed, an input id).
    """
    from agui_replay.normalize import normalize_stream

    keep = _input_ids(left) | _input_ids(right)
    a = normalize_stream(left.events, preserve=keep, keep_raw=False)
    b = normalize_stream(right.events, preserve=keep, keep_raw=False)
    minted = {
        new for kind, names in b.id_map.items() if kind != "payload" for new in names.values()
    }
    named = keep | _protocol_ids(a.events)
    named |= {
        new for kind, names in a.id_map.items() if kind != "payload" for new in names.values()
    }
    onto: dict[str, str] = {}
    taken: set[str] = set()

    def align(x: Any, y: Any) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for key in x.keys() & y.keys():
                align(x[key], y[key])
        elif isinstance(x, list) and isinstance(y, list):
            for u, v in zip(x, y, strict=False):
                align(u, v)
        elif isinstance(x, str) and x == y and x in named and y not in onto:
            # a name both sides hold at one place stays: nothing else may be mapped onto it
            onto[y] = x
            taken.add(x)
        elif (
            isinstance(x, str)
            and isinstance(y, str)
            and x != y
            and y in minted
            and y not in onto
            and x in named
            and x not in taken
        ):
            onto[y] = x
            taken.add(x)

    for x, y in zip(a.events, b.events, strict=False):
        if x.get("type") == y.get("type"):
            align(x, y)
    b_events = [_renamed(event, onto) for event in b.events]
    a_names = _flat_map(a.id_map)
    b_names = {old: onto.get(new, new) for old, new in _flat_map(b.id_map).items()}
    return a.events, b_events, _renamed(a_state, a_names), _renamed(b_state, b_names)


_ID_FIELDS = ("messageId", "parentMessageId", "toolCallId", "parentToolCallId")


def _protocol_ids(events: list[dict[str, Any]]) -> set[str]:
    """The ids in a stream's protocol fields (messages and tool calls, snapshots included)."""
    ids: set[str] = set()
    for event in events:
        ids.update(v for k in _ID_FIELDS if isinstance(v := event.get(k), str))
        for message in (
            event.get("messages") or () if event.get("type") == "MESSAGES_SNAPSHOT" else ()
        ):
            _add_message_ids(ids, message)
    return ids


def _flat_map(id_map: dict[str, dict[str, str]]) -> dict[str, str]:
    return {old: new for names in id_map.values() for old, new in names.items()}


def _renamed(value: Any, names: dict[str, str]) -> Any:
    """A copy of JSON-like ``value`` with each string that is a key of ``names`` replaced."""
    if not names:
        return value
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    if isinstance(value, str):
        return names.get(value, value)
    return value


# --- state ----------------------------------------------------------------------------------------


def _state(args: argparse.Namespace, out: TextIO) -> int:
    recording = load_recording(args.file)
    total = len(recording.events)
    stop: int | None = None
    if args.at is not None:
        at = args.at + total if args.at < 0 else args.at
        if not 0 <= at < total:
            raise _UsageError(
                f"--at {args.at} is out of range: {recording.path} has {total} event(s), "
                f"#0–#{total - 1} (negative counts from the end)"
            )
        stop = at
    elif args.run is not None:
        run = _select_runs(recording, args.run)[0]
        stop = run.end - 1
    progress = Progress("state", total)
    if stop is not None and stop < 0:  # run 0 holds no event
        state = initial_state(recording)
    else:
        state = state_at(recording, stop, on_step=progress.tick)
    progress.close()
    indent = None if args.compact else 2
    out.write(json.dumps(state, indent=indent, ensure_ascii=False) + "\n")
    return EXIT_OK
