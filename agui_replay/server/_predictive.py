"""Predictive state: a tool call's streamed arguments become the client's state as they arrive.

The ``predict_state_config`` of AG-UI framework adapters, in Python. Map a state key to a tool
argument and every ``TOOL_CALL_ARGS`` fragment of that tool is parsed as partial JSON; when the
argument's value grows, the state is published (a ``STATE_DELTA`` once the run has a baseline),
and when the tool finishes the whole state goes out as a ``STATE_SNAPSHOT``:

>>> from agui_replay.events import to_wire
>>> from agui_replay.server import RunContext, run_input
>>> ctx, events = RunContext.new(
...     run_input("t", "r", state={"notes": "Typed up from the card box in the drawer."}),
...     predict_state={"recipe": ("update_recipe", "recipe")})
>>> with ctx.tool_call("update_recipe") as call:
...     for fragment in ['{"recipe": {"title": "Carbo', 'nara", "skill', '_level": "Easy"}}']:
...         call.args(fragment)
...     _ = call.result("Recipe updated.")
>>> for event in events.drain():
...     wire = to_wire(event)
...     if wire["type"].startswith("STATE"):
...         print(wire["type"], wire.get("delta") or wire["snapshot"]["recipe"])
STATE_SNAPSHOT {'title': 'Carbo'}
STATE_DELTA [{'op': 'replace', 'path': '/recipe/title', 'value': 'Carbonara'}]
STATE_DELTA [{'op': 'add', 'path': '/recipe/skill_level', 'value': 'Easy'}]
STATE_SNAPSHOT {'title': 'Carbonara', 'skill_level': 'Easy'}

(The first publish of a run is a snapshot, and a delta goes out only when it is smaller than
the state: the run's ``StateManager`` decides, as for every other publish.)

With ``require_confirmation=True`` the agent pauses before running the tool
(``return call.request_confirmation()``); the next run answers in ``RunAgentInput.resume`` and the
agent picks the call back up with ``ctx.resumed_tool_call()``: approved, the tool runs and the
final state is published; rejected, the predicted values are discarded and a snapshot restores
what the client had before.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from ag_ui.core import AssistantMessage, ResumeEntry

from agui_replay.errors import AgentError, InvalidArgumentError
from agui_replay.server._handles import ToolCallHandle
from agui_replay.server._outcome import Interrupt, Interrupted
from agui_replay.server._partial_json import PartialJSON
from agui_replay.server._run_ids import MessageId, ToolCallId
from agui_replay.state import decode_state, encode_state

if TYPE_CHECKING:
    from agui_replay.server._context import RunContext

__all__ = [
    "CONFIRMATION_REASON",
    "WHOLE_ARGUMENTS",
    "ConfirmationStore",
    "InMemoryConfirmations",
    "PartialJSON",
    "PendingConfirmation",
    "PredictState",
    "ResumedToolCall",
    "StateFromArgument",
]

S = TypeVar("S")

WHOLE_ARGUMENTS = "*"
"""The argument name that maps the whole argument object to the state key."""

CONFIRMATION_REASON = "tool_call"
"""``Interrupt.reason`` of a confirmation pause, where the user accepts or rejects a tool call."""

_MISSING: Any = PartialJSON.NOTHING

# A confirmation interrupt's id is the call's id plus this, so a run answering it can find the
# call in its messages even when the store has no record of the pause.
_CONFIRM_SUFFIX = "-confirm"


# -- configuration -----------------------------------------------------------------------------


@dataclass(frozen=True)
class StateFromArgument:
    """One mapping: state key ``state_key`` follows argument ``argument`` of tool ``tool``
    (``"*"``: the whole argument object)."""

    state_key: str
    tool: str
    argument: str = WHOLE_ARGUMENTS

    def pick(self, arguments: Any) -> Any:
        """This mapping's value in a (partial) argument object, or ``PartialJSON.NOTHING``."""
        if self.argument == WHOLE_ARGUMENTS:
            return arguments
        if isinstance(arguments, dict):
            return arguments.get(self.argument, _MISSING)
        return _MISSING


