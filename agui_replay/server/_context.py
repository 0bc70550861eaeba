"""The run context: one run's request, typed state, ids and event sink.

An agent gets a :class:`RunContext` and emits through it. ``RunContext.new`` is the unit-test
harness: it hands back the context and the receiving end of its events, and emits no
``RUN_STARTED`` (that is the run driver's job).

>>> ctx, events = RunContext.new(run_input("t", "r"))
>>> ctx.say("Hello from Python.")
'r-msg-1'
>>> [(e.type.value, e.message_id) for e in events.drain()]  # doctest: +NORMALIZE_WHITESPACE
[('TEXT_MESSAGE_START', 'r-msg-1'), ('TEXT_MESSAGE_CONTENT', 'r-msg-1'),
 ('TEXT_MESSAGE_END', 'r-msg-1')]
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, overload

from ag_ui.core import (
    BaseEvent,
    Context,
    Message,
    ResumeEntry,
    RunAgentInput,
    Tool,
    UserMessage,
)
from ag_ui.core import Interrupt as CoreInterrupt
from pydantic import TypeAdapter

from agui_replay._compat import coerce_input
from agui_replay._eventtypes import UNORDERED_TYPES
from agui_replay.errors import AgentError, BlockOpenError
from agui_replay.events import EventLike, event_type, parse_event
from agui_replay.server._cancel import CancellationToken
from agui_replay.server._handles import (
    MessageHandle,
    ReasoningHandle,
    StepGuard,
    ToolCallHandle,
    _Block,
)
from agui_replay.server._outcome import Interrupted
from agui_replay.server._predictive import (
    PredictState,
    ResumedToolCall,
    predictions_for,
    request_confirmation,
    resumed_tool_call,
)
from agui_replay.server._run_ids import MessageId, RunIds, ToolCallId
from agui_replay.server._runstate import RunState, StateAccess
from agui_replay.server._sink import EventReceiver, EventSink
from agui_replay.state import decode_state, encode_state
from agui_replay.verify import Verifier

__all__ = ["RunContext", "run_input"]

S = TypeVar("S")
T = TypeVar("T")
B = TypeVar("B", bound="_Block[Any]")

_TEXT_ROLES = ("assistant", "developer", "system", "user")
_MESSAGE_ADAPTER: TypeAdapter[Any] = TypeAdapter(Message)


def run_input(
    thread_id: str = "thread",
    run_id: str = "run",
    *,
    state: Any = None,
    messages: Iterable[Message | Mapping[str, Any] | str] = (),
    tools: Iterable[Tool | Mapping[str, Any]] = (),
    context: Iterable[Context | Mapping[str, Any]] = (),
    resume: Iterable[ResumeEntry | Mapping[str, Any]] | None = None,
    forwarded_props: Any = None,
    parent_run_id: str | None = None,
) -> RunAgentInput:
    """A short ``RunAgentInput`` constructor for tests.

    A ``str`` in ``messages`` becomes a user message with id ``"user-<n>"``; ``state`` may be a
    typed value (pydantic model, dataclass), which is encoded to JSON.

    >>> run_input("t", "r", messages=["add milk"]).messages[0].content
    'add milk'
    """
    built: list[Any] = []
    for index, message in enumerate(messages, start=1):
        if isinstance(message, str):
            built.append(UserMessage(id=f"user-{index}", content=message))
        elif isinstance(message, Mapping):
            built.append(_MESSAGE_ADAPTER.validate_python(dict(message)))
        else:
            built.append(message)
    return RunAgentInput(
        thread_id=thread_id,
        run_id=run_id,
        parent_run_id=parent_run_id,
        state=encode_state(state) if state is not None else None,
        messages=built,
        tools=[t if isinstance(t, Tool) else Tool.model_validate(dict(t)) for t in tools],
        context=[c if isinstance(c, Context) else Context.model_validate(dict(c)) for c in context],
        forwarded_props=forwarded_props,
        resume=(
            [
                r if isinstance(r, ResumeEntry) else ResumeEntry.model_validate(dict(r))
                for r in resume
            ]
            if resume is not None
            else None
        ),
    )


class RunContext(StateAccess[S]):
    """The request, the typed state, the ids and the event sink of one run.

    Build one with :meth:`new` in a unit test; the run driver builds it for an agent.
    """

    def __init__(
        self,
        input: RunAgentInput,
        state: S,
        *,
        state_type: Any,
        sink: EventSink,
        predict_state: PredictState | None = None,
    ) -> None:
        self._input = input
        self._run_state: RunState[S] = RunState(state, state_type)
        self._sink = sink
        self._ids = RunIds(input.run_id)
        self._block: _Block[S] | None = None
        self._steps: list[StepGuard[S]] = []
        self._predict_state = predict_state
        self._resumed_interrupts: set[str] = set()

    # -- the harness ----------------------------------------------------------------------

    @overload
    @classmethod
    def new(
        cls,
        input: RunAgentInput | Mapping[str, Any],
        state_type: type[T],
        *,
        cancellation: CancellationToken | None = None,
        predict_state: PredictState | Mapping[str, Any] | None = None,
        require_confirmation: bool | None = None,
    ) -> tuple[RunContext[T], EventReceiver]: ...

    @overload
    @classmethod
    def new(
        cls,
        input: RunAgentInput | Mapping[str, Any],
        state_type: None = None,
        *,
        cancellation: CancellationToken | None = None,
        predict_state: PredictState | Mapping[str, Any] | None = None,
        require_confirmation: bool | None = None,
    ) -> tuple[RunContext[dict[str, Any]], EventReceiver]: ...

    @classmethod
    def new(
        cls,
        input: RunAgentInput | Mapping[str, Any],
        state_type: Any = None,
        *,
        cancellation: CancellationToken | None = None,
        predict_state: PredictState | Mapping[str, Any] | None = None,
        require_confirmation: bool | None = None,
    ) -> tuple[RunContext[Any], EventReceiver]:
        """A context and the receiving end of its events, for unit tests.

        Emits no ``RUN_STARTED``. Raises :class:`~agui_replay.errors.StateDecodeError` (code
        ``SERIALIZATION``) when ``input.state`` does not fit ``state_type``; ``null`` and ``{}``
        give the type's default. ``state_type`` defaults to ``dict``. ``predict_state`` and
        ``require_confirmation`` turn on predictive state (see
        :mod:`agui_replay.server._predictive`).
        """
        config = PredictState.coerce(predict_state, require_confirmation=require_confirmation)
        model = coerce_input(input)
        kind = dict if state_type is None else state_type
        state = decode_state(model.state, kind)
        sink = EventSink(
            verifier=Verifier("strict", assume_running=True),
            token=cancellation if cancellation is not None else CancellationToken(),
        )
        ctx = cls(model, state, state_type=kind, sink=sink, predict_state=config)
        return ctx, EventReceiver(sink)

    # -- the request ----------------------------------------------------------------------

    @property
    def input(self) -> RunAgentInput:
        """The whole request."""
        return self._input

    @property
    def thread_id(self) -> str:
        return self._input.thread_id

    @property
    def run_id(self) -> str:
        return self._input.run_id

    @property
    def parent_run_id(self) -> str | None:
        return self._input.parent_run_id

    @property
    def messages(self) -> Sequence[Message]:
        """The conversation so far, oldest first."""
        return self._input.messages

    @property
    def tools(self) -> Sequence[Tool]:
        """The tools the client offers for this run."""
        return self._input.tools or []

    def tool(self, name: str) -> Tool | None:
        """One offered tool by name, or ``None``."""
        return next((tool for tool in self.tools if tool.name == name), None)

    @property
    def context(self) -> Sequence[Context]:
        """Ambient context entries."""
        return self._input.context or []

    @property
    def forwarded_props(self) -> Any:
        return self._input.forwarded_props

    def last_user_text(self) -> str | None:
        """The text of the last user message (``None`` when there is none)."""
        for message in reversed(self._input.messages):
            if isinstance(message, UserMessage):
                content = message.content
                if isinstance(content, str):
                    return content
                return "".join(getattr(part, "text", "") for part in content)
        return None

    def resume(self) -> Sequence[ResumeEntry]:
        """The client's answers to the interrupts a previous run paused on (often empty)."""
        return self._input.resume or []

    def resume_for(self, interrupt_id: str) -> ResumeEntry | None:
        """The answer to one interrupt, by its id."""
        return next((e for e in self.resume() if e.interrupt_id == interrupt_id), None)

    @property
    def is_resume(self) -> bool:
        """Whether this request answers interrupts."""
        return bool(self._input.resume)

    @property
    def predict_state(self) -> PredictState | None:
        """The run's predictive-state configuration (``None``: off)."""
        return self._predict_state

    def resumed_tool_call(self, name: str | None = None) -> ResumedToolCall[S] | None:
        """Open again the next tool call a previous run paused on for confirmation and this
        run answers (``None`` when there is none left); ``name`` picks calls to one tool.

        ``call.approved`` says what the human decided; a rejected call has already restored
        the state it predicted. See :mod:`agui_replay.server._predictive`.
        """
        return resumed_tool_call(self, name)

    def _request_confirmation(
        self, handle: ToolCallHandle[S], message: str | None, *, response_schema: Any
    ) -> Interrupted:
        # For ToolCallHandle.request_confirmation: the handles do not import predictive state.
        return request_confirmation(handle, message, response_schema=response_schema)

    # -- cancellation ---------------------------------------------------------------------

    @property
    def cancellation(self) -> CancellationToken:
        """The run's cancellation token (the HTTP endpoint trips it on disconnect)."""
        return self._sink.token

    @property
    def cancelled(self) -> bool:
        """Whether the run has been cancelled."""
        return self._sink.token.cancelled

    def check_cancelled(self) -> None:
        """Raise :class:`RunCancelled` once the run is cancelled."""
        self._sink.token.raise_if_cancelled()

    async def until_cancelled(self, awaitable: Awaitable[T]) -> T | None:
        """Await ``awaitable`` unless the run is cancelled first (then ``None``).

        The way to make a long model call stop when the client goes away.
        """
        if self.cancelled:
            if inspect.iscoroutine(awaitable):
                awaitable.close()
            return None
        work: asyncio.Future[T] = asyncio.ensure_future(awaitable)
        waiter: asyncio.Future[Any] = asyncio.ensure_future(self._sink.token.wait())
        racers: set[asyncio.Future[Any]] = {work, waiter}
        try:
            await asyncio.wait(racers, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            if not work.done():
                work.cancel()
        if work.done() and not work.cancelled():
            return work.result()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await work
        return None

    # -- ids ------------------------------------------------------------------------------

    def new_message_id(self) -> MessageId:
        """A fresh ``{run}-msg-{n}`` id (advances the shared message counter)."""
        return self._ids.next_message()

    def new_tool_call_id(self) -> ToolCallId:
        """A fresh ``{run}-call-{n}`` id."""
        return self._ids.next_tool_call()

    # -- block bookkeeping (the Python stand-in for the borrow checker) ---------------------

    def _state_parts(self) -> tuple[RunState[S], EventSink]:
        return self._run_state, self._sink

    def _refuse_if_open(self, what: str) -> None:
        block = self._block
        if block is not None and not block.ended:
            raise BlockOpenError(
                f"cannot open {what}: {block.describe()} is still open. End it first with "
                f".end() (or open it in a `with` block so it ends itself), then open the next "
                f"one; only one message, reasoning block or tool call is open at a time. "
                f"Unordered events (STATE_*, ACTIVITY_*, CUSTOM, RAW) may still go out through "
                f"the open handle."
            )

    def _opened(self, block: B) -> B:
        """Emit ``block``'s opening events, then hold it as the open block."""
        block._open()
        self._block = block
        return block

    def _release(self, block: _Block[Any]) -> None:
        if self._block is block:
            self._block = None

    def _release_step(self, step: StepGuard[Any]) -> None:
        if step in self._steps:
            self._steps.remove(step)

    def _close_open(self) -> None:
        """End whatever agent code left open, innermost first, swallowing errors."""
        if self._block is not None:
            self._block.close_quietly()
        for step in reversed(list(self._steps)):
            step.close_quietly()

    @property
    def open_block(self) -> MessageHandle[S] | ReasoningHandle[S] | ToolCallHandle[S] | None:
        """The open message, reasoning block or tool call, if any."""
        block = self._block
        if isinstance(block, (MessageHandle, ReasoningHandle, ToolCallHandle)):
            return block
        return None

    # -- emitting -------------------------------------------------------------------------

    def emit(self, event: EventLike) -> BaseEvent:
        """Emit any event as it is: the escape hatch under the typed emitters.

        Verified like everything else. While a block is open only unordered events pass.
        """
        model = parse_event(event)
        kind = event_type(model)
        block = self._block
        if block is not None and not block.ended and kind not in UNORDERED_TYPES:
            self._refuse_if_open(f"{kind} through ctx.emit()")
        return self._sink.emit(model)

    def assistant_message(self) -> MessageHandle[S]:
        """Open an assistant message under a fresh id (``TEXT_MESSAGE_START``)."""
        return self.message("assistant")

    def message(self, role: str) -> MessageHandle[S]:
        """Open a message with ``role`` ("assistant", "user", "system", "developer")."""
        self._refuse_if_open(f"a new {role} message")
        self._check_role(role)
        return self._opened(MessageHandle(self, self.new_message_id(), role))

    def message_with_id(self, id: str, role: str = "assistant") -> MessageHandle[S]:
        """Open a message under an id you choose (the counter does not advance)."""
        self._refuse_if_open(f'message "{id}"')
        self._check_role(role)
        return self._opened(MessageHandle(self, MessageId(id), role))

    def say(self, text: str) -> MessageId:
        """Emit a whole assistant message (start, one content, end); returns its id."""
        with self.assistant_message() as message:
            message.delta(text)
        return message.id

    def reasoning(self) -> ReasoningHandle[S]:
        """Open a reasoning block under a fresh id (``REASONING_START``, message start)."""
        self._refuse_if_open("a reasoning block")
        return self._opened(ReasoningHandle(self, self.new_message_id()))

    def reasoning_with_id(self, id: str) -> ReasoningHandle[S]:
        """Open a reasoning block under an id you choose."""
        self._refuse_if_open(f'reasoning block "{id}"')
        return self._opened(ReasoningHandle(self, MessageId(id)))

    def think(self, text: str) -> MessageId:
        """Emit a whole reasoning block (five events); returns its id."""
        with self.reasoning() as reasoning:
            reasoning.delta(text)
        return reasoning.id

    def tool_call(self, name: str, *, parent_message_id: str | None = None) -> ToolCallHandle[S]:
        """Open a call to ``name`` under a fresh ``{run}-call-{n}`` id (``TOOL_CALL_START``)."""
        self._refuse_if_open(f'a tool call to "{name}"')
        return self._open_tool_call(self.new_tool_call_id(), name, parent_message_id)

    def tool_call_with_id(
        self, id: str, name: str, *, parent_message_id: str | None = None
    ) -> ToolCallHandle[S]:
        """Open a call to ``name`` under an id you choose."""
        self._refuse_if_open(f'tool call "{id}" ({name})')
        return self._open_tool_call(ToolCallId(id), name, parent_message_id)

    def step(self, name: str) -> StepGuard[S]:
        """Open a named step (``STEP_STARTED``); a scope other blocks open inside."""
        self._refuse_if_open(f'step "{name}"')
        guard = StepGuard(self, name)
        guard._open()
        self._steps.append(guard)
        return guard

    def interrupt(self, *interrupts: CoreInterrupt | Mapping[str, Any]) -> Interrupted:
        """The outcome that pauses the run on these interrupts: ``return ctx.interrupt(...)``."""
        if not interrupts:
            raise AgentError(
                "an interrupt outcome needs at least one Interrupt(id, reason, ...)",
                code="PROTOCOL",
            )
        built = [
            i if isinstance(i, CoreInterrupt) else CoreInterrupt.model_validate(dict(i))
            for i in interrupts
        ]
        return Interrupted(built)

    # -- opening --------------------------------------------------------------------------

    @staticmethod
    def _check_role(role: str) -> None:
        if role not in _TEXT_ROLES:
            raise AgentError(
                f"a text message role is one of {', '.join(_TEXT_ROLES)}, not {role!r}; "
                f"tool results go through ctx.tool_call(...).result(...)",
                code="PROTOCOL",
            )

    def _open_tool_call(
        self, id: ToolCallId, name: str, parent_message_id: str | None
    ) -> ToolCallHandle[S]:
        # The result's message id is taken now, so ids follow the order calls opened in.
        handle = ToolCallHandle(self, id, name, self.new_message_id(), parent_message_id)
        handle._prediction = predictions_for(self._predict_state, handle)
        return self._opened(handle)

    def __repr__(self) -> str:
        return f"<RunContext thread={self.thread_id!r} run={self.run_id!r}>"
