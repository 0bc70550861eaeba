"""The ``agui-replay view`` page: one self-contained HTML file showing a recorded stream.

The page holds the events as JSON and a little script (no network, nothing to install): a
timeline of events, the messages as a chat, and the client state at the selected event with the
changed paths highlighted. ``#event=N`` in the URL selects event N.

Python does the AG-UI work once, with the same client :class:`~agui_replay.client.Session` the
tests use, so the page cannot drift from it: for every event that changes the state it stores
the RFC 6902 operations from the previous state (the page replays them, and highlights their
paths), and for every message the events at which its text grew.

>>> from agui_replay.cassette import load_recording   # doctest: +SKIP
>>> html = render_html(view_data(load_recording("cassette.json"), selected=12))  # doctest: +SKIP
"""

from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson

from agui_replay import __version__
from agui_replay._text import clip
from agui_replay.errors import PatchError
from agui_replay.events import WireEvent, event_type
from agui_replay.patch import diff

if TYPE_CHECKING:
    from agui_replay.cassette import Recording

__all__ = ["render_html", "summarize_event", "view_data"]

_SUMMARY_WIDTH = 90
_STREAMING = frozenset({"TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TOOL_CALL_ARGS"})
_NOT_MESSAGES = frozenset(
    {
        "STATE_SNAPSHOT",
        "STATE_DELTA",
        "STEP_STARTED",
        "STEP_FINISHED",
        "CUSTOM",
        "RAW",
        "RUN_FINISHED",
        "RUN_ERROR",
    }
)


def _compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def _fit(text: str) -> str:
    return clip(text, _SUMMARY_WIDTH)


def summarize_event(event: WireEvent) -> str:
    """A one-line description of an event for the timeline (its type shown beside it)."""
    kind = event_type(event)
    if kind in ("TOOL_CALL_ARGS", "TOOL_CALL_CHUNK"):
        return _fit(str(event.get("delta", "")))  # already JSON text: quoting it again hurts
    if kind in ("TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT", "TEXT_MESSAGE_CHUNK"):
        return _fit(_compact(event.get("delta", "")))
    if kind == "REASONING_MESSAGE_CHUNK":
        return _fit(_compact(event.get("delta", "")))
    if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
        return f"{event.get('role', 'assistant')} {event.get('messageId', '')}"
    if kind == "TOOL_CALL_START":
        return f"{event.get('toolCallName', '')} {event.get('toolCallId', '')}"
    if kind == "TOOL_CALL_RESULT":
        content = event.get("content")
        text = content if isinstance(content, str) else _compact(content)
        return _fit(f"{event.get('toolCallId', '')} → {text}")
    if kind == "STATE_SNAPSHOT":
        return _fit(_compact(event.get("snapshot")))
    if kind in ("STATE_DELTA", "ACTIVITY_DELTA"):
        ops = event.get("delta" if kind == "STATE_DELTA" else "patch") or []
        paths = ", ".join(
            f"{op.get('op')} {op.get('path')}" for op in ops[:3] if isinstance(op, dict)
        )
        return _fit(paths + (f" (+{len(ops) - 3})" if len(ops) > 3 else ""))
    if kind in ("STEP_STARTED", "STEP_FINISHED"):
        return str(event.get("stepName", ""))
    if kind == "RUN_STARTED":
        return f"thread {event.get('threadId', '')} · run {event.get('runId', '')}"
    if kind == "RUN_FINISHED":
        outcome = event.get("outcome")
        if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
            ids = [str(i.get("id")) for i in outcome.get("interrupts") or [] if isinstance(i, dict)]
            return "interrupt: " + ", ".join(ids)
        return str(outcome.get("type", "success")) if isinstance(outcome, dict) else "success"
    if kind == "RUN_ERROR":
        code = f"[{event['code']}] " if event.get("code") else ""
        return _fit(code + str(event.get("message", "")))
    if kind == "MESSAGES_SNAPSHOT":
        return f"{len(event.get('messages') or [])} message(s)"
    if kind == "CUSTOM":
        return _fit(f"{event.get('name', '')} {_compact(event.get('value'))}")
    ident = event.get("messageId") or event.get("toolCallId") or ""
    return str(ident)


