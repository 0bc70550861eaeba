"""What a replayed run is judged on: its stream against the recorded one, its provider requests
against the recorded ones, and the failure message that says which changed and what to do."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from agui_replay._text import clip
from agui_replay.assertions import explain_stream_diff
from agui_replay.events import WireEvent
from agui_replay.recording._modes import ReplayMismatchError
from agui_replay.recording._runs import canonical
from agui_replay.scrub import scrub

if TYPE_CHECKING:
    from agui_replay.providers import FakeProvider
    from agui_replay.recording._runs import PendingRun, RunRecord

__all__ = [
    "Mismatch",
    "check_replayed",
    "compared",
    "converted_mismatch",
    "matches_recording",
    "short",
]

_ECHOES = ("rawEvent",)
"""Fields of any event that carry the framework's own event as it was (``BaseEvent.rawEvent``)."""


def compared(events: list[WireEvent], *, raw: bool = False) -> list[WireEvent]:
    """What a replay compares of a stream: every event, but (unless ``raw``) without the
    framework's own payloads, which repeat the model's input and output in the framework's
    shape: a RAW event's ``event`` and any event's ``rawEvent``. A RAW event still counts
    where it stands, with its ``source``."""
    if raw:
        return events
    shown: list[WireEvent] = []
    for event in events:
        if event.get("type") == "RAW" or any(k in event for k in _ECHOES):
            event = {
                k: v
                for k, v in event.items()
                if k not in _ECHOES and not (k == "event" and event.get("type") == "RAW")
            }
        shown.append(event)
    return shown


@dataclass
class Mismatch:
    """A replayed run that differs from its recording."""

    error: ReplayMismatchError
    events_only: bool
    """Every provider request matched: only the agent's own events changed."""


def matches_recording(
    pending: PendingRun, record: RunRecord, secrets: list[str], *, raw: bool = False
) -> bool:
    """Whether the new stream equals the recorded one (canonical bytes of :func:`compared`).
    The recording is scrubbed, so on a difference a key-shaped string the agent emits is
    scrubbed too (and :attr:`RunRecord.normalized` keeps the scrubbed events). A stream equal
    to the recording only once the framework's payloads are left out keeps the recorded
    events (so a snapshot of it reads as recorded)."""
    same = pending.same or canonical(compared(record.normalized, raw=raw)) == pending.expected
    if not same:
        record.normalized = scrub(record.normalized, secrets=secrets)
        same = canonical(compared(record.normalized, raw=raw)) == pending.expected
    recorded = pending.recorded
    if same and not raw and recorded is not None and recorded.events != record.normalized:
        record.normalized = orjson.loads(orjson.dumps(recorded.events))
    return same


def check_replayed(
    where: str,
    pending: PendingRun,
    record: RunRecord,
    fake: FakeProvider,
    same: bool,
    *,
    record_command: str,
    kept_in: str | None,
    raw: bool = False,
) -> Mismatch | None:
    """The mismatch of a replayed run (``None``: it replays as recorded). ``same`` says the
    stream matched (:func:`matches_recording`); ``kept_in`` is where a change of the events
    alone is kept for review (``None``: not kept)."""
    assert pending.recorded is not None
    problems: list[str] = []
    if fake.errors:
        problems.append(
            "the agent's provider requests differ from the recorded ones:\n"
            + "\n".join(f"  {line}" for e in fake.errors for line in str(e).splitlines())
        )
    if not same:
        lines = explain_stream_diff(
            compared(pending.recorded.events, raw=raw),
            compared(record.normalized, raw=raw),
            left_name="recorded",
            right_name="replayed",
        )
        problems.append("the agent's stream differs from the recording: " + "\n".join(lines))
    if fake.unserved and not fake.errors:
        problems.append(
            f"the agent made {len(fake.requests)} provider request(s); the recording has "
            f"{len(fake.turns)}: never requested: " + "; ".join(fake.unserved)
        )
    if not problems:
        return None
    # the recording reached the provider, this replay never did: the agent failed first
    never_reached = bool(fake.turns) and not fake.requests
    failed_early = early_run_error(record.events) if never_reached else None
    if failed_early is not None:
        return Mismatch(
            ReplayMismatchError(
                f"{where}: run #{pending.index}: the agent failed before reaching its "
                f"provider: it made no provider request (the recording has {len(fake.turns)}) "
                f"and ended in RUN_ERROR: {failed_early}\nThis is not a change of the "
                "recording: look at what the agent does before its first model call (a "
                "variable or file it reads, a client it builds, a tool it calls)."
            ),
            events_only=False,
        )
    header = f"{where}: run #{pending.index} does not replay as recorded"
    footer = f"If the change is intended, re-record with `{record_command}`."
    events_only = not fake.errors and not fake.unserved
    if events_only:
        # every provider request matched: only the agent's own events changed, which a
        # refresh stores offline (no key, no network, no cost)
        refresh = record_command.replace("--agui-record", "--agui-refresh")
        footer = (
            "Every provider request matched the recording: only the agent's events "
            "changed. If the change is intended, store the new events offline with "
            f"`{refresh}` (no API key, no network; the recorded interactions are kept)."
        )
        if kept_in is not None:
            footer += (
                f"\nThe new events are kept in {kept_in}: review and "
                "accept them with `agui-replay review`."
            )
    return Mismatch(ReplayMismatchError("\n".join([header, *problems, footer])), events_only)


def converted_mismatch(
    where: str,
    index: int,
    mismatches: list[str],
    failure: BaseException | None,
    *,
    record_command: str,
) -> ReplayMismatchError:
    """The error of run ``index`` whose stand-ins (the provider's, the tape's) answered a
    request with a mismatch, which the agent or its framework then turned into an error of
    its own (``failure``: an exception, an ASGI app's 500; ``None``: a ``RUN_ERROR``): the
    mismatch comes first, as the cause, with the command to re-record."""
    shown = "\n".join(f"  {line}" for text in mismatches for line in text.splitlines())
    lines = [
        f"{where}: run #{index} does not replay as recorded: a request differs from the "
        f"recorded ones:",
        shown,
    ]
    if failure is not None:
        said = " ".join(str(failure).split())
        lines.append(
            f"The agent failed on the stand-in's answer to it ({type(failure).__name__}: "
            f"{clip(said, 200)}); that failure is the mismatch's, not the agent's."
        )
    lines.append(f"If the change is intended, re-record with `{record_command}`.")
    return ReplayMismatchError("\n".join(lines))


def early_run_error(events: list[WireEvent]) -> str | None:
    """The message of the RUN_ERROR the stream ended in (``None``: it did not)."""
    if not events or events[-1].get("type") != "RUN_ERROR":
        return None
    last = events[-1]
    message = str(last.get("message") or "(no message)")
    code = last.get("code")
    return f"{message} (code {code})" if code else message


def short(value: Any) -> str:
    """A value of a difference, on one short line."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # json_diff's <missing> marker (a field only one side has)
        text = repr(value)
    return clip(text, 80)
