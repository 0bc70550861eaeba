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
hook returns for ``==`` between two event streams (check with :func:`is_event_stream`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from agui_replay.client import Session
from agui_replay.errors import AguiReplayError, ProtocolViolation
from agui_replay.events import EventLike, event_type, to_wire
from agui_replay.patch import json_equal
from agui_replay.verify import Mode, verify_stream

__all__ = [
    "assert_event_types",
    "assert_final_state",
    "assert_messages",
    "assert_valid_stream",
    "event_types",
    "explain_stream_diff",
    "final_messages",
    "final_state",
    "is_event_stream",
    "json_diff",
    "message_text",
]

_MAX_SHOWN = 160  # characters of one value or event shown in a failure message


# --- JSON-strict comparison ---------------------------------------------------------------


_MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()


def json_diff(a: Any, b: Any, *, limit: int = 5, path: str = "") -> list[tuple[str, Any, Any]]:
    """The first ``limit`` differences between two JSON values as ``(pointer, a, b)``.

    >>> json_diff({"n": 1, "s": "x"}, {"n": 1.0, "s": "x"})
    [('/n', 1, 1.0)]
    """
    out: list[tuple[str, Any, Any]] = []
    _diff(a, b, path, out, limit)
    return out


def _diff(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]], limit: int) -> None:
    if len(out) >= limit:
        return
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in list(a) + [k for k in b if k not in a]:
            step = f"{path}/{str(key).replace('~', '~0').replace('/', '~1')}"
            _diff(a.get(key, _MISSING), b.get(key, _MISSING), step, out, limit)
        return
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else _MISSING
            y = b[i] if i < len(b) else _MISSING
            _diff(x, y, f"{path}/{i}", out, limit)
        return
    if a is _MISSING or b is _MISSING or not json_equal(a, b):
        out.append((path, a, b))


def _show(value: Any) -> str:
    if value is _MISSING:
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
    """The text of one message after the stream: ``message_id``'s, or the last assistant one."""
    messages = final_messages(events)
    if message_id is not None:
        for message in messages:
            if message.get("id") == message_id:
                return _text_of(message)
        known = ", ".join(f"{m.get('id')!r} ({m.get('role')})" for m in messages) or "none"
        raise AssertionError(f"no message with id {message_id!r}; the messages are: {known}")
    for message in reversed(messages):
        if message.get("role") == "assistant" and isinstance(message.get("content"), str):
            return _text_of(message)
    roles = ", ".join(str(m.get("role")) for m in messages) or "none"
    raise AssertionError(f"the stream has no assistant message with text (roles: {roles})")


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
    for pointer, got, want in json_diff(state, expected):
        lines.append(f"  at {pointer or '/'}: got {_show(got)}, expected {_show(want)}")
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
    messages = final_messages(events, initial_messages=initial_messages)
    problems: list[str] = []
    for i, want in enumerate(expected):
        if i >= len(messages):
            problems.append(f"message #{i}: missing, expected {_show(dict(want))}")
            continue
        got = messages[i]
        label = f"message #{i} ({got.get('role')} {got.get('id')!r})"
        compared = got if exact else {k: got.get(k, _MISSING) for k in want}
        for pointer, g, w in json_diff(compared, dict(want)):
            problems.append(f"{label} at {pointer}: got {_show(g)}, expected {_show(w)}")
    for i in range(len(expected), len(messages)):
        problems.append(f"message #{i}: unexpected {_show(messages[i])}")
    if problems:
        head = f"final messages differ ({len(messages)} messages, {len(expected)} expected):"
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


def is_event_stream(value: Any) -> bool:
    """True for a list/tuple of event dicts (what :func:`explain_stream_diff` explains)."""
    return (
        isinstance(value, (list, tuple))
        and bool(value)
        and all(isinstance(e, Mapping) and isinstance(e.get("type"), str) for e in value)
    )


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
            diffs = json_diff(a, b)
            fields = ", ".join(p for p, _, _ in diffs)
            lines.append(f"event streams differ at event #{first} ({ta}): field {fields}")
            for pointer, x, y in diffs:
                lines.append(f"  {pointer}: {left_name} {_show(x)} != {right_name} {_show(y)}")
    lines.append(
        f"{total} event(s) differ; {left_name} has {len(left)} events, "
        f"{right_name} has {len(right)}"
    )
    lines.append(f"{left_name}:")
    lines += _context(left, first, marks={first}, context=context) or ["    (no events here)"]
    lines.append(f"{right_name}:")
    lines += _context(right, first, marks={first}, context=context) or ["    (no events here)"]
    return lines