class _Messages:
    """Every message the client held, in order, with the events at which its text grew."""

    def __init__(self) -> None:
        self.entries: dict[str, dict[str, Any]] = {}
        self.latest: dict[str, dict[str, Any]] = {}
        self.owner_of_call: dict[str, str] = {}

    def scan(self, messages: list[dict[str, Any]], index: int) -> None:
        for message in messages:
            self.note(message, index)

    def note(self, message: dict[str, Any], index: int) -> None:
        ident = message.get("id")
        if not isinstance(ident, str):
            return
        entry = self.entries.get(ident)
        if entry is None:
            entry = {"id": ident, "first": index, "marks": [], "calls": {}, "_len": -1}
            self.entries[ident] = entry
        self.latest[ident] = message
        content = message.get("content")
        length = len(content) if isinstance(content, str) else (0 if content is None else 1)
        if length != entry["_len"]:
            entry["marks"].append([index, length])
            entry["_len"] = length
        for call in message.get("toolCalls") or []:
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                continue
            self.owner_of_call[call["id"]] = ident
            record = entry["calls"].setdefault(
                call["id"], {"first": index, "marks": [], "_len": -1}
            )
            function = call.get("function") or {}
            args = function.get("arguments") if isinstance(function, dict) else None
            size = len(args) if isinstance(args, str) else 0
            if size != record["_len"]:
                record["marks"].append([index, size])
                record["_len"] = size

    def result(self) -> list[dict[str, Any]]:
        out = []
        for ident, entry in self.entries.items():
            calls = {
                k: {"first": v["first"], "marks": v["marks"]} for k, v in entry["calls"].items()
            }
            out.append(
                {
                    "id": ident,
                    "first": entry["first"],
                    "marks": entry["marks"],
                    "calls": calls,
                    # A JSON round trip: the session's dicts are live and may change later.
                    "message": orjson.loads(orjson.dumps(self.latest[ident])),
                }
            )
        return out


def view_data(
    recording: Recording,
    *,
    selected: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    verify_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Everything the page shows, as one JSON-ready dict.

    ``progress(done, total)`` is called for each event as the events are walked, and
    ``verify_progress(done, total)`` as they are then verified; nothing is printed.
    """
    from agui_replay.cassette import initial_state, verify_recording, walk

    state_ops: list[list[Any]] = []
    errors: list[list[Any]] = []
    messages = _Messages()
    start = initial_state(recording)
    last: Any = start
    run_starts = {run.start for run in recording.runs}
    seen_errors = 0
    session_id = 0
    total = len(recording.events)
    for step in walk(recording):
        session = step.session
        if id(session) != session_id:
            session_id, seen_errors = id(session), 0
        index, kind = step.index, event_type(step.event)
        if session.state is not last:
            try:
                ops = diff(last, session.state)
            except PatchError:
                ops = [{"op": "replace", "path": "", "value": session.state}]
            if ops:
                state_ops.append([index, ops])
            last = session.state
        if index in run_starts or kind not in _NOT_MESSAGES:
            if kind in _STREAMING:
                _note_streamed(messages, session, step.event, index)
            else:
                messages.scan(session.messages, index)
        for error in session.errors[seen_errors:]:
            errors.append([index, str(error)])
        seen_errors = len(session.errors)
        if progress is not None:
            progress(index + 1, total)

    violations, problems = verify_recording(
        recording, "client", limit=200, progress=verify_progress
    )
    for violation in violations:
        errors.append([violation.index, str(violation)])
    for problem in problems:
        errors.append([problem.index, str(problem)])

    runs = []
    for run in recording.runs:
        first = run.events[0] if run.events else {}
        runs.append(
            {
                "index": run.index,
                "start": run.start,
                "end": run.end,
                "name": run.name,
                "threadId": first.get("threadId"),
                "runId": first.get("runId"),
            }
        )
    return {
        "file": str(recording.path),
        "kind": recording.kind,
        "version": __version__,
        "events": recording.events,
        "summaries": [summarize_event(e) for e in recording.events],
        "lines": recording.known_lines(),
        "runs": runs,
        "initialState": start,
        "stateOps": state_ops,
        "messages": messages.result(),
        "errors": errors,
        "valid": not violations and not problems,
        "selected": selected,
    }


def _note_streamed(messages: _Messages, session: Any, event: WireEvent, index: int) -> None:
    """Only the one message a streaming event grows, not the whole list (long streams)."""
    if event_type(event) == "TOOL_CALL_ARGS":
        owner = messages.owner_of_call.get(str(event.get("toolCallId")))
    else:
        owner = event.get("messageId") if isinstance(event.get("messageId"), str) else None
    message = session.message(owner) if owner is not None else None
    if message is None:
        messages.scan(session.messages, index)
    else:
        messages.note(message, index)


def _asset(name: str) -> str:
    return (resources.files("agui_replay.cli") / "viewer_assets" / name).read_text("utf-8")


def _script_json(data: Any) -> str:
    """JSON safe inside a ``<script>`` element (no ``</script>``, no ``<!--``)."""
    text = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS).decode()
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def render_html(data: dict[str, Any]) -> str:
    """The whole page: template, CSS and script inline, the data embedded as JSON."""
    page = _asset("viewer.html")
    replacements = {
        "{{TITLE}}": html_lib.escape(f"{data.get('file', 'stream')} · agui-replay view"),
        "{{CSS}}": _asset("viewer.css"),
        "{{JS}}": _asset("viewer.js").replace("</script", "<\\/script"),
        "{{DATA}}": _script_json(data),
    }
    # One pass over the template: inserted text (a file name, the data) is never rescanned.
    return re.sub(r"\{\{[A-Z]+\}\}", lambda m: replacements.get(m.group(0), m.group(0)), page)
