"""Which recorded run answers a posted ``RunAgentInput``: the run whose input matches it.

A front end replays a conversation by posting, run after run, the input it built itself: its own
thread id, its own message ids, the interrupt ids the served stream gave it. So inputs are
compared after normalization, the way :mod:`agui_replay.normalize` names ids: message, tool call
and interrupt ids are renamed in order of first appearance (random ids inside content become
``<id-N>``), timestamps go, and only what the conversation is made of is compared — each
message's role, content, tool calls (arguments as JSON) and tool call reference, and each resume
entry's status and payload. State, tools, context and forwarded props are not compared.

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
from pathlib import Path
from typing import Any

from agui_replay._text import short_repr
from agui_replay.cassette import RecordedRun
from agui_replay.normalize import normalize_events

__all__ = [
    "Choice",
    "RunMatcher",
    "ServedRun",
    "input_view",
]

# The run id the synthetic RUN_STARTED carries: renamed ids become "posted-msg-1" and the like.
_RUN = "posted"


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
    """The normalized input compared against posted ones (``None``: recorded without one)."""
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
    """What two inputs of one conversation have in common once ids are normalized."""
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
    return {
        "messages": [_message(m) for m in normalized["messages"]],
        "resume": [_resume(r) for r in normalized["resume"]],
    }


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


def first_difference(posted: dict[str, Any], recorded: dict[str, Any]) -> tuple[int, str]:
    """How far two views agree (a score: higher is closer) and their first difference."""
    mine, theirs = posted["messages"], recorded["messages"]
    for i, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return i, f"messages[{i}]" + _where(a, b)
    if len(mine) != len(theirs):
        shorter = min(len(mine), len(theirs))
        extra = theirs[shorter] if len(theirs) > len(mine) else mine[shorter]
        return shorter, (
            f"messages: {len(mine)} posted, {len(theirs)} recorded "
            f"(the {'recorded' if len(theirs) > len(mine) else 'posted'} "
            f"messages[{shorter}] is {_describe(extra)})"
        )
    score = len(mine) + 1
    a_resume, b_resume = posted["resume"], recorded["resume"]
    if a_resume == b_resume:
        return score + 1, ""
    if not a_resume or not b_resume:
        return score, (
            f"resume: {len(a_resume)} entr{'y' if len(a_resume) == 1 else 'ies'} posted, "
            f"{len(b_resume)} recorded (a resume answers the interrupt the run before ended on)"
        )
    for i, (a, b) in enumerate(zip(a_resume, b_resume, strict=False)):
        if a != b:
            return score, f"resume[{i}]" + _where(a, b)
    return score, f"resume: {len(a_resume)} entries posted, {len(b_resume)} recorded"


def _where(posted: Any, recorded: Any) -> str:
    """``.key: posted X, recorded Y`` at the first key where two values differ."""
    if isinstance(posted, dict) and isinstance(recorded, dict):
        for key in [*posted, *(k for k in recorded if k not in posted)]:
            if posted.get(key) != recorded.get(key):
                return f".{key}" + _where(posted.get(key), recorded.get(key))
    if isinstance(posted, list) and isinstance(recorded, list) and len(posted) == len(recorded):
        for i, (a, b) in enumerate(zip(posted, recorded, strict=True)):
            if a != b:
                return f"[{i}]" + _where(a, b)
    return f": posted {_short(posted)}, recorded {_short(recorded)}"


def _short(value: Any) -> str:
    return "nothing" if value is None else short_repr(value, 80)


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
        closest: tuple[int, ServedRun, str] | None = None
        for served in with_input:
            assert served.view is not None
            score, difference = first_difference(view, served.view)
            if not difference:
                matches.append(served)
            elif closest is None or score > closest[0]:
                closest = (score, served, difference)
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
