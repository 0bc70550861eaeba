"""Handles for the bracketed constructs: a text message, a reasoning block, a tool call, a step.

Opening a handle emits the opening event; ``end()`` — or leaving its ``with`` block, with or
without an exception — emits the terminator. One message, reasoning block or tool call is open
at a time: opening a second one while one is open raises
:class:`~agui_replay.errors.BlockOpenError` at once, before anything is emitted.

>>> from agui_replay.server import RunContext, run_input
>>> ctx, events = RunContext.new(run_input("t", "r"))
>>> with ctx.assistant_message() as message:
...     message.delta("Hello")
...     message.delta(", world")
>>> [e.type.value for e in events.drain()]
['TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END']
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ag_ui.core import (
    BaseEvent,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    StepFinishedEvent,
    StepStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic_core import to_jsonable_python

from agui_replay._eventtypes import UNORDERED_TYPES
from agui_replay.errors import BlockOpenError, HandleClosedError
from agui_replay.events import EventLike, event_type, parse_event
from agui_replay.server._run_ids import MessageId, ToolCallId
from agui_replay.server._runstate import RunState, StateAccess
from agui_replay.server._sink import EventSink

if TYPE_CHECKING:
    from agui_replay.server._context import RunContext
    from agui_replay.server._outcome import Interrupted

__all__ = [
    "HandleClosedError",
    "MessageHandle",
    "ReasoningHandle",
    "StepGuard",
    "ToolCallHandle",
]

S = TypeVar("S")
T = TypeVar("T")
H = TypeVar("H", bound="_Scope[Any]")


class ArgumentPrediction(Protocol):
    """What a tool call asks of the predictive state attached to it.

    The run context attaches one (a :class:`~agui_replay.server._predictive.CallPrediction`)
    when ``predict_state`` maps the call's tool; this module knows only these methods, so the
    handles do not depend on predictive state.
    """

    def feed(self, fragment: str) -> None:
        """A fragment of the arguments arrived."""

    def guard_result(self) -> None:
        """Raise when the tool must not report a result yet (confirmation pending)."""

    def commit(self) -> None:
        """The tool finished: publish the final state."""

    def commits_on_end(self) -> bool:
        """Whether ending the call unanswered publishes the final state."""

    def discard(self) -> None:
        """Undo what was predicted."""


def _add_note(error: BaseException, note: str) -> None:
    add_note = getattr(error, "add_note", None)  # Python >= 3.11
    if add_note is not None:
        add_note(note)


def _compact_json(value: Any) -> str:
    """``value`` as compact JSON, non-ASCII kept (what serde_json writes)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    plain = to_jsonable_python(value, by_alias=True)
    return json.dumps(plain, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


class _Scope(StateAccess[S]):
    """What a step and a block share: ended once, and a ``with`` block that ends them."""

    _ctx: RunContext[S]
    _ended: bool

    @property
    def ended(self) -> bool:
        """Whether the terminator has gone out (through ``end()``, ``with`` or the driver)."""
        return self._ended

    def describe(self) -> str:
        raise NotImplementedError

    def _finish(self) -> None:
        raise NotImplementedError

    def close_quietly(self) -> None:
        """End if still open, swallowing any error (used on the way out of a failing run)."""
        if self._ended:
            return
        # There is a more important error on its way out (or the run is ending anyway).
        with contextlib.suppress(Exception):
            self._finish()

    def __enter__(self: H) -> H:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._ended:
            return
        if exc is None:
            self._finish()
            return
        try:
            self._finish()
        except Exception as close_error:
            # Closing never hides the error that is already on its way out.
            _add_note(exc, f"while closing {self.describe()}: {close_error}")


class _Block(_Scope[S]):
    """What a message, a reasoning block and a tool call share."""

    kind = "block"

    def __init__(self, ctx: RunContext[S], id: str) -> None:
        self._ctx = ctx
        # A plain str, made once: every event of the block carries it.
        self._id = str(id)
        self._ended = False

    def describe(self) -> str:
        return f'{self.kind} "{self._id}"'

    def _open(self) -> None:
        """Emit the opening events (the run context calls it, then holds the block)."""
        raise NotImplementedError

    def _live(self, action: str) -> EventSink:
        if self._ended:
            raise HandleClosedError(
                f"{self.describe()} already ended, so {action} has nothing to act on; "
                f"open a new one from the run context instead"
            )
        return self._ctx._sink

    def _state_parts(self) -> tuple[RunState[S], EventSink]:
        sink = self._live("the state methods")
        return self._ctx._run_state, sink

    def _close_events(self) -> list[BaseEvent]:
        raise NotImplementedError

    def _finish(self) -> None:
        """Emit the terminators and release the context, exactly once.

        Terminators go out even after cancellation, so a cancelled run still gets a balanced
        stream; the agent meets the cancellation at its next opening or content event.
        """
        sink = self._live("end()")
        self._ended = True
        self._ctx._release(self)
        first_error: BaseException | None = None
        for event in self._close_events():
            try:
                sink.emit_closing(event)
            except Exception as error:
                # Keep closing: a reasoning block whose message end failed must still end.
                if first_error is None:
                    first_error = error
        if first_error is not None:
            raise first_error

    def end(self) -> None:
        """Emit the terminator. Raises if this handle already ended."""
        self._finish()

    # -- unordered events beside the block ------------------------------------------------

    def emit(self, event: EventLike) -> BaseEvent:
        """Emit an unordered event (STATE_*, ACTIVITY_*, CUSTOM, RAW, ...) beside this block."""
        sink = self._live("emit()")
        model = parse_event(event)
        kind = event_type(model)
        if kind not in UNORDERED_TYPES:
            raise BlockOpenError(
                f"{kind} cannot go out through the handle of {self.describe()}: a handle emits "
                f"only unordered events ({', '.join(sorted(UNORDERED_TYPES))}); end the "
                f"{self.kind} first, then emit it from the run context"
            )
        return sink.emit(model)

    def __repr__(self) -> str:
        state = "ended" if self._ended else "open"
        return f"<{type(self).__name__} {self._id!r} {state}>"


class MessageHandle(_Block[S]):
    """One open text message: ``delta(text)`` appends, ``end()`` closes.

    ``TEXT_MESSAGE_START`` has gone out by the time you hold one.
    """

    kind = "text message"

    def __init__(self, ctx: RunContext[S], id: MessageId, role: str) -> None:
        super().__init__(ctx, id)
        self.role = role

    @property
    def id(self) -> MessageId:
        """The id every event of this message carries."""
        return MessageId(self._id)

    def _open(self) -> None:
        self._ctx._sink.emit(
            TextMessageStartEvent(message_id=self._id, role=self.role)  # type: ignore[arg-type]
        )

    def delta(self, text: str) -> None:
        """Append text: one ``TEXT_MESSAGE_CONTENT``. Synchronous; nothing to await."""
        sink = self._live("delta()")
        sink.emit(TextMessageContentEvent(message_id=self._id, delta=text))

    def _close_events(self) -> list[BaseEvent]:
        return [TextMessageEndEvent(message_id=self._id)]


class ReasoningHandle(_Block[S]):
    """One open reasoning block: four events bracket its content.

    ``REASONING_START`` and ``REASONING_MESSAGE_START`` on opening; ``REASONING_MESSAGE_END``
    and ``REASONING_END`` on ``end()``.
    """

    kind = "reasoning block"

    @property
    def id(self) -> MessageId:
        """The id of the block and of the reasoning message inside it."""
        return MessageId(self._id)

    def _open(self) -> None:
        sink = self._ctx._sink
        sink.emit(ReasoningStartEvent(message_id=self._id))
        try:
            sink.emit(ReasoningMessageStartEvent(message_id=self._id, role="reasoning"))
        except BaseException:
            # The block is open on the wire; do not leave it half-open.
            with contextlib.suppress(Exception):  # the start failure is the error to report
                sink.emit_closing(ReasoningEndEvent(message_id=self._id))
            raise

    def delta(self, text: str) -> None:
        """Append reasoning text: one ``REASONING_MESSAGE_CONTENT``."""
        sink = self._live("delta()")
        sink.emit(ReasoningMessageContentEvent(message_id=self._id, delta=text))

    def encrypted_value(self, value: str) -> None:
        """Attach the provider's opaque reasoning signature (``REASONING_ENCRYPTED_VALUE``)."""
        sink = self._live("encrypted_value()")
        sink.emit(
            ReasoningEncryptedValueEvent(
                subtype="message", entity_id=self._id, encrypted_value=value
            )
        )

    def _close_events(self) -> list[BaseEvent]:
        return [
            ReasoningMessageEndEvent(message_id=self._id),
            ReasoningEndEvent(message_id=self._id),
        ]


class ToolCallHandle(_Block[S]):
    """One open tool call.

    ``args(fragment)`` streams the argument JSON as the provider does; ``result(content)`` emits
    ``TOOL_CALL_END`` then ``TOOL_CALL_RESULT``; ``end()`` alone leaves the call unanswered (a
    tool the client executes).
    """

    kind = "tool call"

    def __init__(
        self,
        ctx: RunContext[S],
        id: ToolCallId,
        name: str,
        result_message_id: MessageId,
        parent_message_id: str | None,
    ) -> None:
        super().__init__(ctx, id)
        self.name = name
        self.parent_message_id = parent_message_id
        self._result_message_id = result_message_id
        self._args: list[str] = []
        self._result_sent = False
        # Set by the run context when predict_state maps this tool (see predictive.py).
        self._prediction: ArgumentPrediction | None = None

    def describe(self) -> str:
        return f'tool call "{self._id}" ({self.name})'

    @property
    def id(self) -> ToolCallId:
        """The id every event of this call carries."""
        return ToolCallId(self._id)

    @property
    def result_message_id(self) -> MessageId:
        """The id the result's tool message will carry (taken when the call opened)."""
        return self._result_message_id

    @property
    def raw_args(self) -> str:
        """The argument text emitted so far, unparsed."""
        return "".join(self._args)

    def _open(self) -> None:
        self._ctx._sink.emit(
            ToolCallStartEvent(
                tool_call_id=self._id,
                tool_call_name=self.name,
                parent_message_id=self.parent_message_id,
            )
        )

    def args(self, fragment: str) -> None:
        """Append a fragment of the argument JSON: one ``TOOL_CALL_ARGS``."""
        sink = self._live("args()")
        sink.emit(ToolCallArgsEvent(tool_call_id=self._id, delta=fragment))
        self._args.append(fragment)
        if self._prediction is not None:
            self._prediction.feed(fragment)

    def args_json(self, value: Any) -> None:
        """Serialize ``value`` (dict, list, pydantic model, dataclass) as the arguments."""
        self.args(_compact_json(value))

    def parse_args(self, into: Callable[[Any], T] | None = None) -> Any:
        """The emitted arguments parsed as JSON (then passed to ``into``, e.g. a model's
        ``model_validate``). Fails while the arguments are still partial."""
        parsed = json.loads(self.raw_args)
        return into(parsed) if into is not None else parsed

    def encrypted_value(self, value: str) -> None:
        """Attach the provider's opaque reasoning signature for this call."""
        sink = self._live("encrypted_value()")
        sink.emit(
            ReasoningEncryptedValueEvent(
                subtype="tool-call", entity_id=self._id, encrypted_value=value
            )
        )

    def result(self, content: str) -> MessageId:
        """End the call and report its result; returns the tool message's id.

        A call that predicts state publishes its final state (a ``STATE_SNAPSHOT``) first.
        """
        self._live("result()")
        if self._prediction is not None:
            self._prediction.guard_result()
            self._prediction.commit()
        self._result_sent = True
        self._finish()
        self._ctx._sink.emit(
            ToolCallResultEvent(
                message_id=str(self._result_message_id),
                tool_call_id=self._id,
                content=content,
                role="tool",
            )
        )
        return self._result_message_id

    def result_json(self, value: Any) -> MessageId:
        """Serialize ``value`` as the call's result."""
        return self.result(_compact_json(value))

    def end(self) -> None:
        """End the call unanswered (``TOOL_CALL_END``); a call that predicts state (and needs
        no confirmation) publishes its final state first."""
        prediction = self._prediction
        if prediction is not None and not self._ended and prediction.commits_on_end():
            try:
                prediction.commit()
            except Exception:
                self.close_quietly()  # the call still ends on the wire
                raise
        self._finish()

    def discard_prediction(self) -> None:
        """Undo the state this call predicted (the tool failed): a ``STATE_SNAPSHOT`` puts
        back what the client had before, and ``result()`` then publishes no final state.
        Does nothing for a call that predicts no state."""
        self._live("discard_prediction()")
        if self._prediction is not None:
            self._prediction.discard()

    def request_confirmation(
        self, message: str | None = None, *, response_schema: Any = None
    ) -> Interrupted:
        """Pause before the tool runs: end the call unanswered and return the outcome
        (``RUN_FINISHED`` with a ``tool_call`` interrupt) for the agent to return.

        The next run answers in ``RunAgentInput.resume``; ``ctx.resumed_tool_call()`` opens
        the call again there. See :mod:`agui_replay.server._predictive`.
        """
        return self._ctx._request_confirmation(self, message, response_schema=response_schema)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None and not self._ended:
            self.end()  # the clean way out publishes the predicted final state
            return
        super().__exit__(exc_type, exc, tb)

    def _close_events(self) -> list[BaseEvent]:
        return [ToolCallEndEvent(tool_call_id=self._id)]


class StepGuard(_Scope[S]):
    """One open step (``STEP_STARTED`` has gone out; ``end()`` emits ``STEP_FINISHED``).

    A step is a scope, not a stream: messages, tool calls and other steps open inside it, and
    the guard offers the run context's emitters, so ``step.say(...)`` works as ``ctx.say(...)``.
    Leaving the ``with`` block closes whatever was left open inside the step first.
    """

    def __init__(self, ctx: RunContext[S], name: str) -> None:
        self._ctx = ctx
        self.name = name
        self._ended = False

    @property
    def ctx(self) -> RunContext[S]:
        """The run context this step belongs to."""
        return self._ctx

    def describe(self) -> str:
        return f'step "{self.name}"'

    def _state_parts(self) -> tuple[RunState[S], EventSink]:
        return self._ctx._run_state, self._ctx._sink

    def _open(self) -> None:
        self._ctx._sink.emit(StepStartedEvent(step_name=self.name))

    def _inner_open(self) -> list[StepGuard[Any] | _Block[Any]]:
        steps = self._ctx._steps
        inner: list[StepGuard[Any] | _Block[Any]] = []
        if self in steps:
            inner.extend(reversed(steps[steps.index(self) + 1 :]))
        block = self._ctx._block
        if block is not None:
            inner.insert(0, block)
        return inner

    def _finish(self) -> None:
        if self._ended:
            raise HandleClosedError(
                f"{self.describe()} already finished, so it cannot finish again; "
                f"open a new step from the run context instead"
            )
        self._ended = True
        self._ctx._release_step(self)
        self._ctx._sink.emit_closing(StepFinishedEvent(step_name=self.name))

    def end(self) -> None:
        """Emit ``STEP_FINISHED``. Refused while something opened inside the step is open."""
        if not self._ended:
            inner = self._inner_open()
            if inner:
                raise BlockOpenError(
                    f"cannot finish {self.describe()}: {inner[0].describe()} is still open "
                    f"inside it; end that first (or use `with` blocks, which close in order)"
                )
        self._finish()

    finish = end  # another name for end()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._ended:
            # What the step's body left open ends before the step does (innermost first, as
            # nested with blocks close); failures there are swallowed so the step still finishes.
            for inner in self._inner_open():
                inner.close_quietly()
        super().__exit__(exc_type, exc, tb)

    # -- the run context's emitters, so a step reads like the context it scopes -----------

    def say(self, text: str) -> MessageId:
        """See :meth:`RunContext.say`."""
        return self._ctx.say(text)

    def think(self, text: str) -> MessageId:
        """See :meth:`RunContext.think`."""
        return self._ctx.think(text)

    def assistant_message(self) -> MessageHandle[S]:
        """See :meth:`RunContext.assistant_message`."""
        return self._ctx.assistant_message()

    def message(self, role: str) -> MessageHandle[S]:
        """See :meth:`RunContext.message`."""
        return self._ctx.message(role)

    def message_with_id(self, id: str, role: str = "assistant") -> MessageHandle[S]:
        """See :meth:`RunContext.message_with_id`."""
        return self._ctx.message_with_id(id, role=role)

    def reasoning(self) -> ReasoningHandle[S]:
        """See :meth:`RunContext.reasoning`."""
        return self._ctx.reasoning()

    def reasoning_with_id(self, id: str) -> ReasoningHandle[S]:
        """See :meth:`RunContext.reasoning_with_id`."""
        return self._ctx.reasoning_with_id(id)

    def tool_call(self, name: str, *, parent_message_id: str | None = None) -> ToolCallHandle[S]:
        """See :meth:`RunContext.tool_call`."""
        return self._ctx.tool_call(name, parent_message_id=parent_message_id)

    def tool_call_with_id(
        self, id: str, name: str, *, parent_message_id: str | None = None
    ) -> ToolCallHandle[S]:
        """See :meth:`RunContext.tool_call_with_id`."""
        return self._ctx.tool_call_with_id(id, name, parent_message_id=parent_message_id)

    def step(self, name: str) -> StepGuard[S]:
        """See :meth:`RunContext.step`."""
        return self._ctx.step(name)

    def emit(self, event: EventLike) -> BaseEvent:
        """See :meth:`RunContext.emit`."""
        return self._ctx.emit(event)

    def interrupt(self, *interrupts: Any) -> Interrupted:
        """See :meth:`RunContext.interrupt`."""
        return self._ctx.interrupt(*interrupts)

    def __repr__(self) -> str:
        state = "finished" if self._ended else "open"
        return f"<StepGuard {self.name!r} {state}>"
