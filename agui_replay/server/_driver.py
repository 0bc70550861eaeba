"""The run driver: an agent and a ``RunAgentInput`` in, a stream of events out.

What one run puts on the wire:

1. ``RUN_STARTED`` (thread id and run id from the input);
2. the input state decoded into the agent's state type — ``null`` and ``{}`` give the default,
   a state that does not fit ends the run with ``RUN_ERROR`` code ``SERIALIZATION`` and the agent
   never runs;
3. whatever the agent emits, streamed as it is emitted;
4. blocks the agent left open are closed, then ``RUN_FINISHED`` (with the agent's outcome) or
   ``RUN_ERROR`` with a code: ``AGENT_ERROR`` for an exception from agent code (or the code of
   an :class:`~agui_replay.errors.AgentError`), ``PROTOCOL_VIOLATION`` for an ordering mistake,
   ``CANCELLED`` for a cancelled run, ``PROTOCOL`` for an invalid outcome.

An agent is a function (sync or async) taking the context, or an object with such a ``run``
method; it returns ``None`` or an outcome (``ctx.interrupt(...)``). A sync agent runs in a worker
thread under :func:`run_agent`, so its events still stream while it works.

>>> from agui_replay.server import run_agent_sync, run_input
>>> def greeter(ctx):
...     ctx.say("hi")
>>> events = run_agent_sync(greeter, run_input("t", "r"))
>>> [e.type.value for e in events]  # doctest: +NORMALIZE_WHITESPACE
['RUN_STARTED', 'TEXT_MESSAGE_START', 'TEXT_MESSAGE_CONTENT', 'TEXT_MESSAGE_END',
 'RUN_FINISHED']
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

from ag_ui.core import (
    BaseEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
)
from pydantic import ValidationError

from agui_replay._compat import RunFinishedCancelledOutcome, coerce_input, run_finished
from agui_replay.errors import AgentError, AguiReplayError, ProtocolViolation, UsageError
from agui_replay.server._cancel import CancellationToken, RunCancelled
from agui_replay.server._context import RunContext
from agui_replay.server._outcome import Interrupted, Success
from agui_replay.server._predictive import PredictState
from agui_replay.server._sink import EventSink
from agui_replay.state import decode_state
from agui_replay.verify import Verifier

__all__ = ["Agent", "UsageError", "error_code", "run_agent", "run_agent_sync"]

Agent = Callable[[RunContext[Any]], Any]
"""A function taking the run context, sync or async, returning ``None`` or an outcome."""

_KNOWN_CODES = frozenset(
    {
        "PROTOCOL",
        "SERIALIZATION",
        "PROTOCOL_VIOLATION",
        "CANCELLED",
        "DISCONNECTED",
        "AGENT_ERROR",
    }
)


def error_code(error: BaseException) -> str:
    """The ``RUN_ERROR.code`` for an exception that escaped agent code."""
    if isinstance(error, AgentError):
        return error.code  # the agent chose it
    if isinstance(error, (asyncio.CancelledError, RunCancelled)):
        return "CANCELLED"
    if isinstance(error, AguiReplayError) and error.code in _KNOWN_CODES:
        return error.code
    return "AGENT_ERROR"


def _error_message(error: BaseException) -> str:
    if isinstance(error, asyncio.CancelledError):
        return "the run was cancelled"
    text = str(error)
    return text if text else type(error).__name__


def _entry_point(agent: Any) -> Callable[[RunContext[Any]], Any]:
    if callable(agent):
        return agent  # type: ignore[no-any-return]
    run = getattr(agent, "run", None)
    if callable(run):
        return run  # type: ignore[no-any-return]
    raise UsageError(
        f"an agent is a function taking the run context, or an object with a run(ctx) method; "
        f"got {type(agent).__name__}"
    )


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - an object whose __call__ is async
    return call is not None and inspect.iscoroutinefunction(call)


def _predict_state(
    agent: Any, predict_state: Any, require_confirmation: bool | None
) -> PredictState | None:
    """The call's configuration, else the agent's ``predict_state`` / ``require_confirmation``
    attributes (as ``state_type``)."""
    value = predict_state if predict_state is not None else getattr(agent, "predict_state", None)
    if require_confirmation is None:
        declared = getattr(agent, "require_confirmation", None)
        require_confirmation = declared if isinstance(declared, bool) else None
    return PredictState.coerce(value, require_confirmation=require_confirmation)


def _state_type(agent: Any, state_type: Any) -> Any:
    if state_type is not None:
        return state_type
    declared = getattr(agent, "state_type", None)
    return declared if declared is not None else dict


class _Run:
    """One run's bookkeeping, shared by the sync and the async driver."""

    def __init__(
        self,
        input: RunAgentInput,
        state_type: Any,
        token: CancellationToken,
        on_push: Callable[[], None] | None = None,
        predict_state: PredictState | None = None,
    ) -> None:
        self.input = input
        self.state_type = state_type
        self.predict_state = predict_state
        self.sink = EventSink(verifier=Verifier("strict"), token=token, on_push=on_push)

    @classmethod
    def prepare(
        cls,
        agent: Any,
        input: RunAgentInput | Mapping[str, Any],
        state_type: Any,
        cancellation: CancellationToken | None,
        predict_state: PredictState | Mapping[str, Any] | None,
        require_confirmation: bool | None,
        on_push: Callable[[], None] | None = None,
    ) -> _Run:
        """A run from the drivers' arguments, each falling back to the agent's attribute."""
        return cls(
            coerce_input(input),
            _state_type(agent, state_type),
            cancellation if cancellation is not None else CancellationToken(),
            on_push=on_push,
            predict_state=_predict_state(agent, predict_state, require_confirmation),
        )

    def start(self) -> RunContext[Any] | None:
        """``RUN_STARTED`` and the state; ``None`` when the run already ended."""
        self.sink.emit_closing(
            RunStartedEvent(
                thread_id=self.input.thread_id,
                run_id=self.input.run_id,
                parent_run_id=self.input.parent_run_id,
            )
        )
        try:
            state = decode_state(self.input.state, self.state_type)
        except Exception as error:
            # The agent never runs on a state it cannot read; the client learns why.
            self._terminal(RunErrorEvent(message=str(error), code="SERIALIZATION"))
            return None
        return RunContext(
            self.input,
            state,
            state_type=self.state_type,
            sink=self.sink,
            predict_state=self.predict_state,
        )

    def finish(self, ctx: RunContext[Any], result: Any, error: BaseException | None) -> None:
        """Close what the agent left open, then the terminal event."""
        if self.sink.terminated:
            return  # the agent ended the run itself through ctx.emit
        ctx._close_open()
        if error is not None:
            self._terminal(RunErrorEvent(message=_error_message(error), code=error_code(error)))
            return
        try:
            outcome = _outcome(result)
        except AgentError as bad:
            self._terminal(RunErrorEvent(message=str(bad), code=bad.code))
            return
        self._terminal(run_finished(self.input.thread_id, self.input.run_id, outcome))

    def _terminal(self, event: BaseEvent) -> None:
        try:
            self.sink.emit_closing(event)
        except ProtocolViolation as refused:
            # RUN_FINISHED is refused while something the agent opened by hand is still open;
            # a run with no terminal event at all would be worse than one that ends badly.
            if not self.sink.terminated:
                self.sink.emit_closing(RunErrorEvent(message=str(refused), code=refused.code))


