"""The ``agui-replay view`` page: one self-contained HTML file showing a recorded stream.

The page holds the events as JSON and a little script (no network, nothing to install): a
timeline of events, the messages as a chat, and the client state at the selected event with the
changed paths highlighted. ``#event=N`` in the URL selects event N.

Python does the AG-UI work once, with the same client :class:`~agui_replay.client.Session` the
tests use, so the page cannot drift from it: for every event that changes the state it stores
the RFC 6902 operations from the previous state (the page replays them, and highlights their
paths), for every message the events at which its text grew, and at each event where it changed
the list of messages the client held (so the chat is the client's list, snapshots included).

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
from agui_replay.cli._style import _raw_parts
from agui_replay.errors import PatchError
from agui_replay.events import WireEvent, event_type
from agui_replay.patch import diff

if TYPE_CHECKING:
    from agui_replay.cassette import RecordedRun, Recording

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
    if kind == "RAW":
        label, rest = _raw_parts(event)
        source = f"[{event['source']}] " if event.get("source") else ""
        return _fit(f"{source}{label} {_compact(rest)}".strip())
    ident = event.get("messageId") or event.get("toolCallId") or ""
    return str(ident)


class _Messages:
    """Every message the client held, in order, with the events at which its text grew.

    A message is kept as *versions*: a version lives while the message only grows (its text and
    tool-call arguments get longer); when an event replaces it otherwise (a
    ``MESSAGES_SNAPSHOT`` rewriting it) a new version starts. ``order`` records, at each event
    where it changed, which versions the client held and in which order, so the page shows
    exactly the client's message list at any event (a snapshot that drops a message drops it).
    """

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.current: dict[str, int] = {}  # message id -> index of its live version
        self.latest: dict[int, dict[str, Any]] = {}
        self.owner_of_call: dict[str, str] = {}
        self.order: list[list[Any]] = []
        self._held: list[int] | None = None

    def scan(self, messages: list[dict[str, Any]], index: int) -> None:
        held = [key for key in (self.note(m, index) for m in messages) if key is not None]
        if held != self._held:
            self.order.append([index, held])
            self._held = held

    def note(self, message: dict[str, Any], index: int) -> int | None:
        ident = message.get("id")
        if not isinstance(ident, str):
            return None
        key = self.current.get(ident)
        if key is None or not _grows(self.latest[key], message):
            key = len(self.entries)
            self.entries.append(
                {"key": key, "id": ident, "first": index, "marks": [], "calls": {}, "_len": -1}
            )
            self.current[ident] = key
        entry = self.entries[key]
        # A JSON round trip: the session's dicts are live and may change later.
        self.latest[key] = orjson.loads(orjson.dumps(message))
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
            size = len(_arguments(call))
            if size != record["_len"]:
                record["marks"].append([index, size])
                record["_len"] = size
        return key

    def result(self) -> list[dict[str, Any]]:
        out = []
        for entry in self.entries:
            calls = {
                k: {"first": v["first"], "marks": v["marks"]} for k, v in entry["calls"].items()
            }
            out.append(
                {
                    "key": entry["key"],
                    "id": entry["id"],
                    "first": entry["first"],
                    "marks": entry["marks"],
                    "calls": calls,
                    "message": self.latest[entry["key"]],
                }
            )
        return out


def _arguments(call: dict[str, Any]) -> str:
    function = call.get("function") or {}
    args = function.get("arguments") if isinstance(function, dict) else None
    return args if isinstance(args, str) else ""


def _grows(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``new`` is ``old`` with longer text or arguments only (one version of it).

    The page cuts a version's last text to the length it had at an event, which is right only
    while every earlier text is a prefix of the last one.
    """
    if {k for k in old if k not in ("content", "toolCalls")} != {
        k for k in new if k not in ("content", "toolCalls")
    }:
        return False
    if any(old[k] != new[k] for k in old if k not in ("content", "toolCalls")):
        return False
    before, after = old.get("content"), new.get("content")
    if isinstance(before, str) and isinstance(after, str):
        if not after.startswith(before):
            return False
    elif before not in (None, "") and before != after:
        return False
    old_calls = [c for c in old.get("toolCalls") or [] if isinstance(c, dict)]
    new_calls = [c for c in new.get("toolCalls") or [] if isinstance(c, dict)]
    if len(new_calls) < len(old_calls):
        return False
    for was, now in zip(old_calls, new_calls, strict=False):
        if was.get("id") != now.get("id") or not _arguments(now).startswith(_arguments(was)):
            return False
        if (was.get("function") or {}).get("name") != (now.get("function") or {}).get("name"):
            return False
        if {k: v for k, v in was.items() if k != "function"} != {
            k: v for k, v in now.items() if k != "function"
        }:
            return False
    return True


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

    return {
        "file": str(recording.path),
        "kind": recording.kind,
        "version": __version__,
        "events": recording.events,
        "summaries": [summarize_event(e) for e in recording.events],
        "lines": recording.known_lines(),
        "runs": [_run_data(run) for run in recording.runs],
        "initialState": start,
        "stateOps": state_ops,
        "messages": messages.result(),
        "messageOrder": messages.order,
        "errors": errors,
        "valid": not violations and not problems,
        "selected": selected,
    }


def _run_data(run: RecordedRun) -> dict[str, Any]:
    first = run.events[0] if run.events else {}
    return {
        "index": run.index,
        "start": run.start,
        "end": run.end,
        "name": run.name,
        "threadId": first.get("threadId"),
        "runId": first.get("runId"),
    }


def _note_streamed(messages: _Messages, session: Any, event: WireEvent, index: int) -> None:
    """Only the one message a streaming event grows, not the whole list (long streams)."""
    if event_type(event) == "TOOL_CALL_ARGS":
        owner = messages.owner_of_call.get(str(event.get("toolCallId")))
    else:
        owner = event.get("messageId") if isinstance(event.get("messageId"), str) else None
    message = session.message(owner) if owner is not None else None
    held = messages.order[-1][1] if messages.order else []
    if message is None or messages.note(message, index) not in held:
        messages.scan(session.messages, index)  # not the one version the list holds: rescan


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
