"""The client's message list, indexed so that every event costs time proportional to itself.

The reference client holds a plain array and searches it (``find``, ``findIndex``) on almost
every event; a tool result is spliced in after the assistant message that owns its call, behind
the tool messages already there. Done literally, a long conversation is quadratic. Here:

- messages that are appended (every opener, snapshot and run-input message) live in ``main``,
  whose indexes never change until the next rebuild;
- a tool result spliced in lands in the ``after`` list of the last message of the run of tool
  messages that follows its owner, so its position is ``(main index, slot)``, also stable;
- ``by_id`` (first message with an id) and ``calls`` (first message holding a tool call) are
  kept up to date by comparing those positions, never by searching;
- the flat list in the reference's order is built on read and cached while only appends follow.

Used by :class:`agui_replay.client.Session` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["MessageList"]

Message = dict[str, Any]
_MAIN = -1


class MessageList:
    """Messages in the reference client's order, with O(1) lookups and tool-result inserts."""

    __slots__ = ("_after", "_by_id", "_calls", "_flat", "_main", "_pos", "_run_end")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.rebuild(list(messages))

    def rebuild(self, messages: list[Message]) -> None:
        """Start again from ``messages`` (a new list the store takes over)."""
        self._main: list[Message] = messages
        self._after: dict[int, list[Message]] = {}
        self._pos: dict[int, tuple[int, int]] = {}
        self._by_id: dict[Any, Message] = {}
        # tool call id -> (first message holding it, the tool call dict)
        self._calls: dict[str, tuple[Message, dict[str, Any]]] = {}
        # main index -> last main index of the run of tool messages that follows it (a cache)
        self._run_end: dict[int, int] = {}
        self._flat: list[Message] | None = None
        for at, message in enumerate(messages):
            self._index(message, at, _MAIN)

    def _index(self, message: Message, at: int, slot: int) -> None:
        self._pos[id(message)] = (at, slot)
        mid = message.get("id")
        if isinstance(mid, str) and mid not in self._by_id:
            self._by_id[mid] = message
        tool_calls = message.get("toolCalls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                cid = call.get("id") if isinstance(call, dict) else None
                if isinstance(cid, str) and cid not in self._calls:
                    self._calls[cid] = (message, call)

    # -- reading ---------------------------------------------------------------------------

    def find(self, message_id: Any) -> Message | None:
        """The first message with this id (the reference's ``find``)."""
        return self._by_id.get(message_id)

    def call(self, call_id: Any) -> tuple[Message, dict[str, Any]] | None:
        """(first message holding the tool call, the tool call)."""
        return self._calls.get(call_id)

    def as_list(self) -> list[Message]:
        """The messages in order (the live list while nothing was spliced in)."""
        if not self._after:
            return self._main
        flat = self._flat
        if flat is None:
            flat = []
            after = self._after
            for at, message in enumerate(self._main):
                flat.append(message)
                inserted = after.get(at)
                if inserted is not None:
                    flat.extend(inserted)
            self._flat = flat
        return flat

    def __len__(self) -> int:
        return len(self._main) + sum(len(v) for v in self._after.values())

    # -- changing --------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        main = self._main
        main.append(message)
        self._index(message, len(main) - 1, _MAIN)
        if self._flat is not None:
            self._flat.append(message)

    def add_call(self, call_id: str, holder: Message, call: dict[str, Any]) -> None:
        """A tool call just attached to ``holder`` (the first to hold it: it was unknown)."""
        self._calls[call_id] = (holder, call)

    def insert_after_tools(self, owner: Message, message: Message) -> None:
        """Splice ``message`` in after ``owner`` and the tool messages that follow it."""
        where = self._pos.get(id(owner))
        if where is None or where[1] != _MAIN or message.get("role") != "tool":
            self._insert_slowly(owner, message)
            return
        main = self._main
        start = where[0]
        end = self._run_end.get(start, start)
        last = len(main) - 1
        while end < last and main[end + 1].get("role") == "tool":
            end += 1
        self._run_end[start] = end
        inserted = self._after.setdefault(end, [])
        inserted.append(message)
        position = (end, len(inserted) - 1)
        self._pos[id(message)] = position
        self._flat = None
        mid = message.get("id")
        if isinstance(mid, str):
            first = self._by_id.get(mid)
            if first is None or self._pos[id(first)] > position:
                self._by_id[mid] = message

    def _insert_slowly(self, owner: Message, message: Message) -> None:
        """The reference's splice on the flat list, then a rebuild (messages of unusual roles)."""
        flat = list(self.as_list())
        at = next(i for i, m in enumerate(flat) if m is owner) + 1
        while at < len(flat) and flat[at].get("role") == "tool":
            at += 1
        flat.insert(at, message)
        self.rebuild(flat)

    def replace(self, old: Message, new: Message) -> None:
        """Put ``new`` where ``old`` is (an activity snapshot re-minting a message)."""
        at, slot = self._pos.pop(id(old))
        if slot == _MAIN:
            self._main[at] = new
        else:
            self._after[at][slot] = new
        if old.get("toolCalls") or old.get("role") != new.get("role"):
            self.rebuild(list(self.as_list()))
            return
        self._pos[id(new)] = (at, slot)
        self._flat = None
        mid = new.get("id")
        if self._by_id.get(mid) is old:
            self._by_id[mid] = new