@dataclass
class PendingConfirmation:
    """What a confirmation pause remembers until the next run answers it."""

    thread_id: str
    interrupt_id: str
    tool_call_id: str
    tool: str
    arguments: str
    parent_message_id: str | None
    rules: tuple[StateFromArgument, ...]
    previous: dict[str, Any] = field(default_factory=dict)
    """Each predicted state key's value before the prediction (absent: the key was absent)."""


class ConfirmationStore(Protocol):
    """Where paused confirmations wait for the next run (one server process by default)."""

    def put(self, record: PendingConfirmation) -> None: ...

    def take(self, thread_id: str, interrupt_id: str) -> PendingConfirmation | None: ...


class InMemoryConfirmations:
    """A bounded in-process :class:`ConfirmationStore` (oldest entries go first)."""

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._records: OrderedDict[tuple[str, str], PendingConfirmation] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, record: PendingConfirmation) -> None:
        with self._lock:
            self._records[(record.thread_id, record.interrupt_id)] = record
            while len(self._records) > self.max_entries:
                self._records.popitem(last=False)

    def take(self, thread_id: str, interrupt_id: str) -> PendingConfirmation | None:
        with self._lock:
            return self._records.pop((thread_id, interrupt_id), None)

    def __len__(self) -> int:
        return len(self._records)


_SHARED_CONFIRMATIONS = InMemoryConfirmations()

_FORMS = (
    'state key -> ("tool", "argument"), e.g. {"recipe": ("update_recipe", "recipe")}, or '
    'the adapters\' {"recipe": {"tool": "update_recipe", "tool_argument": "recipe"}}; '
    'the argument "*" maps the whole argument object'
)


class PredictState:
    """Which state keys follow which tool arguments, and whether applying needs confirmation.

    >>> config = PredictState({"recipe": ("update_recipe", "recipe"),
    ...                        "document": {"tool": "create_document", "tool_argument": "*"}})
    >>> [rule.state_key for rule in config.for_tool("update_recipe")]
    ['recipe']

    ``confirmations`` keeps paused calls until the next run answers them; the default is one
    in-memory store shared by the process, so a resumed run must reach the same server process
    (pass a store of your own to share it between processes).
    """

    def __init__(
        self,
        mapping: Mapping[str, Any] | Iterable[StateFromArgument] = (),
        *,
        require_confirmation: bool = False,
        confirmations: ConfirmationStore | None = None,
    ) -> None:
        rules = _read_rules(mapping)
        self.rules: tuple[StateFromArgument, ...] = rules
        self.require_confirmation = bool(require_confirmation)
        self.confirmations: ConfirmationStore = (
            confirmations if confirmations is not None else _SHARED_CONFIRMATIONS
        )

    @classmethod
    def coerce(
        cls, value: PredictState | Mapping[str, Any] | None, *, require_confirmation: bool | None
    ) -> PredictState | None:
        """A configuration from what a caller passed (``None`` when there is nothing to do)."""
        if value is None:
            if require_confirmation:
                raise InvalidArgumentError(
                    "require_confirmation=True needs predict_state as well: confirmation is "
                    f"asked for the tool calls that predict_state maps ({_FORMS})"
                )
            return None
        if isinstance(value, PredictState):
            if require_confirmation is None or require_confirmation == value.require_confirmation:
                return value
            return cls(
                value.rules,
                require_confirmation=require_confirmation,
                confirmations=value.confirmations,
            )
        return cls(value, require_confirmation=bool(require_confirmation))

    def for_tool(self, name: str) -> tuple[StateFromArgument, ...]:
        """The mappings that follow tool ``name`` (empty for any other tool)."""
        return tuple(rule for rule in self.rules if rule.tool == name)

    def __repr__(self) -> str:
        return (
            f"PredictState({list(self.rules)!r}, require_confirmation={self.require_confirmation})"
        )


