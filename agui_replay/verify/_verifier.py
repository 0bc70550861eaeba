"""The AG-UI ordering rules (which event may follow which), checked one event at a time.

Two modes. ``client`` accepts what the reference TypeScript client accepts. ``strict`` adds
three rules of its own: a TOOL_CALL_RESULT must name a call that was started (``unknown-id``)
and already ended (``out-of-order``), and a stream must not stop inside a run
(``incomplete``).

>>> v = Verifier("client")
>>> v.feed({"type": "RUN_STARTED", "threadId": "t", "runId": "r"})
>>> try:
...     v.feed({"type": "TOOL_CALL_ARGS", "toolCallId": "r-call-2", "delta": "{}"})
... except ProtocolViolation as error:
...     print(error)
TOOL_CALL_ARGS #1 breaks rule not-open: tool call "r-call-2" was never opened

Rule names: ``not-started``, ``duplicate-run-started``, ``run-ended``, ``open-at-finish``,
``duplicate-start``, ``not-open``, ``chunk-without-id``, ``chunk-without-name``,
``chunk-after-start``, and in strict mode ``unknown-id``, ``out-of-order``, ``incomplete``.

*_CHUNK events are expanded into START / CONTENT / END first, as the reference client does
(:class:`ChunkExpander`, usable on its own); a violation always names the caller's event.
Every violation's ``.hint`` says how to fix the stream (built only when raising).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal, NoReturn, TypeAlias

from agui_replay._eventtypes import CHUNK_TYPES, require_stream
from agui_replay._text import short_repr
from agui_replay.errors import (
    EventDecodeError,
    InvalidArgumentError,
    ProtocolViolation,
)
from agui_replay.events import EVENT_TYPES, EventLike, WireEvent
from agui_replay.verify._attribution import Owners
from agui_replay.verify._chunks import ABSENT as _ABSENT
from agui_replay.verify._chunks import CHUNK_BLOCK as _CHUNK_BLOCK
from agui_replay.verify._chunks import ChunkExpander
from agui_replay.verify._chunks import UndoLog as _UndoLog
from agui_replay.verify._chunks import chunk_after_start as _chunk_after_start
from agui_replay.verify._chunks import restore as _restore
from agui_replay.verify._chunks import str_field as _str_field
from agui_replay.verify._chunks import wire_of as _wire
from agui_replay.verify._schema import SchemaViolation, check_schema

__all__ = ["Mode", "SchemaViolation", "Verifier", "verify_stream"]

Mode: TypeAlias = Literal["client", "strict"]
"""The two rule sets a stream is verified against, the type of every ``mode`` argument:
``"client"``, what the reference TypeScript client accepts; ``"strict"``, that and the rules a
server should keep to where the client forgives (``docs/reference/verify.md`` lists them)."""


_IDLE, _RUNNING, _FINISHED, _ERRORED = 0, 1, 2, 3

# (attribute, human name, id field) of everything that can be open inside a run, in the order
# an open-at-finish error lists them.
_BLOCKS = (
    ("_steps", "step", "stepName"),
    ("_messages", "text message", "messageId"),
    ("_reasoning_messages", "reasoning message", "messageId"),
    ("_reasoning", "reasoning block", "messageId"),
    ("_tools", "tool call", "toolCallId"),
    ("_subagents", "subagent", "subagentRunId"),
)
_OPENERS = {
    "STEP_STARTED": "_steps",
    "TEXT_MESSAGE_START": "_messages",
    "REASONING_MESSAGE_START": "_reasoning_messages",
    "REASONING_START": "_reasoning",
    "TOOL_CALL_START": "_tools",
    "SUBAGENT_STARTED": "_subagents",
}
_CONTINUERS = {
    "TEXT_MESSAGE_CONTENT": "_messages",
    "REASONING_MESSAGE_CONTENT": "_reasoning_messages",
    "TOOL_CALL_ARGS": "_tools",
}
_CLOSERS = {
    "STEP_FINISHED": "_steps",
    "TEXT_MESSAGE_END": "_messages",
    "REASONING_MESSAGE_END": "_reasoning_messages",
    "REASONING_END": "_reasoning",
    "TOOL_CALL_END": "_tools",
    "SUBAGENT_FINISHED": "_subagents",
    "SUBAGENT_ERROR": "_subagents",
}
_BLOCK_INFO = {attr: (name, field) for attr, name, field in _BLOCKS}
# Only for hints: the event that opens / closes each kind of block.
_BLOCK_START = {attr: kind for kind, attr in _OPENERS.items()}
_BLOCK_END = {
    "_steps": "STEP_FINISHED",
    "_messages": "TEXT_MESSAGE_END",
    "_reasoning_messages": "REASONING_MESSAGE_END",
    "_reasoning": "REASONING_END",
    "_tools": "TOOL_CALL_END",
    "_subagents": "SUBAGENT_FINISHED",
}


def _quote(ids: Iterable[str]) -> str:
    return ", ".join(f'"{i}"' for i in ids)


class Verifier:
    """Checks a stream one event at a time; raises :class:`ProtocolViolation` on a bad one.

    ``feed`` accepts wire dicts or ``ag_ui.core`` models; ``index`` in an error counts every
    event fed, from 0. A refused event leaves the verifier as it was, so a caller may drop it
    and go on. ``assume_running=True`` starts inside a run, as if RUN_STARTED had been seen.
    Call :meth:`finish` at the end of the stream.
    """

    def __init__(self, mode: Mode = "strict", *, assume_running: bool = False) -> None:
        if mode not in ("client", "strict"):
            raise InvalidArgumentError(
                f'unknown verifier mode {short_repr(mode)}: use "client" or "strict"'
            )
        self.mode: Mode = mode
        self._strict = mode == "strict"
        self._count = 0
        self._phase = _RUNNING if assume_running else _IDLE
        self._run_id: str | None = None
        self._expander = ChunkExpander(track_starts=False)
        self.warnings: list[str] = []
        """What the reference client warns about and goes on (client mode): unknown event
        types, which are dropped."""
        self._new_run_books()
        # Stream-wide, not per run: a result may answer a call made in an earlier run.
        self._tools_seen: dict[str, int] = {}
        self._handlers: dict[str, Callable[[Mapping[str, Any], str, int, str, Any], None]] = {
            "RUN_STARTED": self._run_started,
            "RUN_FINISHED": self._run_finished,
            "RUN_ERROR": self._run_error,
            "TOOL_CALL_RESULT": self._tool_result,
        }
        for kind in _OPENERS:
            self._handlers[kind] = self._open
        for kind in _CONTINUERS:
            self._handlers[kind] = self._continue
        for kind in _CLOSERS:
            self._handlers[kind] = self._close
        self._handlers["STEP_STARTED"] = self._step_started
        self._handlers["STEP_FINISHED"] = self._step_finished

    def _new_run_books(self) -> None:
        self._steps: dict[str, int] = {}
        self._messages: dict[str, int] = {}
        self._reasoning_messages: dict[str, int] = {}
        self._reasoning: dict[str, int] = {}
        self._tools: dict[str, int] = {}
        self._subagents: dict[str, int] = {}
        # id -> index of its END, so "not open" can say whether it ever was.
        self._ended: dict[str, dict[str, int]] = {attr: {} for attr, _, _ in _BLOCKS}
        self._owners = Owners()

    # -- read-only views -------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Inside a run: RUN_STARTED seen (or assumed) and no RUN_FINISHED / RUN_ERROR since."""
        return self._phase == _RUNNING

    @property
    def count(self) -> int:
        """How many events were accepted or refused so far (the next event's index)."""
        return self._count

    @property
    def run_id(self) -> str | None:
        """``runId`` of the current (or last) run."""
        return self._run_id

    @property
    def open_messages(self) -> Mapping[str, int]:
        """Open text messages: id -> index of the event that opened it."""
        return MappingProxyType(self._messages)

    @property
    def open_tool_calls(self) -> Mapping[str, int]:
        return MappingProxyType(self._tools)

    @property
    def open_steps(self) -> Mapping[str, int]:
        return MappingProxyType(self._steps)

    @property
    def open_reasoning(self) -> Mapping[str, int]:
        """Open reasoning blocks (REASONING_START without its REASONING_END)."""
        return MappingProxyType(self._reasoning)

    @property
    def open_reasoning_messages(self) -> Mapping[str, int]:
        return MappingProxyType(self._reasoning_messages)

    @property
    def open_subagents(self) -> Mapping[str, int]:
        return MappingProxyType(self._subagents)

    # -- feeding ---------------------------------------------------------------------------

    def learn_input(self, run_input: Any) -> None:
        """Know what a run's input names before its events come (a ``RunAgentInput`` or its
        wire dict): its messages' owners and, in strict mode, the tool calls it names, so a
        ``TOOL_CALL_RESULT`` answering a call of an earlier run is not an unknown id. For
        frameworks whose ``RUN_STARTED`` does not carry the input."""
        dump = getattr(run_input, "model_dump", None)
        if callable(dump):
            run_input = dump(by_alias=True, exclude_none=True, mode="json")
        if not isinstance(run_input, Mapping):
            return
        messages = run_input.get("messages")
        undo: list[Any] = []
        self._owners.learn_messages(messages, False, undo)
        if self._strict:
            self._learn_input_calls(messages, -1, undo)

    def feed(self, event: EventLike) -> None:
        """Check one event; raises :class:`ProtocolViolation` (or ``EventDecodeError``)."""
        self.feed_expanded(event)

    def feed_expanded(self, event: EventLike) -> list[WireEvent]:
        """Like :meth:`feed`, and return the wire events it stands for (chunks expanded)."""
        index = self._count
        self._count = index + 1  # a refused event still takes its place in the stream
        wire = event if type(event) is dict else _wire(event, index)
        kind = wire.get("type")
        if type(kind) is not str or kind not in EVENT_TYPES:
            if self._strict:
                _unknown_type(wire, kind, index)
            # The reference client drops an event whose type it does not know, with a warning.
            self.warnings.append(_unknown_type_warning(kind, index))
            return []
        check_schema(wire, kind, index)
        expander = self._expander
        undo: _UndoLog = []
        if not expander._lanes and kind not in CHUNK_TYPES:
            try:
                self._step(wire, kind, index, kind, undo)
            except ProtocolViolation:
                for container, key, old in reversed(undo):
                    _restore(container, key, old)
                raise
            return [wire]  # type: ignore[list-item]  # a Mapping passes through as given
        if self._phase != _RUNNING:
            # Outside a run the run rules speak first, before any chunk rule.
            self._check_phase(kind, index, kind)
        expanded = expander._expand(wire, kind, index)
        try:
            for item in expanded:
                self._step(item, item["type"], index, kind, undo)
        except ProtocolViolation:
            for container, key, old in reversed(undo):
                _restore(container, key, old)
            expander._rollback()
            raise
        return expanded

    def finish(self) -> None:
        """End of stream. In strict mode a stream that stops inside a run is ``incomplete``."""
        if not self._strict:
            return
        if self._phase == _IDLE:
            raise ProtocolViolation(
                rule="incomplete",
                event_type=None,
                index=self._count,
                detail="the stream has no run: it must start with RUN_STARTED and end with "
                "RUN_FINISHED or RUN_ERROR",
                hint="wrap the events in a run: RUN_STARTED first, then RUN_FINISHED or "
                "RUN_ERROR last",
            )
        if self._phase == _RUNNING:
            still = self._open_summary()
            raise ProtocolViolation(
                rule="incomplete",
                event_type=None,
                index=self._count,
                ids=[i for _, ids in still for i in ids],
                detail=f"the stream ended inside run{self._run_label()} without RUN_FINISHED "
                "or RUN_ERROR" + (f" (still open: {_describe(still)})" if still else ""),
                hint=f"end run{self._run_label()} with "
                + (f"{self._closing_steps()}, then " if still else "")
                + "RUN_FINISHED, or with RUN_ERROR (if the capture was cut short, record it "
                "again)",
            )

    # -- the rules -------------------------------------------------------------------------

    def _step(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        if self._phase != _RUNNING:
            self._check_phase(kind, index, original)
        handler = self._handlers.get(kind)
        if handler is not None:
            handler(event, kind, index, original, undo)
        if kind in _ATTRIBUTED:
            self._owners.check(event, kind, index, original, undo, self._subagents)

    def _check_phase(self, kind: str, index: int, original: str) -> None:
        """Rules 1-3: which events may come before, between and after runs (called only
        outside a run)."""
        phase = self._phase
        if phase == _IDLE:
            if kind != "RUN_STARTED" and kind != "RUN_ERROR":
                raise ProtocolViolation(
                    rule="not-started",
                    event_type=original,
                    index=index,
                    detail="a stream must begin with RUN_STARTED (or RUN_ERROR); "
                    f"send RUN_STARTED before {original}",
                    hint=f"emit RUN_STARTED before this {original} (a stream opens with a run)",
                )
        elif phase == _FINISHED:
            if kind != "RUN_ERROR" and kind != "RUN_STARTED":
                raise ProtocolViolation(
                    rule="run-ended",
                    event_type=original,
                    index=index,
                    detail=f"the run{self._run_label()} already finished with RUN_FINISHED; "
                    "only RUN_ERROR or a new RUN_STARTED may follow",
                    hint=f"move this {original} before RUN_FINISHED, or start a new run with "
                    f"RUN_STARTED before it",
                )
        elif kind != "RUN_STARTED":
            raise ProtocolViolation(
                rule="run-ended",
                event_type=original,
                index=index,
                detail=f"the run{self._run_label()} already ended with RUN_ERROR; "
                "only a new RUN_STARTED may follow",
                hint=f"move this {original} before RUN_ERROR, or start a new run with "
                "RUN_STARTED before it",
            )

    def _run_label(self) -> str:
        return f' "{self._run_id}"' if self._run_id is not None else ""

    def _run_started(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        run_id = event.get("runId")
        if self._phase == _RUNNING:
            raise ProtocolViolation(
                rule="duplicate-run-started",
                event_type=original,
                index=index,
                ids=[str(run_id)] if run_id is not None else (),
                detail=f"RUN_STARTED while run{self._run_label()} is still active; end it "
                "with RUN_FINISHED or RUN_ERROR before starting another",
                hint=f"emit RUN_FINISHED (or RUN_ERROR) for run{self._run_label()} before this "
                "RUN_STARTED, or drop the second RUN_STARTED",
            )
        if undo is not None:
            undo.append((self, "_phase", self._phase))
            undo.append((self, "_run_id", self._run_id))
            for attr, _, _ in _BLOCKS:
                undo.append((self, attr, getattr(self, attr)))
            undo.append((self, "_ended", self._ended))
            undo.append((self, "_owners", self._owners))
        if self._phase != _IDLE:
            self._new_run_books()
        self._phase = _RUNNING
        self._run_id = run_id if type(run_id) is str else None
        run_input = event.get("input")
        if isinstance(run_input, Mapping):
            messages = run_input.get("messages")
            self._owners.learn_messages(messages, False, undo)
            if self._strict:
                self._learn_input_calls(messages, index, undo)

    def _learn_input_calls(self, messages: Any, index: int, undo: Any) -> None:
        """Strict mode: the tool calls a run's input names (an assistant message's
        ``toolCalls[].id``, a tool message's ``toolCallId``) were made in an earlier run, so a
        TOOL_CALL_RESULT may answer them."""
        if not isinstance(messages, list):
            return
        seen = self._tools_seen
        for message in messages:
            if not isinstance(message, Mapping):
                continue
            named = [message.get("toolCallId")]
            calls = message.get("toolCalls")
            if isinstance(calls, list):
                named.extend(c.get("id") for c in calls if isinstance(c, Mapping))
            for ident in named:
                if type(ident) is str and ident not in seen:
                    undo.append((seen, ident, _ABSENT))
                    seen[ident] = index

    def _run_finished(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        still = self._open_summary()
        if still:
            raise ProtocolViolation(
                rule="open-at-finish",
                event_type=original,
                index=index,
                ids=[i for _, ids in still for i in ids],
                detail=f"RUN_FINISHED while still open: {_describe(still)}; close them first "
                "(or end the run with RUN_ERROR)",
                hint=f"emit {self._closing_steps()} before RUN_FINISHED, or end the run with "
                "RUN_ERROR instead",
            )
        if undo is not None:
            undo.append((self, "_phase", self._phase))
        self._phase = _FINISHED

    def _run_error(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        if undo is not None:
            undo.append((self, "_phase", self._phase))
        self._phase = _ERRORED

    def _closing_steps(self, limit: int = 4) -> str:
        """The END events that would close what is open, innermost (latest opened) first."""
        opened = sorted(
            (
                (at, _BLOCK_END[attr], ident)
                for attr, _, _ in _BLOCKS
                for ident, at in getattr(self, attr).items()
            ),
            reverse=True,
        )
        steps = [f'{end} "{ident}"' for _, end, ident in opened[:limit]]
        more = f" and {len(opened) - limit} more END event(s)" if len(opened) > limit else ""
        return ", ".join(steps) + more

    def _open_summary(self) -> list[tuple[str, list[str]]]:
        return [
            (name, list(opened)) for attr, name, _ in _BLOCKS if (opened := getattr(self, attr))
        ]

    def _open(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        attr = _OPENERS[kind]
        ident = _str_field(event, _BLOCK_INFO[attr][1], kind, index)
        self._open_ident(attr, ident, index, original, undo)

    def _open_ident(self, attr: str, ident: str, index: int, original: str, undo: Any) -> None:
        name = _BLOCK_INFO[attr][0]
        opened: dict[str, int] = getattr(self, attr)
        if ident in opened:
            if original in CHUNK_TYPES:
                block = _CHUNK_BLOCK[attr]
                raise _chunk_after_start(original, index, block, ident, opened[ident])
            raise ProtocolViolation(
                rule="duplicate-start",
                event_type=original,
                index=index,
                ids=(ident,),
                detail=f'{name} "{ident}" is already open (started at #{opened[ident]}); '
                f"end it before starting it again",
                hint=f'emit {_BLOCK_END[attr]} for "{ident}" before this {original}, or give '
                f"the new {name} another {'name' if attr == '_steps' else 'id'}",
            )
        if undo is not None:
            undo.append((opened, ident, _ABSENT))
        opened[ident] = index
        if attr == "_tools" and ident not in self._tools_seen:
            if undo is not None:
                undo.append((self._tools_seen, ident, _ABSENT))
            self._tools_seen[ident] = index

    def _not_open(
        self, attr: str, ident: str, index: int, original: str, kind: str
    ) -> ProtocolViolation:
        name, _ = _BLOCK_INFO[attr]
        start = _BLOCK_START[attr]
        ended = self._ended[attr].get(ident)
        closing = kind in _CLOSERS
        if ended is None:
            detail = f'{name} "{ident}" was never opened'
            if closing:
                hint = f'emit {start} for "{ident}" before its {kind}, or drop the {kind}'
            else:
                what = "arguments" if kind == "TOOL_CALL_ARGS" else "content"
                noun = "call" if attr == "_tools" else name
                hint = (
                    f'emit {start} for "{ident}" before its {what}, or use the id of '
                    f"a {noun} that is open"
                )
        else:
            detail = f'{name} "{ident}" is not open: it ended at #{ended}'
            if closing and ended == index:
                # Closed by this very event: it first ended the pending chunk message.
                hint = (
                    f'drop this {kind}: {name} "{ident}" came from chunks and ends by itself at '
                    "the next event that is not one of its chunks"
                )
            elif closing:
                hint = f'drop this {kind} for "{ident}": the {name} already ended at #{ended}'
            else:
                hint = (
                    f'move this {original} before the end of "{ident}" at #{ended}, or reopen '
                    f"it with {start}"
                )
        return ProtocolViolation(
            rule="not-open",
            event_type=original,
            index=index,
            ids=(ident,),
            detail=detail,
            hint=hint,
        )

    def _continue(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        attr = _CONTINUERS[kind]
        ident = _str_field(event, _BLOCK_INFO[attr][1], kind, index)
        if ident not in getattr(self, attr):
            raise self._not_open(attr, ident, index, original, kind)

    def _close(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        attr = _CLOSERS[kind]
        ident = _str_field(event, _BLOCK_INFO[attr][1], kind, index)
        self._close_ident(attr, ident, index, original, kind, undo)

    def _close_ident(
        self, attr: str, ident: str, index: int, original: str, kind: str, undo: Any
    ) -> None:
        opened: dict[str, int] = getattr(self, attr)
        started = opened.pop(ident, None)
        if started is None:
            raise self._not_open(attr, ident, index, original, kind)
        ended = self._ended[attr]
        if undo is not None:
            undo.append((opened, ident, started))
            undo.append((ended, ident, ended.get(ident, _ABSENT)))
        ended[ident] = index

    # Steps are keyed by owner and name: a subagent's step "a" is not the parent's step "a".

    def _step_started(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        name = _str_field(event, "stepName", kind, index)
        self._open_ident(
            "_steps", _step_key(name, event.get("subagentRunId")), index, original, undo
        )

    def _step_finished(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        name = _str_field(event, "stepName", kind, index)
        owner = event.get("subagentRunId")
        key = _step_key(name, owner)
        if key not in self._steps:
            for other in self._steps:
                if _step_name(other) == name:
                    raise ProtocolViolation(
                        rule="subagent-mismatch",
                        event_type=original,
                        index=index,
                        ids=(name,),
                        detail=f'step "{name}" is finished by '
                        f"{_step_owner_label(owner)} but is open under "
                        f"{_step_owner_label(_step_owner(other))}; a step must be finished by "
                        "whoever started it",
                        hint=f"give this STEP_FINISHED the subagentRunId of the STEP_STARTED "
                        f'of "{name}" (or none, for the parent agent\'s step)',
                    )
        self._close_ident("_steps", key, index, original, kind, undo)

    def _tool_result(
        self, event: Mapping[str, Any], kind: str, index: int, original: str, undo: Any
    ) -> None:
        ident = _str_field(event, "toolCallId", kind, index)
        if not self._strict:
            return
        if ident not in self._tools_seen:
            raise ProtocolViolation(
                rule="unknown-id",
                event_type=original,
                index=index,
                ids=(ident,),
                detail=f'tool call "{ident}" was never started; a TOOL_CALL_RESULT must '
                "answer a call opened with TOOL_CALL_START",
                hint=f'emit TOOL_CALL_START and TOOL_CALL_END for "{ident}" before its '
                "TOOL_CALL_RESULT, or use the toolCallId of a call made earlier in the stream",
            )
        started = self._tools.get(ident)
        if started is not None:
            raise ProtocolViolation(
                rule="out-of-order",
                event_type=original,
                index=index,
                ids=(ident,),
                detail=f'the result of tool call "{ident}" arrived before its TOOL_CALL_END '
                f"(the call is open since #{started}); send TOOL_CALL_END first",
                hint=f'emit TOOL_CALL_END for "{ident}" before its TOOL_CALL_RESULT',
            )


_ATTRIBUTED = frozenset(
    {
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "REASONING_ENCRYPTED_VALUE",
        "ACTIVITY_SNAPSHOT",
        "ACTIVITY_DELTA",
        "MESSAGES_SNAPSHOT",
        "SUBAGENT_STARTED",
        "SUBAGENT_FINISHED",
        "SUBAGENT_ERROR",
    }
)
_STEP_OWNER = " (subagent '"


def _step_key(name: str, owner: Any) -> str:
    """A step's key in ``open_steps``: its name, or ``name (subagent 'id')`` for a subagent's."""
    return name if owner is None else f"{name}{_STEP_OWNER}{owner}')"


def _step_name(key: str) -> str:
    return key.split(_STEP_OWNER, 1)[0]


def _step_owner(key: str) -> str | None:
    return key[:-2].split(_STEP_OWNER, 1)[1] if _STEP_OWNER in key else None


def _step_owner_label(owner: str | None) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


def _unknown_type_warning(kind: object, index: int) -> str:
    if type(kind) is not str:
        return f'event #{index} has no "type" string; the reference client drops it'
    extra = ""
    if kind.startswith("THINKING_"):
        extra = " (THINKING_* events left the protocol in 1.0: use REASONING_*)"
    return f"{kind} #{index}: unknown event type{extra}; the reference client drops it"


def _describe(still: list[tuple[str, list[str]]]) -> str:
    return "; ".join(f"{name} {_quote(ids)}" for name, ids in still)


def _unknown_type(event: Mapping[str, Any], kind: object, index: int) -> NoReturn:
    if type(kind) is not str:
        raise EventDecodeError(
            'the event has no "type" string; every AG-UI event names its type, '
            'e.g. {"type": "RUN_STARTED", ...}',
            index=index,
            field="type",
        )
    hint = ""
    if kind.startswith("THINKING_"):
        hint = " (THINKING_* events left the protocol in 1.0: use REASONING_*)"
    raise EventDecodeError(
        f"unknown event type {kind!r}{hint}", index=index, event_type=kind, field="type"
    )


def verify_stream(
    events: Iterable[EventLike],
    mode: Mode = "client",
    *,
    assume_running: bool = False,
    input: Any = None,
) -> None:
    """Check a whole stream; raises the first violation (end-of-stream rules included).

    ``input`` is the run's input when the stream's ``RUN_STARTED`` does not carry it (see
    :meth:`Verifier.learn_input`).
    """
    require_stream(events, "verify_stream")
    verifier = Verifier(mode, assume_running=assume_running)
    if input is not None:
        verifier.learn_input(input)
    for event in events:
        verifier.feed(event)
    verifier.finish()