def _outcome(
    result: Any,
) -> RunFinishedSuccessOutcome | RunFinishedInterruptOutcome | RunFinishedCancelledOutcome:
    if result is None or isinstance(result, Success):
        return RunFinishedSuccessOutcome()
    if isinstance(result, Interrupted):
        if not result.interrupts:
            raise AgentError(
                "RUN_FINISHED outcome `interrupt` requires at least one interrupt",
                code="PROTOCOL",
            )
        try:
            return result.to_outcome()
        except ValidationError as error:
            raise AgentError(f"invalid interrupt outcome: {error}", code="PROTOCOL") from None
    if isinstance(
        result,
        (RunFinishedSuccessOutcome, RunFinishedInterruptOutcome, RunFinishedCancelledOutcome),
    ):
        return result
    hint = ""
    if isinstance(result, str):
        # `lambda ctx: ctx.say("hi")` returns the message id.
        hint = " (a lambda returns its last expression, e.g. the id ctx.say() gives back)"
    raise AgentError(
        f"an agent returns None (success) or an outcome such as ctx.interrupt(...), "
        f"not {type(result).__name__}{hint}",
        code="PROTOCOL",
    )


async def run_agent(
    agent: Any,
    input: RunAgentInput | Mapping[str, Any],
    *,
    state_type: Any = None,
    cancellation: CancellationToken | None = None,
    predict_state: PredictState | Mapping[str, Any] | None = None,
    require_confirmation: bool | None = None,
) -> AsyncGenerator[BaseEvent, None]:
    """Run ``agent`` and yield its events as they are emitted, ending with the terminal event.

    ``state_type`` defaults to the agent's ``state_type`` attribute, else ``dict``;
    ``predict_state`` and ``require_confirmation`` to the agent's attributes of those names
    (see :mod:`agui_replay.server._predictive`). Closing the iterator early (a client that went
    away) cancels the run.
    """
    fn = _entry_point(agent)
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    ready = asyncio.Event()

    def wake() -> None:
        if threading.get_ident() == loop_thread:
            ready.set()
        else:
            loop.call_soon_threadsafe(ready.set)

    run = _Run.prepare(
        agent, input, state_type, cancellation, predict_state, require_confirmation, on_push=wake
    )
    token = run.sink.token
    ctx = run.start()
    if ctx is None:
        for event in run.sink.drain():
            yield event
        return

    task: asyncio.Task[Any] = loop.create_task(_call(fn, ctx))
    task.add_done_callback(lambda _: ready.set())
    finished = False
    try:
        while True:
            ready.clear()
            batch = run.sink.drain()
            for event in batch:
                yield event
            if task.done():
                break
            if not batch:
                await ready.wait()
        result: Any = None
        error: BaseException | None = None
        if task.cancelled():
            error = RunCancelled()
        elif task.exception() is not None:
            error = task.exception()
        else:
            result = task.result()
        run.finish(ctx, result, error)
        for event in run.sink.drain():
            yield event
        finished = True
    finally:
        if not finished:
            # The consumer stopped reading (or was cancelled): stop the agent as well.
            token.cancel()
            if not task.done():
                task.cancel()
            # Retrieve the outcome so asyncio does not log "exception was never retrieved".
            task.add_done_callback(_consume)


