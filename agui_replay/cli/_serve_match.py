"""Which recorded run answers a posted ``RunAgentInput``: the run whose input matches it.

A front end replays a conversation by posting, run after run, the input it built itself: its own
thread id, its own message ids, the interrupt ids the served stream gave it. So inputs are
compared after normalization, the way :mod:`agui_replay.normalize` names ids: message, tool call
and interrupt ids are renamed in order of first appearance (random ids inside content become
``<id-N>``), timestamps go, and only what the conversation is made of is compared — each
message's role, content, tool calls (arguments as JSON) and tool call reference, and each resume
entry's status and payload. State, tools, context and forwarded props are not compared.
An input no run matches is answered with the closest run, the one whose recorded input agrees
with it on the most messages and resume entries (each at its place), state and tools, and
their first difference (a JSON pointer and both values, or what one side has more of).

Among the runs that match, a run of the recorded thread this posted thread was answered from
before comes first, then the run served fewest times, then file order ("falling back to
order"). Runs recorded without an input (an SSE capture, JSON lines) are served in order to
inputs that match nothing, and so is every run to an input with no messages and no resume
(nothing to match on: a probe such as ``curl -d '{"threadId": "t", "runId": "r",
"messages": []}'``) that no run matches.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

from agui_replay._jsondiff import MISSING, first_difference
from agui_replay._text import short_repr
from agui_replay.cassette import RecordedRun
from agui_replay.normalize import normalize_events

__all__ = [
    "Choice",
    "RunMatcher",
    "ServedRun",
    "closeness",
    "difference",
    "input_view",
    "posted_ids",
]

# The run id the synthetic RUN_STARTED carries: renamed ids become "posted-msg-1" and the like.
_RUN = "posted"
# The fields of a view a match does not compare: they only count towards the closest run.
_UNMATCHED = ("state", "tools")


@dataclass
class ServedRun:
    """One run a served file (or folder of files) can answer with."""

    number: int
    """Its number over every served run (what ``--run N`` picks)."""
    path: Path
    run: RecordedRun
    label: str
    """How the log and errors name it: ``run 1``, or ``FILE run 1`` for a folder."""
    view: dict[str, Any] | None = None
    """The normalized input compared against posted ones (``None``: recorded without one):
    ``messages``, ``resume``, and the ``state`` and ``tools`` that only closeness counts."""
    served: int = 0


@dataclass(frozen=True)
class Choice:
    """The run chosen for a request, or why there is none."""

    served: ServedRun | None
    how: str
    """``"matched"``, ``"in order"`` or ``"fixed"`` (``--run``); ``"refused"`` without a run."""
    closest: ServedRun | None = None
    difference: str = ""


def input_view(data: Mapping[str, Any]) -> dict[str, Any]:
    """What two inputs of one conversation have in common once ids are normalized (the
    messages and resume a match compares; the state and tools closeness counts)."""
    messages = data.get("messages")
    messages = [
        m
        for m in (messages if isinstance(messages, list) else [])
        if not (isinstance(m, dict) and m.get("role") == "activity")  # the client keeps these
    ]
    resume = data.get("resume")
    resume = resume if isinstance(resume, list) else []
    event = {
        "type": "RUN_STARTED",
        "threadId": "thread",
        "runId": _RUN,
        "input": {"messages": messages, "resume": resume},
    }
    normalized = normalize_events([event])[0]["input"]
    state, tools = data.get("state"), data.get("tools")
    return {
        "messages": [_message(m) for m in normalized["messages"]],
        "resume": [_resume(r) for r in normalized["resume"]],
        "state": {} if state is None else state,
        "tools": tools if isinstance(tools, list) else [],
    }


def posted_ids(posted: Mapping[str, Any], recorded: Mapping[str, Any]) -> dict[str, str]:
    """Each id of the recorded input (message, tool call, interrupt) that the posted input
    gives another name at the same place, and that name: what the served stream says in place
    of the recorded id, so the front end's own messages keep the ids it gave them. Messages
    are paired in order (activity messages left out, as ``HttpAgent`` leaves them out of what
    it posts) up to the first pair whose roles differ."""
    names: dict[str, str] = {}

    def pair(mine: Any, theirs: Any) -> None:
        if isinstance(mine, str) and isinstance(theirs, str) and mine and theirs != mine:
            names.setdefault(theirs, mine)

    for mine, theirs in zip(_conversation(posted), _conversation(recorded), strict=False):
        if mine.get("role") != theirs.get("role"):
            break
        for key in ("id", "toolCallId"):
            pair(mine.get(key), theirs.get(key))
        for call, recorded_call in zip(
            _listed(mine, "toolCalls"), _listed(theirs, "toolCalls"), strict=False
        ):
            pair(call.get("id"), recorded_call.get("id"))
    for entry, recorded_entry in zip(
        _listed(posted, "resume"), _listed(recorded, "resume"), strict=False
    ):
        pair(entry.get("interruptId"), recorded_entry.get("interruptId"))
    return names


def _conversation(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [m for m in _listed(data, "messages") if m.get("role") != "activity"]


def _listed(data: Mapping[str, Any], key: str) -> list[dict[str, Any]]:
    items = data.get(key)
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def _message(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    view: dict[str, Any] = {}
    for key in ("id", "role", "content", "toolCallId"):
        value = message.get(key)
        if value not in (None, ""):
            view[key] = value
    calls = message.get("toolCalls")
    if isinstance(calls, list) and calls:
        view["toolCalls"] = [_call(c) for c in calls]
    return view


def _call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):  # not JSON: compared as the text it is
            arguments = json.loads(arguments) if arguments.strip() else {}
    return {"id": call.get("id"), "name": function.get("name"), "arguments": arguments}


def _resume(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return entry
    return {k: entry[k] for k in ("interruptId", "status", "payload") if entry.get(k) is not None}


def difference(posted: dict[str, Any], recorded: dict[str, Any]) -> str:
    """Why a recorded input does not match a posted one, read as a fix: their first difference
    in the messages and resume (``""``: they match)."""
    found = first_difference(posted, recorded, ignore=_unmatched, numbers="value")
    if found is None:
        return ""
    if not found.missing or found.pointer.count("/") != 2:
        return f"{found.pointer}: posted {_short(found.left)}, recorded {_short(found.right)}"
    name = found.pointer.split("/")[1]
    mine, theirs = len(posted[name]), len(recorded[name])
    if name == "messages":
        side = "recorded" if found.missing == "left" else "posted"
        extra = found.right if side == "recorded" else found.left
        return (
            f"messages: {mine} posted, {theirs} recorded "
            f"(the {side} {found.pointer} is {_describe(extra)})"
        )
    said = f"resume: {mine} entr{'y' if mine == 1 else 'ies'} posted, {theirs} recorded"
    if mine and theirs:
        return said
    return said + " (a resume answers the interrupt the run before ended on)"


def _unmatched(pointer: str) -> bool:
    return pointer[1:] in _UNMATCHED


def closeness(posted: dict[str, Any], recorded: dict[str, Any]) -> tuple[int, int]:
    """How close a recorded input is to a posted one, higher is closer: how many of its
    messages and resume entries are the posted ones at the same place, plus one each for the
    same state and the same tools; then, among equals, fewer of them that differ."""
    pairs = [
        *zip_longest(posted["messages"], recorded["messages"], fillvalue=MISSING),
        *zip_longest(posted["resume"], recorded["resume"], fillvalue=MISSING),
        *((posted[key], recorded[key]) for key in _UNMATCHED),
    ]
    agree = sum(first_difference(a, b, numbers="value") is None for a, b in pairs)
    return agree, agree - len(pairs)


def _short(value: Any) -> str:
    return "nothing" if value is None or value is MISSING else short_repr(value, 80)


def _describe(message: Any) -> str:
    if isinstance(message, dict):
        role = str(message.get("role", "?"))
        article = "an" if role[:1] in ("a", "e", "i", "o", "u") else "a"
        return f"{article} {role} message {_short(message.get('content'))}"
    return _short(message)


@dataclass
class RunMatcher:
    """Chooses the served run for each posted input (see the module docstring)."""

    runs: Sequence[ServedRun]
    fixed: int | None = None
    in_order: bool = False
    requests: int = 0
    _threads: dict[str, tuple[Path, Any]] = field(default_factory=dict)
    _unmatched: int = 0

    def choose(self, posted: Mapping[str, Any]) -> Choice:
        self.requests += 1
        if self.fixed is not None:
            return self._serve(self.runs[self.fixed], "fixed", posted)
        with_input = [r for r in self.runs if r.view is not None]
        if self.in_order or not with_input:
            return self._serve(self.runs[(self.requests - 1) % len(self.runs)], "in order", posted)
        view = input_view(posted)
        thread = posted.get("threadId")
        bound = self._threads.get(thread) if isinstance(thread, str) else None
        matches: list[ServedRun] = []
        closest: tuple[tuple[int, int], ServedRun, str] | None = None
        for served in with_input:
            assert served.view is not None
            why = difference(view, served.view)
            if not why:
                matches.append(served)
                continue
            score = closeness(view, served.view)
            if closest is None or score > closest[0]:
                closest = (score, served, why)
        if matches:
            best = min(
                matches,
                key=lambda r: (
                    _thread_of(r) != bound and _recorded_thread(r) != thread,
                    r.served,
                    r.number,
                ),
            )
            return self._serve(best, "matched", posted)
        # Nothing to match on (a probe with no messages), or runs recorded without an input:
        # those are served in order.
        without = [r for r in self.runs if r.view is None]
        if not without and not view["messages"] and not view["resume"]:
            without = list(self.runs)
        if without:
            self._unmatched += 1
            return self._serve(without[(self._unmatched - 1) % len(without)], "in order", posted)
        assert closest is not None
        return Choice(None, "refused", closest=closest[1], difference=closest[2])

    def _serve(self, served: ServedRun, how: str, posted: Mapping[str, Any]) -> Choice:
        served.served += 1
        thread = posted.get("threadId")
        if isinstance(thread, str):
            self._threads[thread] = _thread_of(served)
        return Choice(served, how)


def _recorded_thread(served: ServedRun) -> Any:
    recorded = served.run.input or {}
    thread = recorded.get("threadId")
    if thread is None and served.run.events:
        thread = served.run.events[0].get("threadId")
    return thread


def _thread_of(served: ServedRun) -> tuple[Path, Any]:
    return served.path, _recorded_thread(served)
