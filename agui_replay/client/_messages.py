"""The client's message list, indexed so that every event costs time proportional to itself.

The reference client holds a plain array and searches it (``find``, ``findIndex``) on almost
every event; a tool result is spliced in after the assistant message that owns its call, behind
the tool messages already there; a MESSAGES_SNAPSHOT filters the whole array. Done literally, a
long conversation is quadratic. Here:

- messages that are appended (every opener, snapshot and run-input message) live in ``main``,
  whose indexes never change until the next compaction; a dropped message leaves a hole;
- a tool result spliced in lands in the ``after`` list of the last message of the run of tool
  messages that follows its owner, so its position is ``(main index, slot)``, also stable;
- ``by_id`` (first message with an id) and ``calls`` (first message holding a tool call) are
  kept up to date by comparing those positions, never by searching;
- messages are also filed by kind (reasoning, activity, the rest), so a snapshot visits only
  the kinds it may drop and finds the client-only messages it keeps by id: a snapshot costs
  its own size plus the messages it drops, not the whole conversation;
- the flat list in the reference's order is built on read and cached while only appends follow.

Duplicate ids (two live messages with one id, or a tool call held twice) are legal but rare;
a snapshot then takes the plain path: the reference's filter over the flat list, and a rebuild.

Used by :class:`agui_replay.client.Session` only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["ABSENT", "MessageList"]

Message = dict[str, Any]
_MAIN = -1
ABSENT: Any = object()
"""``authoritative`` when the snapshot declares nothing (see :meth:`MessageList.merge`)."""


def _kind(message: Message) -> str:
    role = message.get("role")
    return role if role == "reasoning" or role == "activity" else "other"


class MessageList:
    """Messages in the reference client's order, with O(1) lookups, inserts and drops."""

    __slots__ = (
        "_after",
        "_by_id",
        "_calls",
        "_flat",
        "_holes",
        "_kinds",
        "_main",
        "_pos",
        "_run_end",
        "_simple",
        "_tangled",
    )

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.rebuild(list(messages))

    def rebuild(self, messages: list[Message]) -> None:
        """Start again from ``messages`` (a new list the store takes over)."""
        self._main: list[Message | None] = messages  # type: ignore[assignment]
        self._after: dict[int, list[Message | None]] = {}
        self._pos: dict[int, tuple[int, int]] = {}
        self._by_id: dict[Any, Message] = {}
        # tool call id -> (first message holding it, the tool call dict)
        self._calls: dict[str, tuple[Message, dict[str, Any]]] = {}
        self._kinds: dict[str, dict[int, Message]] = {"other": {}, "reasoning": {}, "activity": {}}
        # main index -> last main index of the run of tool messages that follows it (a cache)
        self._run_end: dict[int, int] = {}
        self._flat: list[Message] | None = None
        self._holes = 0
        self._simple = True  # no id held by two live messages, no tool call held twice
        self._tangled = False  # a spliced-in slot now holds a message that is not a tool's
        for at, message in enumerate(messages):
            self._index(message, (at, _MAIN))

    def _index(self, message: Message, position: tuple[int, int]) -> None:
        key = id(message)
        if key in self._pos:
            self._simple = False  # one object in two places: keep the first position
            return
        self._pos[key] = position
        self._kinds[_kind(message)][key] = message
        mid = message.get("id")
        first = self._by_id.get(mid)
        if first is None:
            if isinstance(mid, str):
                self._by_id[mid] = message
        else:
            self._simple = False
            if self._pos[id(first)] > position:
                self._by_id[mid] = message
        self._index_calls(message, position)

    def _index_calls(self, message: Message, position: tuple[int, int]) -> None:
        tool_calls = message.get("toolCalls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                cid = call.get("id") if isinstance(call, dict) else None
                if not isinstance(cid, str):
                    continue
                held = self._calls.get(cid)
                if held is None:
                    self._calls[cid] = (message, call)
                else:
                    self._simple = False
                    if self._pos[id(held[0])] > position:
                        self._calls[cid] = (message, call)

    # -- reading ---------------------------------------------------------------------------

    def find(self, message_id: Any) -> Message | None:
        """The first message with this id (the reference's ``find``)."""
        return self._by_id.get(message_id)

    def call(self, call_id: Any) -> tuple[Message, dict[str, Any]] | None:
        """(first message holding the tool call, the tool call)."""
        return self._calls.get(call_id)

    def as_list(self) -> list[Message]:
        """The messages in order (the live list while nothing was spliced in or dropped)."""
        if not self._after and not self._holes:
            return self._main  # type: ignore[return-value]
        flat = self._flat
        if flat is None:
            flat = []
            after = self._after
            for at, message in enumerate(self._main):
                if message is not None:
                    flat.append(message)
                inserted = after.get(at)
                if inserted is not None:
                    flat.extend(m for m in inserted if m is not None)
            self._flat = flat
        return flat

    def __len__(self) -> int:
        return len(self._pos)

    # -- changing --------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        main = self._main
        main.append(message)
        self._index(message, (len(main) - 1, _MAIN))
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
        while end < last:
            following = main[end + 1]
            if following is not None and following.get("role") != "tool":
                break
            end += 1
        self._run_end[start] = end
        inserted = self._after.setdefault(end, [])
        inserted.append(message)
        self._flat = None
        self._index(message, (end, len(inserted) - 1))

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
        if not self._simple or old.get("toolCalls"):
            self._flat = None
            flat = list(self.as_list())
            # Only the first place: a snapshot that named one id twice left the same message
            # in two places, and the reference replaces the one its findIndex finds.
            at = next(i for i, m in enumerate(flat) if m is old)
            flat[at] = new
            self.rebuild(flat)
            return
        self._put(old, new)
        self._run_end.clear()
        if self._tangled:
            self.rebuild(list(self.as_list()))

    def _put(self, old: Message, new: Message) -> None:
        """``new`` takes ``old``'s place (no duplicate ids: the store is simple)."""
        at, slot = position = self._pos.pop(id(old))
        if slot == _MAIN:
            self._main[at] = new
        else:
            self._after[at][slot] = new
            self._tangled = self._tangled or new.get("role") != "tool"
        del self._kinds[_kind(old)][id(old)]
        self._drop_calls(old)
        self._flat = None
        mid = old.get("id")
        if self._by_id.get(mid) is old:
            del self._by_id[mid]
        self._index(new, position)

    def _drop(self, message: Message) -> None:
        at, slot = self._pos.pop(id(message))
        if slot == _MAIN:
            self._main[at] = None
        else:
            self._after[at][slot] = None
        self._holes += 1
        self._flat = None
        del self._kinds[_kind(message)][id(message)]
        self._drop_calls(message)
        mid = message.get("id")
        if self._by_id.get(mid) is message:
            del self._by_id[mid]

    def _drop_calls(self, message: Message) -> None:
        tool_calls = message.get("toolCalls")
        if isinstance(tool_calls, list):
            for call in tool_calls:
                cid = call.get("id") if isinstance(call, dict) else None
                held = self._calls.get(cid)  # type: ignore[arg-type]
                if held is not None and held[0] is message:
                    del self._calls[cid]  # type: ignore[arg-type]

    # -- MESSAGES_SNAPSHOT -----------------------------------------------------------------

    def merge(self, incoming: list[Message], authoritative: Any) -> None:
        """Merge a snapshot as the reference does: local messages named in it are replaced in
        place, other local messages are dropped except client-only ones (reasoning when it has
        none, activity of the types it does not speak for), and its new messages are appended.

        ``authoritative``: the activity types the snapshot declares complete (a list), ``None``
        for all, :data:`ABSENT` when it declares nothing (then: all if it has activity).
        """
        by_id: dict[Any, Message] = {}
        for m in incoming:
            by_id[m.get("id")] = m  # a later duplicate wins, as with JS `new Map(...)`
        has_activity = any(m.get("role") == "activity" for m in incoming)
        has_reasoning = any(m.get("role") == "reasoning" for m in incoming)
        if not self._simple or len(by_id) != len(incoming):
            self._merge_plainly(incoming, by_id, authoritative, has_activity, has_reasoning)
            return
        kinds = self._kinds
        visit = list(kinds["other"].values())
        if has_reasoning:
            visit.extend(kinds["reasoning"].values())
        if isinstance(authoritative, list):
            visit.extend(
                m for m in kinds["activity"].values() if m.get("activityType") in authoritative
            )
        elif authoritative is None or has_activity:
            visit.extend(kinds["activity"].values())
        replaced: set[Any] = set()
        for m in visit:
            mid = m.get("id")
            new = by_id.get(mid, ABSENT)
            if new is ABSENT:
                self._drop(m)
            else:
                self._put(m, new)
                replaced.add(mid)
        # The client-only messages kept: those the snapshot names are replaced too.
        for mid, new in by_id.items():
            if mid not in replaced:
                old = self._by_id.get(mid)
                if old is not None:
                    self._put(old, new)
                    replaced.add(mid)
        self._run_end.clear()
        for m in incoming:
            if m.get("id") not in replaced:
                self.append(m)
        if self._tangled or (self._holes > 64 and self._holes * 2 > len(self._main)):
            self.rebuild(list(self.as_list()))

    def _merge_plainly(
        self,
        incoming: list[Message],
        by_id: dict[Any, Message],
        authoritative: Any,
        has_activity: bool,
        has_reasoning: bool,
    ) -> None:
        def keep_client_only(m: Message) -> bool:
            role = m.get("role")
            if role == "activity":
                if isinstance(authoritative, list):
                    return m.get("activityType") not in authoritative
                return authoritative is ABSENT and not has_activity
            return role == "reasoning" and not has_reasoning

        kept = [
            by_id.get(m.get("id"), m)
            for m in self.as_list()
            if m.get("id") in by_id or keep_client_only(m)
        ]
        present = {m.get("id") for m in kept}
        # `present` is not updated in the loop, as in the reference: a snapshot that repeats a
        # new id appends every copy.
        for m in incoming:
            if m.get("id") not in present:
                kept.append(m)
        self.rebuild(kept)