def _read_rules(mapping: Mapping[str, Any] | Iterable[StateFromArgument]) -> tuple[Any, ...]:
    if not isinstance(mapping, Mapping):
        rules = tuple(mapping)
        for rule in rules:
            if not isinstance(rule, StateFromArgument):
                raise InvalidArgumentError(f"expected StateFromArgument entries, got {rule!r}")
        return rules
    built = []
    for key, target in mapping.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"a predict_state key is a state key (str), got {key!r}")
        tool: Any
        argument: Any
        if isinstance(target, Mapping):
            tool, argument = target.get("tool"), target.get("tool_argument", WHOLE_ARGUMENTS)
        elif isinstance(target, (tuple, list)) and len(target) == 2:
            tool, argument = target
        else:
            raise InvalidArgumentError(f"predict_state[{key!r}] = {target!r}: expected {_FORMS}")
        if not isinstance(tool, str) or not tool or not isinstance(argument, str) or not argument:
            raise InvalidArgumentError(
                f"predict_state[{key!r}] = {target!r}: the tool and the argument are "
                f"non-empty strings ({_FORMS})"
            )
        built.append(StateFromArgument(key, tool, argument))
    return tuple(built)


# -- one predicted call ------------------------------------------------------------------------


class CallPrediction:
    """The predictive side of one open tool call (attached by the run context)."""

    def __init__(
        self,
        handle: ToolCallHandle[Any],
        rules: tuple[StateFromArgument, ...],
        config: PredictState,
    ) -> None:
        self.handle = handle
        self.rules = rules
        self.config = config
        self.parser = PartialJSON()
        self.predicted = False  # whether a predicted value went out
        self.committed = False
        self.paused = False
        # The mapped keys as they were before the first prediction (absent: not in the state).
        self.previous: dict[str, Any] | None = None

    def feed(self, fragment: str) -> None:
        """Publish the state the new fragment predicts, if it predicts anything new."""
        if not self.parser.feed(fragment):
            return
        values = [(rule, rule.pick(self.parser.value)) for rule in self.rules]
        values = [(rule, value) for rule, value in values if value is not _MISSING]
        if not values:
            return
        run_state, sink = self.handle._state_parts()
        wire = _object_state(encode_state(run_state.value), self.handle)
        if self.previous is None:
            self.previous = _values_before(self.rules, wire)
        predicted = dict(wire)
        for rule, value in values:
            predicted[rule.state_key] = value
        # Through the run's StateManager: the first publish of a run is a snapshot, later ones
        # are deltas when smaller, nothing goes out when nothing changed.
        run_state._publish_json(sink, predicted)
        self.predicted = True

    def arguments(self) -> Any:
        """The complete arguments, parsed strictly (a clear error when they are not JSON)."""
        try:
            return self.parser.final()
        except ValueError as exc:
            raise AgentError(
                f"{self.handle.describe()}: the arguments are not complete JSON ({exc}); "
                f"state keys {[r.state_key for r in self.rules]} cannot take their final "
                f"value. Stream the whole argument object through call.args() first.",
                code="AGENT_ERROR",
            ) from None

    def commit(self) -> None:
        """The tool finished: the arguments become the state, sent as a ``STATE_SNAPSHOT``."""
        if self.committed:
            return
        self.committed = True
        arguments = self.arguments()
        updates = {}
        for rule in self.rules:
            value = rule.pick(arguments)
            if value is not _MISSING:
                updates[rule.state_key] = value
        _replace_keys(self.handle, updates, removed=())

    def discard(self) -> None:
        """The tool failed or was refused: put back what the client had before the prediction
        (a ``STATE_SNAPSHOT``); the call then publishes no final state."""
        if self.committed:
            return
        self.committed = True
        if self.previous is None:
            return  # nothing was predicted, so nothing went out to undo
        removed = [r.state_key for r in self.rules if r.state_key not in self.previous]
        _replace_keys(self.handle, self.previous, removed)

    def commits_on_end(self) -> bool:
        """Whether ending the call unanswered publishes the final state (a client-side tool
        has its arguments complete; a paused or unconfirmed one does not)."""
        return not (self.paused or self.committed or self.config.require_confirmation)

    def guard_result(self) -> None:
        if self.config.require_confirmation and not self.committed:
            raise AgentError(
                f"{self.handle.describe()} predicts state {[r.state_key for r in self.rules]} "
                f"and require_confirmation is on, so the tool must not run before a human "
                f"approves: `return call.request_confirmation()` ends the run with an "
                f"interrupt, and the next run picks the call up with ctx.resumed_tool_call()",
                code="PROTOCOL",
            )


