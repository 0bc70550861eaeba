"""``agui-replay review``: accept or reject the pending changes a replay kept.

A replay whose provider requests all matched but whose events changed keeps what a refresh
would write beside the cassette (``NAME.json.pending``). This command shows each one as the
failure showed it (the aligned diff of each changed run) and asks what to do: accepting writes
the kept text over the cassette (the interactions byte for byte as they were), rejecting
deletes the pending file, skipping leaves it. Answers come from standard input line by line,
so it works on a terminal and piped (``yes a | agui-replay review``); end of input quits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from agui_replay._age import age_days, describe_age
from agui_replay._files import PENDING_SUFFIX, atomic_write_text, pending_path
from agui_replay.assertions import explain_stream_diff
from agui_replay.cassette import load_cassette, loads_cassette
from agui_replay.cli._common import EXIT_DIFFERENT, EXIT_OK, _UsageError
from agui_replay.errors import CassetteError

_ANSWERS = {"a": "accept", "r": "reject", "s": "skip", "q": "quit"}


@dataclass
class _Pending:
    path: Path
    cassette: Path
    digest: str
    text: str


def _pending_files(root: Path) -> list[Path]:
    if root.is_file():
        if root.name.endswith(PENDING_SUFFIX):
            return [root]
        beside = pending_path(root)
        return [beside] if beside.is_file() else []
    if not root.is_dir():
        raise _UsageError(
            f"{root} does not exist: give the cassette folder (default: cassettes/) or a "
            "cassette or .pending file"
        )
    return sorted(p for p in root.rglob("*" + PENDING_SUFFIX) if p.is_file())


def _read(path: Path) -> _Pending:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CassetteError(f"{path}: not a readable pending change ({exc}); delete it") from None
    if not (
        isinstance(doc, dict)
        and doc.get("agui_replay_pending") == 1
        and isinstance(doc.get("cassette_sha256"), str)
        and isinstance(doc.get("cassette_text"), str)
    ):
        raise CassetteError(
            f"{path}: not a pending change of this agui-replay version (it needs "
            "agui_replay_pending 1, cassette_sha256 and cassette_text); delete it and replay "
            "the test again"
        )
    cassette = path.with_name(path.name[: -len(PENDING_SUFFIX)])
    return _Pending(path, cassette, doc["cassette_sha256"], doc["cassette_text"])


def _stale_reason(pending: _Pending) -> str | None:
    """Why ``pending`` cannot be accepted (its cassette changed or went), or ``None``."""
    try:
        now = hashlib.sha256(pending.cassette.read_bytes()).hexdigest()
    except OSError:
        return f"its cassette {pending.cassette} is gone"
    if now != pending.digest:
        return (
            f"its cassette {pending.cassette} changed since the replay that kept it (re-recorded, "
            "refreshed or edited)"
        )
    return None


def _diff_lines(pending: _Pending) -> list[str]:
    old = load_cassette(pending.cassette, validate="shape")
    new = loads_cassette(pending.text, validate="shape", source=str(pending.path))
    lines: list[str] = []
    for n, (before, after) in enumerate(zip(old.runs, new.runs, strict=False)):
        diff = explain_stream_diff(
            before.events, after.events, left_name="recorded", right_name="new"
        )
        if diff:
            lines.append(f"run #{n}: " + diff[0])
            lines += [f"  {line}" for line in diff[1:]]
    return lines or ["(the events equal the cassette's: accepting changes nothing else)"]


def _ask(stdin: TextIO, out: TextIO) -> str:
    while True:
        out.write("accept / reject / skip / quit [a/r/s/q]? ")
        out.flush()
        line = stdin.readline()
        if not line:  # end of input
            out.write("\n")
            return "quit"
        answer = line.strip().lower()[:1]
        if answer in _ANSWERS:
            return _ANSWERS[answer]
        out.write(f"unknown answer {line.strip()!r}: a accepts, r rejects, s skips, q quits\n")


def _review(args: argparse.Namespace, out: TextIO) -> int:
    if args.accept_all and args.reject_all:
        raise _UsageError("--accept-all and --reject-all exclude each other: choose one")
    root = Path(args.path or "cassettes")
    found = _pending_files(root)
    if not found:
        out.write(f"nothing pending under {root}\n")
        return EXIT_OK
    stdin: TextIO = args.stdin if getattr(args, "stdin", None) is not None else sys.stdin
    done: dict[str, int] = {"accepted": 0, "rejected": 0, "skipped": 0, "refused": 0}
    for number, path in enumerate(found, 1):
        pending = _read(path)
        out.write(f"\n[{number}/{len(found)}] {pending.cassette}\n")
        stale = _stale_reason(pending)
        if stale is not None and not args.reject_all:
            out.write(
                f"refused: {stale}; this pending change may no longer apply. Replay the test "
                f"again to keep a new one, or delete {pending.path}.\n"
            )
            done["refused"] += 1
            continue
        if stale is None:
            out.write("\n".join(_diff_lines(pending)) + "\n")
        answer = "accept" if args.accept_all else "reject" if args.reject_all else None
        if answer is None:
            answer = _ask(stdin, out)
        if answer == "quit":
            break
        if answer == "accept":
            atomic_write_text(pending.cassette, [pending.text])
            pending.path.unlink()
            done["accepted"] += 1
            out.write(f"accepted: {pending.cassette} holds the new events\n")
        elif answer == "reject":
            pending.path.unlink()
            done["rejected"] += 1
            out.write(f"rejected: {pending.path} deleted\n")
        else:
            done["skipped"] += 1
    left = len(_pending_files(root))
    out.write(
        "\n" + ", ".join(f"{n} {what}" for what, n in done.items()) + f"; {left} still pending\n"
    )
    return EXIT_DIFFERENT if done["refused"] else EXIT_OK


def cassette_age(path: Any) -> str:
    """``"recorded 2024-05-01T10:00:00Z (12 days ago)"`` for a cassette file, or ``""``."""
    try:
        recorded_at = load_cassette(path, validate="shape").recorded_at
    except (OSError, ValueError, CassetteError):
        return ""
    days = age_days(recorded_at)
    if days is None:
        return "  no recorded date: no age (never stale)\n"
    return f"  recorded {recorded_at} ({describe_age(days)} ago)\n"