def _consume(task: asyncio.Task[Any]) -> None:
    if not task.cancelled():
        task.exception()


async def _call(fn: Callable[[RunContext[Any]], Any], ctx: RunContext[Any]) -> Any:
    if _is_async(fn):
        result = fn(ctx)
    else:
        # A sync agent would block the event loop (and every other request on it); in a
        # worker thread its events stream while it works.
        result = await asyncio.to_thread(fn, ctx)
    if inspect.isawaitable(result):
        result = await result
    return result


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def run_agent_sync(
    agent: Any,
    input: RunAgentInput | Mapping[str, Any],
    *,
    state_type: Any = None,
    cancellation: CancellationToken | None = None,
    predict_state: PredictState | Mapping[str, Any] | None = None,
    require_confirmation: bool | None = None,
) -> list[BaseEvent]:
    """Run ``agent`` to completion and return every event (``predict_state`` and
    ``require_confirmation`` as in :func:`run_agent`).

    A sync agent runs in the calling thread; an async one on a private event loop (so this must
    not be called from inside a running loop — use :func:`run_agent` there).
    """
    fn = _entry_point(agent)
    if _is_async(fn) and _loop_running():
        raise UsageError(_IN_LOOP)
    run = _Run.prepare(agent, input, state_type, cancellation, predict_state, require_confirmation)
    ctx = run.start()
    if ctx is None:
        return run.sink.drain()
    result: Any = None
    error: BaseException | None = None
    try:
        if _is_async(fn):
            result = _run_coroutine(fn(ctx))
        else:
            result = fn(ctx)
            if inspect.isawaitable(result):
                result = _run_coroutine(result)
    except (Exception, RunCancelled) as raised:
        error = raised
    run.finish(ctx, result, error)
    return run.sink.drain()


_IN_LOOP = (
    "run_agent_sync() cannot run an async agent inside a running event loop; "
    "iterate `run_agent(...)` with `async for` instead"
)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _run_coroutine(awaitable: Awaitable[Any]) -> Any:
    if _loop_running():
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise UsageError(_IN_LOOP)
    return asyncio.run(_await(awaitable))
