"""Who owns what: the subagent attribution rules of the reference client's ``verifyEvents``.

Every message, tool call, reasoning message and activity is owned by the agent that opened it:
the parent agent (no ``subagentRunId``) or a subagent. An event that names an owner
(``subagentRunId``) must name the opener's; an event that names none inherits it. A tool call
belongs to the message that carries it (``parentMessageId``). Owners are learnt from openers,
from a run's input messages (RUN_STARTED ``input.messages``, never overriding), from
MESSAGES_SNAPSHOT (overriding), from TOOL_CALL_RESULT (its message) and from ACTIVITY_SNAPSHOT;
they are forgotten when a new run starts. Subagent ids are per invocation: one that finished in
this run cannot start again, and ``parentSubagentRunId`` must name one started in this run.

Rule names: ``subagent-mismatch``, ``subagent-reused``, ``unknown-subagent``. Used by
:class:`agui_replay.verify.Verifier`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agui_replay.errors import ProtocolViolation
from agui_replay.verify._chunks import ABSENT, UndoLog

__all__ = ["Owners"]

_WHAT = {"message": "message", "call": "tool call", "reasoning": "reasoning message"}
_MAP_OF = {
    "TEXT_MESSAGE_START": "message",
    "TEXT_MESSAGE_CONTENT": "message",
    "TEXT_MESSAGE_END": "message",
    "TOOL_CALL_ARGS": "call",
    "TOOL_CALL_END": "call",
    "REASONING_START": "reasoning",
    "REASONING_MESSAGE_START": "reasoning",
    "REASONING_MESSAGE_CONTENT": "reasoning",
    "REASONING_MESSAGE_END": "reasoning",
    "REASONING_END": "reasoning",
    "ACTIVITY_DELTA": "activity",
}
_REGISTERS = frozenset({"TEXT_MESSAGE_START", "REASONING_START", "REASONING_MESSAGE_START"})
_ID_FIELD = {"ACTIVITY_DELTA": "messageId"}


def _who(owner: str | None) -> str:
    return "(the parent agent)" if owner is None else f"'{owner}'"


class Owners:
    """The owners known in the current run, and the subagents that finished in it."""

    __slots__ = ("activity", "call", "finished", "message", "reasoning")

    def __init__(self) -> None:
        self.message: dict[str, str | None] = {}
        self.call: dict[str, str | None] = {}
        self.reasoning: dict[str, str | None] = {}
        self.activity: dict[str, str | None] = {}
        self.finished: dict[str, int] = {}

    # -- learning owners ---------------------------------------------------------------------

    def learn_messages(self, messages: Any, override: bool, undo: UndoLog) -> None:
        """Owners of the messages (and their tool calls) in a snapshot or a run's input."""
        if not isinstance(messages, list):
            return
        for message in messages:
            if not isinstance(message, Mapping) or type(message.get("id")) is not str:
                continue
            role = message.get("role")
            table = (
                self.reasoning
                if role == "reasoning"
                else self.activity
                if role == "activity"
                else self.message
            )
            owner = message.get("subagentRunId")
            _set(table, message["id"], owner, override, undo)
            calls = message.get("toolCalls")
            if isinstance(calls, list):
                for call in calls:
                    if isinstance(call, Mapping) and type(call.get("id")) is str:
                        _set(self.call, call["id"], owner, override, undo)

    # -- the rules ---------------------------------------------------------------------------

    def check(
        self,
        event: Mapping[str, Any],
        kind: str,
        index: int,
        original: str,
        undo: UndoLog,
        active_subagents: Mapping[str, int],
    ) -> None:
        """Check one (expanded) event's attribution and learn what it teaches; raises
        :class:`ProtocolViolation`. Structural rules (open / not open) were checked before."""
        tag = event.get("subagentRunId")
        table_name = _MAP_OF.get(kind)
        if table_name is not None:
            table: dict[str, str | None] = getattr(self, table_name)
            ident = event.get(
                _ID_FIELD.get(kind, "toolCallId" if table_name == "call" else "messageId")
            )
            if tag is not None and ident in table and table[ident] != tag:
                raise _mismatch(
                    original, index, ident, tag, table[ident], _WHAT.get(table_name, "activity")
                )
            if kind in _REGISTERS and type(ident) is str and ident not in table:
                _set(table, ident, tag, False, undo)
            return
        if kind == "TOOL_CALL_START":
            self._tool_call_start(event, tag, index, original, undo)
        elif kind == "TOOL_CALL_RESULT":
            if type(event.get("messageId")) is str:
                _set(self.message, event["messageId"], tag, True, undo)
        elif kind == "ACTIVITY_SNAPSHOT":
            mid = event.get("messageId")
            if type(mid) is str and (mid not in self.activity or event.get("replace") is not False):
                _set(self.activity, mid, tag, True, undo)
        elif kind == "REASONING_ENCRYPTED_VALUE":
            self._encrypted_value(event, tag, index, original)
        elif kind == "MESSAGES_SNAPSHOT":
            self.learn_messages(event.get("messages"), True, undo)
        elif kind == "SUBAGENT_STARTED":
            self._subagent_started(event, index, original, active_subagents)
        elif kind == "SUBAGENT_FINISHED" or kind == "SUBAGENT_ERROR":
            ident = event.get("subagentRunId")
            if type(ident) is str:
                _set(self.finished, ident, index, True, undo)

    def _tool_call_start(
        self, event: Mapping[str, Any], tag: str | None, index: int, original: str, undo: UndoLog
    ) -> None:
        call_id = event.get("toolCallId")
        parent_id = event.get("parentMessageId")
        parent_known = parent_id is not None and parent_id in self.message
        parent_owner = self.message.get(parent_id) if parent_known else None  # type: ignore[arg-type]
        if parent_known and tag is not None and tag != parent_owner:
            raise ProtocolViolation(
                rule="subagent-mismatch",
                event_type=original,
                index=index,
                ids=(str(call_id), str(parent_id)),
                detail=f"subagentRunId '{tag}' does not match its parent message "
                f"'{parent_id}' owner {_who(parent_owner)}; a tool call belongs to the "
                "message that carries it",
                hint=f"give this TOOL_CALL_START the subagentRunId of message '{parent_id}' "
                "(or none), or a parentMessageId of the subagent's own message",
            )
        if call_id in self.call:
            owner = self.call[call_id]
            if tag is not None and tag != owner:
                raise _mismatch(original, index, call_id, tag, owner, "tool call")
            if tag is None and parent_known and parent_owner != owner:
                raise ProtocolViolation(
                    rule="subagent-mismatch",
                    event_type=original,
                    index=index,
                    ids=(str(call_id), str(parent_id)),
                    detail=f"tool call '{call_id}' is owned by {_who(owner)} but its parent "
                    f"message '{parent_id}' is owned by {_who(parent_owner)}; a tool call "
                    "belongs to the message that carries it",
                    hint=f"send tool call '{call_id}' under a message of {_who(owner)}, or "
                    "give it a new toolCallId",
                )
            return
        if type(call_id) is str:
            owner = tag if tag is not None else parent_owner
            _set(self.call, call_id, owner, False, undo)

    def _encrypted_value(
        self, event: Mapping[str, Any], tag: str | None, index: int, original: str
    ) -> None:
        if tag is None:
            return
        entity = event.get("entityId")
        subtype = event.get("subtype")
        if subtype == "tool-call":
            table, what = self.call, "tool call"
        elif subtype == "message" and entity in self.message:
            table, what = self.message, "message"
        else:
            table, what = self.reasoning, "reasoning message" if subtype != "message" else "message"
        if entity in table and table[entity] != tag:
            raise _mismatch(original, index, entity, tag, table[entity], what)

    def _subagent_started(
        self, event: Mapping[str, Any], index: int, original: str, active: Mapping[str, int]
    ) -> None:
        ident = event.get("subagentRunId")
        if ident in self.finished:
            raise ProtocolViolation(
                rule="subagent-reused",
                event_type=original,
                index=index,
                ids=(str(ident),),
                detail=f"subagent '{ident}' already finished in this run (at "
                f"#{self.finished[ident]}); subagent ids are per invocation and cannot be reused",
                hint="give each subagent invocation its own subagentRunId",
            )
        parent = event.get("parentSubagentRunId")
        if (
            parent is not None
            and (parent == ident or parent not in active)
            and (parent not in self.finished)
        ):
            raise ProtocolViolation(
                rule="unknown-subagent",
                event_type=original,
                index=index,
                ids=(str(ident), str(parent)),
                detail=f"parentSubagentRunId '{parent}' has not been started in this run",
                hint=f"emit SUBAGENT_STARTED for '{parent}' before its child '{ident}', or "
                "leave parentSubagentRunId out for a subagent of the parent agent",
            )


def _set(table: dict[str, Any], key: str, value: Any, override: bool, undo: UndoLog) -> None:
    if key in table and not override:
        return
    undo.append((table, key, table.get(key, ABSENT) if key in table else ABSENT))
    table[key] = value


def _mismatch(
    kind: str, index: int, ident: Any, tag: str, owner: str | None, what: str
) -> ProtocolViolation:
    return ProtocolViolation(
        rule="subagent-mismatch",
        event_type=kind,
        index=index,
        ids=(str(ident),),
        detail=f"subagentRunId '{tag}' does not match the {what} '{ident}' opener's subagent "
        f"{_who(owner)}",
        hint=f"send this {kind} with the subagentRunId of the {what}'s opener "
        f"({'none' if owner is None else repr(owner)}), or leave subagentRunId out",
    )
