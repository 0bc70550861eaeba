"""Assertion helpers for AG-UI event streams, with readable, event-indexed failures.

Each helper folds the stream the way a real front end would (:class:`agui_replay.client.Session`,
verified in ``client`` mode) or checks it with :func:`agui_replay.verify.verify_stream`, and
raises :class:`AssertionError` whose message names the event index, the type and the field.

>>> events = [
...     {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
...     {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
...     {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hi"},
...     {"type": "TEXT_MESSAGE_END", "messageId": "m"},
...     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
... ]
>>> message_text(events)
'Hi'
>>> assert_event_types(events, ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
...                             "TEXT_MESSAGE_END", "RUN_FINISHED"])

Seam for the pytest plugin: :func:`explain_stream_diff` is what a ``pytest_assertrepr_compare``
hook returns for ``==`` between two event streams.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from agui_replay._jsondiff import MISSING, differences
from agui_replay._limits import loads_json
from agui_replay.client import Session
from agui_replay.errors import AguiReplayError, InvalidArgumentError, ProtocolViolation
from agui_replay.events import EventLike, WireEvent, event_type, to_wire
from agui_replay.patch import json_equal
from agui_replay.verify import Mode, expand_chunks, verify_stream

__all__ = [
    "assert_event_types",
    "assert_final_state",
    "assert_messages",
    "assert_tool_calls",
    "assert_valid_stream",
    "event_types",
    "explain_stream_diff",
    "final_messages",
    "final_state",
    "message_text",
    "tool_calls",
]

_MAX_SHOWN = 160  # characters of one value or event shown in a failure message


# --- values in messages -------------------------------------------------------------------


def _show(value: Any) -> str:
    if value is MISSING:
        return "<missing>"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text += f" ({type(value).__name__})"  # 1 vs 1.0 must be visible
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


# --- folding ------------------------------------------------------------------------------


def _wire_list(events: Iterable[EventLike]) -> list[dict[str, Any]]:
    return [to_wire(e) for e in events]


def _fold(
    events: Sequence[dict[str, Any]], *, state: Any = None, messages: Iterable[Any] | None = None
) -> Session:
    try:
        return Session(state=state, messages=messages).apply_all(events).finish()
    except ProtocolViolation as exc:
        raise AssertionError(_violation_text(events, exc)) from None
    except AguiReplayError as exc:
        raise AssertionError(f"the stream cannot be applied: {exc}") from None


def final_state(events: Iterable[EventLike], *, initial_state: Any = None) -> Any:
    """The state a client holds after the stream (``initial_state`` = ``RunAgentInput.state``)."""
    return _fold(_wire_list(events), state=initial_state).state


def final_messages(
    events: Iterable[EventLike], *, initial_messages: Iterable[Any] | None = None
) -> list[dict[str, Any]]:
    """The messages a client holds after the stream (wire-shaped dicts)."""
    return _fold(_wire_list(events), messages=initial_messages).messages


def event_types(events: Iterable[EventLike]) -> list[str]:
    """The ``type`` of every event, in order."""
    return [event_type(e) for e in events]


def message_text(events: Iterable[EventLike], message_id: str | None = None) -> str:
    """The text of one message after the stream: ``message_id``'s, or the answer.

    The answer is the last assistant message the stream itself streams (TEXT_MESSAGE_START or
    TEXT_MESSAGE_CHUNK), as the client holds it after the stream; a stream that streams none
    (its answer only in a MESSAGES_SNAPSHOT) answers with the last assistant message the client
    holds. The client's order is not the stream's: a MESSAGES_SNAPSHOT of the whole thread
    keeps the messages it names where the client has them and appends the rest, so on a
    thread's second run the first run's answer can end the client's list.
    """
    wire = _wire_list(events)
    messages = _fold(wire).messages
    if message_id is not None:
        for message in messages:
            if message.get("id") == message_id:
                return _text_of(message)
        known = ", ".join(f"{m.get('id')!r} ({m.get('role')})" for m in messages) or "none"
        raise AssertionError(
            f"no message with id {message_id!r}; the messages are: {known}{_run_error_note(wire)}"
        )
    held = {m.get("id"): m for m in reversed(messages)}  # the first one with an id wins
    streamed = (
        held.get(e.get("messageId"))
        for e in reversed(wire)
        if e.get("type") in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_CHUNK") and "messageId" in e
    )
    for message in (*streamed, *reversed(messages)):
        if (
            message is not None
            and message.get("role") == "assistant"
            and isinstance(message.get("content"), str)
        ):
            return _text_of(message)
    roles = ", ".join(str(m.get("role")) for m in messages) or "none"
    raise AssertionError(
        f"the stream has no assistant message with text (roles: {roles}){_run_error_note(wire)}"
    )


def _run_error_note(wire: Sequence[Mapping[str, Any]]) -> str:
    """``; the run ended in RUN_ERROR: ...`` when the stream holds one (why a message is
    missing is most often there: the agent's model call failed), else nothing."""
    for event in reversed(wire):
        if event.get("type") == "RUN_ERROR":
            code = event.get("code")
            message = str(event.get("message") or "(no message)")
            return f"; the run ended in RUN_ERROR: {message}" + (f" (code {code})" if code else "")
    return ""


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # multimodal parts: join the text ones
        return "".join(
            p.get("text", "") for p in content if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


# --- assertions ---------------------------------------------------------------------------


def assert_final_state(
    events: Iterable[EventLike], expected: Any, *, initial_state: Any = None
) -> None:
    """The client state after the stream equals ``expected``, JSON-strictly (``1 != 1.0``)."""
    wire = _wire_list(events)
    state = _fold(wire, state=initial_state).state
    if json_equal(state, expected):
        return
    last = max(
        (i for i, e in enumerate(wire) if e.get("type") in ("STATE_SNAPSHOT", "STATE_DELTA")),
        default=None,
    )
    where = (
        f"last set by event #{last} ({wire[last]['type']})"
        if last is not None
        else "no STATE_SNAPSHOT / STATE_DELTA in the stream"
    )
    lines = [f"final state differs from the expected one ({where}):"]
    for d in differences(state, expected):
        lines.append(f"  at {d.pointer or '/'}: got {_show(d.left)}, expected {_show(d.right)}")
    raise AssertionError("\n".join(lines))


def assert_messages(
    events: Iterable[EventLike],
    expected: Sequence[Mapping[str, Any]],
    *,
    exact: bool = False,
    initial_messages: Iterable[Any] | None = None,
) -> None:
    """The client's final messages match ``expected``, one dict per message, in order.

    By default each expected dict only needs to be a subset of its message (leave out ids you
    do not care about); ``exact=True`` compares whole messages. Values compare JSON-strictly.
    """
    wire = _wire_list(events)
    messages = _fold(wire, messages=initial_messages).messages
    problems: list[str] = []
    for i, want in enumerate(expected):
        if i >= len(messages):
            problems.append(f"message #{i}: missing, expected {_show(dict(want))}")
            continue
        got = messages[i]
        label = f"message #{i} ({got.get('role')} {got.get('id')!r})"
        compared = got if exact else {k: got.get(k, MISSING) for k in want}
        for d in differences(compared, dict(want)):
            got_want = f"got {_show(d.left)}, expected {_show(d.right)}"
            problems.append(f"{label} at {d.pointer}: {got_want}")
    for i in range(len(expected), len(messages)):
        problems.append(f"message #{i}: unexpected {_show(messages[i])}")
    if problems:
        head = f"final messages differ ({len(messages)} messages, {len(expected)} expected)"
        head += (_run_error_note(wire) if len(messages) < len(expected) else "") + ":"
        raise AssertionError("\n".join([head, *("  " + p for p in problems)]))


def assert_event_types(
    events: Iterable[EventLike],
    expected: Sequence[str],
    *,
    ignore: Collection[str] = (),
    in_order: bool = False,
) -> None:
    """The event types are exactly ``expected`` (after dropping the ``ignore``-d types).

    ``in_order=True`` only asks for ``expected`` to appear in that order, other events between.
    """
    wire = _wire_list(events)
    indexed = [(i, event_type(e)) for i, e in enumerate(wire) if event_type(e) not in ignore]
    got = [t for _, t in indexed]
    if in_order:
        pos = 0
        for t in got:
            if pos < len(expected) and t == expected[pos]:
                pos += 1
        if pos == len(expected):
            return
        raise AssertionError(
            f"event type {expected[pos]!r} (#{pos} of the expected order) never came after "
            f"{'the start' if pos == 0 else repr(expected[pos - 1])}; types: {got}"
        )
    if got == list(expected):
        return
    k = next((n for n, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
    if k is None:
        k = min(len(got), len(expected))
    if k < len(got) and k < len(expected):
        what = f"got {got[k]}, expected {expected[k]}"
    elif k < len(got):
        what = f"got {len(got) - k} more event(s), the first is {got[k]}"
    else:
        what = f"the stream ended, expected {expected[k]} (and {len(expected) - k - 1} more)"
    index = indexed[k][0] if k < len(indexed) else len(wire)
    lines = [f"event types differ at event #{index}: {what}"]
    lines += _context(wire, index, marks={index})
    raise AssertionError("\n".join(lines))


def assert_valid_stream(
    events: Iterable[EventLike], mode: Mode = "client", *, input: Any = None
) -> None:
    """The stream passes the ordering verifier (``client`` or ``strict`` rules).

    ``input``: the run's input (``RunAgentInput`` or wire dict), for a run whose events answer
    tool calls of an earlier run and whose ``RUN_STARTED`` does not carry the input (most
    frameworks': ``assert_valid_stream(events, "strict", input=agui.runs[-1].input)``).
    """
    wire = _wire_list(events)
    try:
        verify_stream(wire, mode, input=input)
    except ProtocolViolation as exc:
        raise AssertionError(_violation_text(wire, exc, mode)) from None
    except AguiReplayError as exc:
        raise AssertionError(f"the stream is not valid ({mode} mode): {exc}") from None


def _violation_text(
    events: Sequence[dict[str, Any]], exc: ProtocolViolation, mode: str = "client"
) -> str:
    lines = [f"the stream breaks the AG-UI ordering rules ({mode} mode): {exc}"]
    if exc.hint:
        lines.append(f"  fix: {exc.hint}")
    if exc.index is not None:
        lines += _context(events, exc.index, marks={exc.index})
    return "\n".join(lines)


# --- stream diffs -------------------------------------------------------------------------


def _one_line(event: Any) -> str:
    # One canonical key order on every side of every listing: "type" first, then the other
    # keys sorted (as cassettes store events), nested objects sorted too.
    try:
        if isinstance(event, Mapping):
            keys = sorted(event, key=lambda k: (k != "type", str(k)))
            text = (
                "{"
                + ", ".join(
                    f"{json.dumps(str(k), ensure_ascii=False)}: "
                    + json.dumps(
                        event[k], ensure_ascii=False, sort_keys=True, separators=(", ", ": ")
                    )
                    for k in keys
                )
                + "}"
            )
        else:
            text = json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    except (TypeError, ValueError):
        text = repr(event)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _differences(left: Sequence[Any], right: Sequence[Any]) -> int:
    """How many events differ, aligned: an inserted or removed event is one difference."""
    import difflib

    keys = [
        [json.dumps(e, sort_keys=True, ensure_ascii=False, default=repr) for e in side]
        for side in (left, right)
    ]
    matcher = difflib.SequenceMatcher(None, keys[0], keys[1], autojunk=False)
    total = 0
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            total += max(i2 - i1, j2 - j1)
    return total


def _context(
    events: Sequence[Any], index: int, *, marks: Collection[int] = (), context: int = 2
) -> list[str]:
    lo, hi = max(0, index - context), min(len(events), index + context + 1)
    return [f"  {'>' if i in marks else ' '} #{i} {_one_line(events[i])}" for i in range(lo, hi)]


def explain_stream_diff(
    left: Sequence[Any],
    right: Sequence[Any],
    *,
    context: int = 2,
    left_name: str = "left",
    right_name: str = "right",
) -> list[str]:
    """Lines that explain how two event streams differ (``[]`` when they are equal).

    The first line is a one-line summary (pytest shows it after ``assert``); then the first
    differing event's index, type and changed fields, and a few events of context from each side.

    >>> explain_stream_diff([{"type": "A", "x": 1}], [{"type": "A", "x": 2}])[0]
    'event streams differ at event #0 (A): field /x'
    """
    left, right = [to_wire(e) for e in left], [to_wire(e) for e in right]
    first = next(
        (i for i, (a, b) in enumerate(zip(left, right, strict=False)) if not json_equal(a, b)),
        None,
    )
    if first is None:
        if len(left) == len(right):
            return []
        first = min(len(left), len(right))
    total = max(1, _differences(left, right))
    lines: list[str] = []
    if first >= len(left) or first >= len(right):
        longer, name = (right, right_name) if first >= len(left) else (left, left_name)
        summary = (
            f"event streams differ at event #{first}: {name} has {len(longer) - first} more "
            f"event(s), the first is {event_type(longer[first])}"
        )
        lines.append(summary)
    else:
        a, b = left[first], right[first]
        ta, tb = event_type(a), event_type(b)
        if ta != tb:
            lines.append(f"event streams differ at event #{first}: type {ta} != {tb}")
        else:
            diffs = differences(a, b)
            fields = ", ".join(d.pointer for d in diffs)
            lines.append(f"event streams differ at event #{first} ({ta}): field {fields}")
            for d in diffs:
                shown = f"{left_name} {_show(d.left)} != {right_name} {_show(d.right)}"
                lines.append(f"  {d.pointer}: {shown}")
    lines.append(
        f"{total} event(s) differ; {left_name} has {len(left)} events, "
        f"{right_name} has {len(right)}"
    )
    lines.append(f"{left_name}:")
    lines += _context(left, first, marks={first}, context=context) or ["    (no events here)"]
    lines.append(f"{right_name}:")
    lines += _context(right, first, marks={first}, context=context) or ["    (no events here)"]
    return lines


# --- trajectories: the tool calls of a run ------------------------------------------------

TrajectoryMode: TypeAlias = Literal["strict", "unordered", "subset", "superset"]
"""How :func:`assert_tool_calls` pairs expected calls with actual ones."""
ArgsMode: TypeAlias = Literal["exact", "subset", "ignore"]
"""How :func:`assert_tool_calls` compares a pair's arguments."""

_TRAJECTORY_MODES = ("strict", "unordered", "subset", "superset")
_ARGS_MODES = ("exact", "subset", "ignore")
_COLUMN = 64  # characters of one call shown in a column of a trajectory failure


def _events_from_file(path: str | os.PathLike[str]) -> list[list[WireEvent]]:
    """The events of a stored stream, one list per run: a cassette (``.json``), a snapshot
    file (``.agui.jsonl``, JSON lines) or an SSE capture. Raises
    :class:`~agui_replay.errors.InputFileError` or :class:`~agui_replay.errors.CassetteError`
    naming the file and line."""
    from agui_replay.cassette import load_recording

    return [list(run.events) for run in load_recording(path).runs]


def _runs_of(events: Any) -> list[list[Any]]:
    """The runs' events in any accepted shape: a path, one run's events, a list of runs, a
    snapshot file's lines, or objects with ``.events`` (``agui.runs``)."""
    if isinstance(events, (str, os.PathLike)):
        return _events_from_file(events)
    if isinstance(events, (bytes, bytearray)) or not isinstance(events, Iterable):
        raise InvalidArgumentError(
            f"tool_calls takes events (a list of wire dicts or ag_ui.core events), a list of "
            f"runs' events, a snapshot file's lines or a file path, not {type(events).__name__}"
        )
    items = list(events)
    if items and all(isinstance(item, str) for item in items):  # JSON lines
        return [[_json_line(line, n) for n, line in enumerate(items, 1) if line.strip()]]
    if items and all(isinstance(item, (list, tuple)) or hasattr(item, "events") for item in items):
        return [list(item) if isinstance(item, (list, tuple)) else item.events for item in items]
    return [items]


def _json_line(line: str, number: int) -> Any:
    try:
        return loads_json(line)
    except (ValueError, AguiReplayError) as exc:
        raise InvalidArgumentError(
            f"line {number} of the given lines is not a JSON event ({exc}): {line[:80]!r}; "
            "pass a snapshot file's lines as read from the file, or its path"
        ) from None


def _parsed(text: str) -> Any:
    try:
        return loads_json(text)
    except (ValueError, AguiReplayError):
        return text


def tool_calls(events: Any) -> list[dict[str, Any]]:
    """The tool calls of a stream in the order they started, as ``{"id", "name", "args",
    "result"}`` dicts.

    ``args`` is the JSON the ``TOOL_CALL_ARGS`` deltas spell when joined (the text itself when
    it is not JSON; ``{}`` when the call streamed no arguments); ``result`` the
    ``TOOL_CALL_RESULT``'s content, parsed when it is JSON (``None`` without a result in the
    stream). ``TOOL_CALL_CHUNK`` events are expanded as the client does; a tool call that only
    a ``MESSAGES_SNAPSHOT`` shows is not one the stream made, and is left out.

    ``events``: what ``agui.run`` returns, ``ag_ui.core`` events, a list of runs' events (or
    ``agui.runs``), a snapshot file's lines, or the path of a cassette or snapshot file.

    >>> tool_calls([
    ...     {"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "weather",
    ...      "delta": '{"city": '},
    ...     {"type": "TOOL_CALL_CHUNK", "delta": '"Paris"}'},
    ...     {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c1",
    ...      "content": '{"sky": "sunny"}'},
    ... ])
    [{'id': 'c1', 'name': 'weather', 'args': {'city': 'Paris'}, 'result': {'sky': 'sunny'}}]
    """
    calls: list[dict[str, Any]] = []
    for run in _runs_of(events):
        try:
            wire = expand_chunks(run)
        except ProtocolViolation as exc:
            shown = [to_wire(e) if not isinstance(e, Mapping) else dict(e) for e in run]
            raise AssertionError(_violation_text(shown, exc)) from None
        open_calls: dict[str, tuple[dict[str, Any], list[str]]] = {}
        for event in wire:
            kind = event.get("type")
            ident = event.get("toolCallId")
            if kind == "TOOL_CALL_START":
                call: dict[str, Any] = {
                    "id": ident,
                    "name": event.get("toolCallName"),
                    "args": {},
                    "result": None,
                }
                calls.append(call)
                open_calls[str(ident)] = (call, [])
            elif kind == "TOOL_CALL_ARGS" and str(ident) in open_calls:
                open_calls[str(ident)][1].append(str(event.get("delta", "")))
            elif kind == "TOOL_CALL_RESULT" and str(ident) in open_calls:
                content = event.get("content")
                if content is not None:
                    parsed = _parsed(content) if isinstance(content, str) else content
                    open_calls[str(ident)][0]["result"] = parsed
        for call, deltas in open_calls.values():
            text = "".join(deltas)
            call["args"] = _parsed(text) if text.strip() else {}
    return calls


# matching expected values (with callables and compiled regexes as matchers) against actual ones


def _why_not(want: Any, got: Any, subset: bool, path: str = "") -> str | None:
    """Why ``got`` does not match ``want`` (a pointer and the reason), or ``None``."""
    where = path or "/"
    if isinstance(want, re.Pattern):
        if isinstance(got, str) and want.fullmatch(got):
            return None
        return f"at {where}: {_show(got)} does not fullmatch re {want.pattern!r}"
    if callable(want):
        try:
            if want(got):
                return None
            refused = "returned false"
        except Exception as exc:  # a predicate that cannot judge the value refuses it
            refused = f"raised {type(exc).__name__}: {exc}"
        return f"at {where}: the predicate {_matcher_name(want)} {refused} for {_show(got)}"
    if isinstance(want, Mapping):
        if not isinstance(got, Mapping):
            return f"at {where}: expected an object, got {_show(got)}"
        for key, value in want.items():
            step = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            if key not in got:
                return f"at {step}: missing (expected {_display(value)})"
            reason = _why_not(value, got[key], subset, step)
            if reason is not None:
                return reason
        if not subset:
            extra = [k for k in got if k not in want]
            if extra:
                step = f"{path}/{str(extra[0]).replace('~', '~0').replace('/', '~1')}"
                return f"at {step}: not expected (got {_show(got[extra[0]])})"
        return None
    if isinstance(want, (list, tuple)):
        if not isinstance(got, (list, tuple)):
            return f"at {where}: expected an array, got {_show(got)}"
        if len(want) != len(got):
            return f"at {where}: expected {len(want)} item(s), got {len(got)}"
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            reason = _why_not(w, g, subset, f"{path}/{i}")
            if reason is not None:
                return reason
        return None
    if json_equal(want, got):
        return None
    return f"at {where}: expected {_show(want)}, got {_show(got)}"


def _matcher_name(matcher: Any) -> str:
    name = str(getattr(matcher, "__name__", None) or type(matcher).__name__)
    return name if name.startswith("<") else f"<{name}>"


def _display(value: Any) -> str:
    """An expected value as JSON, its matchers as ``re('...')`` and ``<predicate>``."""
    if isinstance(value, re.Pattern):
        return f"re({value.pattern!r})"
    if callable(value):
        return _matcher_name(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{json.dumps(str(k))}: {_display(v)}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_display(v) for v in value) + "]"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _call_text(name: Any, args: Any, *, expected: bool) -> str:
    shown = "(any args)" if expected and args is None else _display(args)
    text = f"{name if isinstance(name, str) else _display(name)} {shown}"
    return text if len(text) <= _COLUMN else text[: _COLUMN - 1] + "…"


def _expected_pairs(expected: Iterable[Any]) -> list[tuple[Any, Any]]:
    pairs: list[tuple[Any, Any]] = []
    for i, item in enumerate(expected):
        if isinstance(item, (str, re.Pattern)):
            pairs.append((item, None))
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            pairs.append((item[0], item[1]))
        elif isinstance(item, Mapping) and "name" in item:
            pairs.append((item["name"], item.get("args")))
        else:
            raise InvalidArgumentError(
                f"expected[{i}] is {_show(item) if not callable(item) else repr(item)}: each "
                'expected call is a (name, args) pair, e.g. ("search", {"q": "Paris"}), with '
                "args None for any arguments"
            )
    return pairs


def _call_mismatch(want: tuple[Any, Any], got: Mapping[str, Any], args_mode: str) -> str | None:
    name, args = want
    reason = _why_not(name, got["name"], False)
    if reason is not None:
        return f"the name: expected {_display(name)}, got {_show(got['name'])}"
    if args is None or args_mode == "ignore":
        return None
    reason = _why_not(args, got["args"], args_mode == "subset")
    return None if reason is None else f"the args {reason}"


def _pairing(
    wanted: Sequence[tuple[Any, Any]], actual: Sequence[Mapping[str, Any]], args_mode: str
) -> dict[int, int]:
    """A largest pairing of expected calls with distinct actual ones (expected -> actual)."""
    fits = [
        [j for j, got in enumerate(actual) if _call_mismatch(want, got, args_mode) is None]
        for want in wanted
    ]
    taken: dict[int, int] = {}  # actual -> expected

    def place(i: int, seen: set[int]) -> bool:
        for j in fits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in taken or place(taken[j], seen):
                taken[j] = i
                return True
        return False

    for i in range(len(wanted)):
        place(i, set())
    return {i: j for j, i in taken.items()}


def assert_tool_calls(
    events: Any,
    expected: Iterable[Any],
    *,
    mode: TrajectoryMode = "strict",
    args: ArgsMode = "exact",
) -> None:
    """The run's tool calls (see :func:`tool_calls`) match ``expected``, a list of
    ``(name, args)`` pairs (``args`` ``None``: any arguments).

    ``mode``: ``"strict"`` the same calls in the same order; ``"unordered"`` the same calls in
    any order; ``"subset"`` every actual call is an expected one (expected ones may not have
    happened); ``"superset"`` every expected call happened (others may have too). Each actual
    call pairs with one expected call at most.

    ``args``: ``"exact"`` equal arguments (JSON-strictly); ``"subset"`` the expected keys match
    (at every depth of objects; arrays keep their length); ``"ignore"`` names only.

    A value in ``expected`` may be a matcher, at any depth (the name too): a callable is called
    with the actual value and must return true; a compiled regex must fullmatch a string.

    A failure shows both trajectories side by side, marks the first mismatch, and says what it
    is.
    """
    __tracebackhide__ = True  # pytest shows the test's line, not these
    if mode not in _TRAJECTORY_MODES:
        raise InvalidArgumentError(
            f"assert_tool_calls: mode must be one of {', '.join(map(repr, _TRAJECTORY_MODES))}, "
            f"got {mode!r}"
        )
    if args not in _ARGS_MODES:
        raise InvalidArgumentError(
            f"assert_tool_calls: args must be one of {', '.join(map(repr, _ARGS_MODES))}, "
            f"got {args!r}"
        )
    wanted = _expected_pairs(expected)
    actual = tool_calls(events)
    if mode == "strict":
        _strict_trajectory(wanted, actual, args)
    else:
        _loose_trajectory(wanted, actual, mode, args)


def _shown_expected(wanted: Sequence[tuple[Any, Any]], i: int) -> str:
    return f"#{i} {_call_text(*wanted[i], expected=True)}"


def _shown_actual(actual: Sequence[Mapping[str, Any]], j: int) -> str:
    return f"#{j} {_call_text(actual[j]['name'], actual[j]['args'], expected=False)}"


def _table(rows: Sequence[tuple[str, str]], mark: int | None) -> list[str]:
    """Two columns, expected | actual, one call per line; ``>`` marks row ``mark``."""
    width = max([len("expected"), *(len(left) for left, _ in rows)])
    lines = [f"    {'expected':<{width}} | actual"]
    for n, (left, right) in enumerate(rows):
        lines.append(f"  {'>' if n == mark else ' '} {left:<{width}} | {right}".rstrip())
    return lines


def _strict_trajectory(
    wanted: Sequence[tuple[Any, Any]], actual: Sequence[Mapping[str, Any]], args_mode: str
) -> None:
    __tracebackhide__ = True  # pytest shows the test's line, not these
    first: int | None = None
    what = ""
    for i in range(max(len(wanted), len(actual))):
        if i >= len(actual):
            what = f"expected call #{i} ({_call_text(*wanted[i], expected=True)}) did not happen"
        elif i >= len(wanted):
            what = f"call {_shown_actual(actual, i)} was not expected"
        else:
            reason = _call_mismatch(wanted[i], actual[i], args_mode)
            if reason is None:
                continue
            what = f"call #{i} differs in {reason}"
        first = i
        break
    if first is None:
        return
    rows = [
        (
            _shown_expected(wanted, i) if i < len(wanted) else "",
            _shown_actual(actual, i) if i < len(actual) else "",
        )
        for i in range(max(len(wanted), len(actual)))
    ]
    head = (
        f"tool calls differ (mode='strict', args={args_mode!r}; {len(wanted)} expected, "
        f"{len(actual)} made): {what}"
    )
    raise AssertionError("\n".join([head, *_table(rows, first)]))


def _loose_trajectory(
    wanted: Sequence[tuple[Any, Any]],
    actual: Sequence[Mapping[str, Any]],
    mode: str,
    args_mode: str,
) -> None:
    __tracebackhide__ = True  # pytest shows the test's line, not these
    pairs = _pairing(wanted, actual, args_mode)
    missing = [i for i in range(len(wanted)) if i not in pairs]
    paired = set(pairs.values())
    extra = [j for j in range(len(actual)) if j not in paired]
    must_pair_expected = mode in ("unordered", "superset")
    must_pair_actual = mode in ("unordered", "subset")
    bad_expected = missing if must_pair_expected else []
    bad_actual = extra if must_pair_actual else []
    if not bad_expected and not bad_actual:
        return
    # rows: the pairs in expected order, then unpaired expected, then unpaired actual calls
    rows: list[tuple[str, str]] = []
    mark: int | None = None
    for i in range(len(wanted)):
        if i in pairs:
            rows.append((_shown_expected(wanted, i), _shown_actual(actual, pairs[i])))
        else:
            if mark is None and must_pair_expected:
                mark = len(rows)
            rows.append((_shown_expected(wanted, i), ""))
    for j in extra:
        if mark is None and must_pair_actual:
            mark = len(rows)
        rows.append(("", _shown_actual(actual, j)))
    if bad_expected:
        i = bad_expected[0]
        what = f"expected call #{i} ({_call_text(*wanted[i], expected=True)}) did not happen"
        near = [j for j in extra if _why_not(wanted[i][0], actual[j]["name"], False) is None]
        if near:
            reason = _call_mismatch(wanted[i], actual[near[0]], args_mode)
            what += f"; the closest, call #{near[0]}, differs in {reason}"
    else:
        j = bad_actual[0]
        what = f"call {_shown_actual(actual, j)} was not expected"
    head = (
        f"tool calls differ (mode={mode!r}, args={args_mode!r}; {len(wanted)} expected, "
        f"{len(actual)} made): {what}"
    )
    raise AssertionError("\n".join([head, *_table(rows, mark)]))