def _object_state(wire: Any, handle: ToolCallHandle[Any]) -> dict[str, Any]:
    if not isinstance(wire, dict):
        raise InvalidArgumentError(
            f"{handle.describe()}: predictive state sets keys of the state, so the state "
            f"must be a JSON object (a dict, a pydantic model, a dataclass); it is a "
            f"{type(wire).__name__}"
        )
    return wire


def _replace_keys(
    handle: ToolCallHandle[Any], updates: Mapping[str, Any], removed: Iterable[str]
) -> None:
    """Set (and drop) state keys in the typed state and send the result as a snapshot."""
    run_state, sink = handle._state_parts()
    wire = dict(_object_state(encode_state(run_state.value), handle))
    wire.update(updates)
    for key in removed:
        wire.pop(key, None)
    run_state.value = decode_state(_clone(wire), run_state.state_type)
    # A snapshot, whatever the size rule would pick: the client's state is authoritative again.
    run_state.manager.reset()
    run_state._publish_json(sink, encode_state(run_state.value))


def _clone(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _values_before(rules: Iterable[StateFromArgument], wire: dict[str, Any]) -> dict[str, Any]:
    """The mapped keys as the state holds them now (a key it lacks stays out), copied."""
    values: dict[str, Any] = _clone(
        {r.state_key: wire[r.state_key] for r in rules if r.state_key in wire}
    )
    return values


# -- pausing and resuming ----------------------------------------------------------------------


def request_confirmation(
    handle: ToolCallHandle[Any],
    message: str | None = None,
    *,
    response_schema: Mapping[str, Any] | None = None,
) -> Interrupted:
    """End ``handle`` unanswered and return the outcome that pauses the run on it."""
    ctx = handle._ctx
    prediction = cast("CallPrediction | None", handle._prediction)  # the one kind attached
    rules = prediction.rules if prediction is not None else ()
    config = prediction.config if prediction is not None else ctx._predict_state
    if config is None:
        config = PredictState()
    handle._live("request_confirmation()")
    if prediction is not None:
        prediction.arguments()  # refuse to pause on arguments that are not JSON
        prediction.paused = True
    run_state, _ = handle._state_parts()
    wire = encode_state(run_state.value)
    previous = _values_before(rules, wire) if isinstance(wire, dict) else {}
    interrupt_id = f"{handle.id}{_CONFIRM_SUFFIX}"
    config.confirmations.put(
        PendingConfirmation(
            thread_id=ctx.thread_id,
            interrupt_id=interrupt_id,
            tool_call_id=str(handle.id),
            tool=handle.name,
            arguments=handle.raw_args,
            parent_message_id=handle.parent_message_id,
            rules=rules,
            previous=previous,
        )
    )
    handle.end()
    keys = ", ".join(r.state_key for r in rules)
    text = message or (
        f"Apply the {handle.name} call" + (f" and its changes to {keys}?" if keys else "?")
    )
    schema = (
        dict(response_schema)
        if response_schema is not None
        else {
            "type": "object",
            "properties": {"approved": {"type": "boolean"}},
            "description": 'status "resolved" approves; "cancelled" or {"approved": false} rejects',
        }
    )
    return ctx.interrupt(
        Interrupt(
            interrupt_id,
            CONFIRMATION_REASON,
            text,
            tool_call_id=str(handle.id),
            response_schema=schema,
            metadata={"tool": handle.name, "stateKeys": [r.state_key for r in rules]},
        )
    )


def approves(entry: ResumeEntry) -> bool:
    """Whether a resume entry approves: ``resolved``, unless its payload says
    ``{"approved": false}``."""
    if entry.status != "resolved":
        return False
    payload = entry.payload
    return not (isinstance(payload, Mapping) and payload.get("approved") is False)


class ResumedToolCall(ToolCallHandle[S]):
    """A paused tool call, opened again in the run that answers its confirmation.

    Opening it emits ``TOOL_CALL_START`` under the paused call's id (the client already holds the
    call and its arguments, so no ``TOOL_CALL_ARGS`` go out again). :attr:`approved` says what the
    human decided. Rejected, the state keys the call predicted are restored at once (a
    ``STATE_SNAPSHOT``); approved, ``result()`` publishes the final state as a snapshot.
    """

    def __init__(
        self,
        ctx: RunContext[S],
        record: PendingConfirmation,
        answer: ResumeEntry,
        result_message_id: MessageId,
    ) -> None:
        super().__init__(
            ctx,
            ToolCallId(record.tool_call_id),
            record.tool,
            result_message_id,
            record.parent_message_id,
        )
        self.answer = answer
        """The client's resume entry for this call."""
        self.approved = approves(answer)
        """Whether the human approved running the tool."""
        self.record = record
        self._args = [record.arguments]

    @property
    def payload(self) -> Any:
        """What the client sent with its answer (``None`` when nothing)."""
        return self.answer.payload

    def args(self, fragment: str) -> None:
        raise AgentError(
            f"{self.describe()} was resumed with the arguments the client already holds; "
            f"they cannot grow now",
            code="PROTOCOL",
        )

    def _after_open(self) -> None:
        rules = self.record.rules
        if not rules:
            return
        if self.approved:
            prediction = CallPrediction(self, rules, PredictState(rules))
            prediction.parser.feed(self.record.arguments)
            self._prediction = prediction
            return
        restored = dict(self.record.previous)
        removed = [r.state_key for r in rules if r.state_key not in restored]
        _replace_keys(self, restored, removed)


def resumed_tool_call(ctx: RunContext[S], name: str | None = None) -> ResumedToolCall[S] | None:
    """Open the next paused call this run answers (optionally only calls to ``name``)."""
    config: PredictState | None = ctx._predict_state
    store = config.confirmations if config is not None else _SHARED_CONFIRMATIONS
    for entry in ctx.resume():
        if entry.interrupt_id in ctx._resumed_interrupts:
            continue
        record = store.take(ctx.thread_id, entry.interrupt_id)
        if record is None:
            record = _record_from_messages(ctx, entry, config)
        if record is None or (name is not None and record.tool != name):
            if record is not None:
                store.put(record)  # another caller's
            continue
        ctx._resumed_interrupts.add(entry.interrupt_id)
        ctx._refuse_if_open(f'the resumed tool call "{record.tool_call_id}" ({record.tool})')
        handle: ResumedToolCall[S] = ResumedToolCall(ctx, record, entry, ctx.new_message_id())
        ctx._opened(handle)
        handle._after_open()
        return handle
    return None


def _record_from_messages(
    ctx: RunContext[Any], entry: ResumeEntry, config: PredictState | None
) -> PendingConfirmation | None:
    """Rebuild an approval from the conversation when the store has no record (another
    process paused the run). Without the record the pre-prediction state is unknown, so a
    rejection cannot be undone: that fails loudly instead of guessing."""
    if not entry.interrupt_id.endswith(_CONFIRM_SUFFIX):
        return None
    call_id = entry.interrupt_id[: -len(_CONFIRM_SUFFIX)]
    for message in ctx.messages:
        if not isinstance(message, AssistantMessage):
            continue
        for call in message.tool_calls or ():
            if call.id != call_id:
                continue
            rules = config.for_tool(call.function.name) if config is not None else ()
            if rules and not approves(entry):
                raise AgentError(
                    f'interrupt "{entry.interrupt_id}" was rejected, but this server holds no '
                    f"record of the state before tool call {call_id!r} predicted it (the run "
                    f"was paused by another process, or the record expired), so it cannot be "
                    f"restored. Give PredictState a ConfirmationStore shared by your server "
                    f"processes.",
                    code="PROTOCOL",
                )
            return PendingConfirmation(
                thread_id=ctx.thread_id,
                interrupt_id=entry.interrupt_id,
                tool_call_id=call_id,
                tool=call.function.name,
                arguments=call.function.arguments,
                parent_message_id=message.id if message.id != call_id else None,
                rules=rules,
            )
    return None


def predictions_for(
    config: PredictState | None, handle: ToolCallHandle[Any]
) -> CallPrediction | None:
    """The prediction to attach to a newly opened call, if ``config`` maps its tool."""
    if config is None:
        return None
    rules = config.for_tool(handle.name)
    if not rules:
        return None
    return CallPrediction(handle, rules, config)
