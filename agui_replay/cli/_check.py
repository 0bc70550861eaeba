"""``agui-replay verify``, ``diff`` and ``state``: check a recording, compare two, fold one."""

from __future__ import annotations

import argparse
import io
import json
from contextlib import closing
from pathlib import Path
from typing import Any, TextIO

from agui_replay._progress import Progress
from agui_replay.cassette import (
    Recording,
    initial_state,
    load_recording,
    state_at,
    verify_recording,
)
from agui_replay.cli._common import EXIT_DIFFERENT, EXIT_OK, _select_runs, _UsageError
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
    from agui_replay.assertions import explain_stream_diff
    from agui_replay.normalize import normalize_events

    left, right = load_recording(args.a), load_recording(args.b)
    a_events, b_events = left.events, right.events
    if not args.raw:
        a_events, b_events = normalize_events(a_events), normalize_events(b_events)
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
    a_state, b_state = state_at(left), state_at(right)
    ops = state_diff(a_state, b_state)
    if ops:
        out.write(f"final state differs: {_describe_ops(ops, None)}\n")
    else:
        out.write("final state: same\n")
    return EXIT_DIFFERENT


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
