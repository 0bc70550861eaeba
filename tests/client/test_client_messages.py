"""The indexed message list against a literal reading of the reference applier.

``Session`` keeps messages indexed (agui_replay.client._messages) so that tool results, lookups and
MESSAGES_SNAPSHOT merges cost time proportional to the event. This file checks it against the
reference client's algorithm done the plain way, on one list, with ``find`` / ``findIndex``
searches and the snapshot filter (defaultApplyEvents in @ag-ui/client 1.0, read for behaviour):
random sequences of openers, tool calls with parents, results (some reusing a message id),
reasoning and activity messages, and snapshots that keep, drop, repeat and add messages.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.client import Session

Message = dict[str, Any]
IDS = ["a", "b", "c", "d", "e", "f"]
CALLS = ["c1", "c2", "c3", "c4"]


class Plain:
    """The reference applier's message handling, literally (one list, linear searches)."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def find(self, mid: str) -> Message | None:
        return next((m for m in self.messages if m.get("id") == mid), None)

    def holder(self, cid: str, assistant: bool = False) -> Message | None:
        for m in self.messages:
            if assistant and m.get("role") != "assistant":
                continue
            if any(c.get("id") == cid for c in m.get("toolCalls") or ()):
                return m
        return None

    def apply(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
            found = self.find(event["messageId"])
            if found is None:
                role = "reasoning" if kind == "REASONING_MESSAGE_START" else "assistant"
                self.messages.append({"id": event["messageId"], "role": role, "content": ""})
        elif kind == "TEXT_MESSAGE_CONTENT":
            found = self.find(event["messageId"])
            if found is not None and found.get("role") != "activity":
                found["content"] = (found.get("content") or "") + event["delta"]
        elif kind == "TOOL_CALL_START":
            cid = event["toolCallId"]
            if self.holder(cid) is not None:
                return
            parent = event.get("parentMessageId")
            owner: Message
            if parent:
                found = self.find(parent)
                if found is not None and found.get("role") == "assistant":
                    owner = found
                else:
                    owner = {"id": cid if found else parent, "role": "assistant", "toolCalls": []}
                    self.messages.append(owner)
            else:
                owner = {"id": cid, "role": "assistant", "toolCalls": []}
                self.messages.append(owner)
            owner.setdefault("toolCalls", [])
            owner["toolCalls"].append(
                {"id": cid, "type": "function", "function": {"name": "f", "arguments": ""}}
            )
        elif kind == "TOOL_CALL_RESULT":
            message = {
                "id": event["messageId"],
                "toolCallId": event["toolCallId"],
                "role": "tool",
                "content": event["content"],
            }
            at = next(
                (
                    i
                    for i, m in enumerate(self.messages)
                    if m.get("role") == "assistant"
                    and any(c.get("id") == event["toolCallId"] for c in m.get("toolCalls") or ())
                ),
                -1,
            )
            if at == -1:
                self.messages.append(message)
            else:
                at += 1
                while at < len(self.messages) and self.messages[at].get("role") == "tool":
                    at += 1
                self.messages.insert(at, message)
        elif kind == "ACTIVITY_SNAPSHOT":
            new = {
                "id": event["messageId"],
                "role": "activity",
                "activityType": event["activityType"],
                "content": copy.deepcopy(event["content"]),
            }
            at = next((i for i, m in enumerate(self.messages) if m["id"] == event["messageId"]), -1)
            replace = event.get("replace", True)
            if at == -1:
                self.messages.append(new)
            elif self.messages[at].get("role") == "activity":
                if replace:
                    self.messages[at] = {**self.messages[at], **new}
            elif replace:
                self.messages[at] = new
        elif kind == "MESSAGES_SNAPSHOT":
            incoming = copy.deepcopy(event["messages"])
            by_id = {m["id"]: m for m in incoming}
            metadata = event.get("metadata", {}).get("@ag-ui/client", {})
            owned = metadata.get("authoritativeActivityTypes", ...)
            has_activity = any(m["role"] == "activity" for m in incoming)
            has_reasoning = any(m["role"] == "reasoning" for m in incoming)

            def keep(m: Message) -> bool:
                if m["role"] == "activity":
                    if isinstance(owned, list):
                        return m.get("activityType") not in owned
                    return owned is ... and not has_activity
                return m["role"] == "reasoning" and not has_reasoning

            kept = [by_id.get(m["id"], m) for m in self.messages if m["id"] in by_id or keep(m)]
            present = {m["id"] for m in kept}
            kept.extend(m for m in incoming if m["id"] not in present)
            self.messages = kept


@st.composite
def snapshot_message(draw: st.DrawFn) -> Message:
    mid = draw(st.sampled_from([*IDS, "n1", "n2"]))
    role = draw(
        st.sampled_from(["user", "assistant", "assistant", "tool", "reasoning", "activity"])
    )
    message: Message = {"id": mid, "role": role}
    if role == "tool":
        message.update(toolCallId=draw(st.sampled_from(CALLS)), content="r")
    elif role == "activity":
        message.update(activityType=draw(st.sampled_from(["plan", "progress"])), content={})
    elif role == "assistant" and draw(st.booleans()):
        cid = draw(st.sampled_from(CALLS))
        message["toolCalls"] = [
            {"id": cid, "type": "function", "function": {"name": "f", "arguments": ""}}
        ]
    else:
        message["content"] = draw(st.text("xy", max_size=2))
    return message


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(
            [
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "REASONING_MESSAGE_START",
                "TOOL_CALL_START",
                "TOOL_CALL_RESULT",
                "TOOL_CALL_RESULT",
                "TOOL_CALL_RESULT",
                "ACTIVITY_SNAPSHOT",
                "MESSAGES_SNAPSHOT",
            ]
        )
    )
    mid = draw(st.sampled_from(IDS))
    if kind in ("TEXT_MESSAGE_START", "REASONING_MESSAGE_START"):
        return {"type": kind, "messageId": mid}
    if kind == "TEXT_MESSAGE_CONTENT":
        return {"type": kind, "messageId": mid, "delta": draw(st.sampled_from("xyz"))}
    if kind == "TOOL_CALL_START":
        event = {"type": kind, "toolCallId": draw(st.sampled_from(CALLS)), "toolCallName": "f"}
        if draw(st.booleans()):
            event["parentMessageId"] = mid
        return event
    if kind == "TOOL_CALL_RESULT":
        return {
            "type": kind,
            "messageId": draw(st.sampled_from([*IDS, "same", "same"])),
            "toolCallId": draw(st.sampled_from(CALLS)),
            "content": "ok",
        }
    if kind == "ACTIVITY_SNAPSHOT":
        event = {
            "type": kind,
            "messageId": mid,
            "activityType": draw(st.sampled_from(["plan", "progress"])),
            "content": {"n": draw(st.integers(0, 3))},
        }
        if draw(st.booleans()):
            event["replace"] = draw(st.booleans())
        return event
    event = {"type": kind, "messages": draw(st.lists(snapshot_message(), max_size=5))}
    owned = draw(st.sampled_from([..., None, ["plan"], []]))
    if owned is not ...:
        event["metadata"] = {"@ag-ui/client": {"authoritativeActivityTypes": owned}}
    return event


def _shape(messages: list[Message]) -> list[Message]:
    keys = ("id", "role", "content", "toolCallId", "activityType")
    return [
        {
            **{k: m[k] for k in keys if k in m},
            "calls": [c["id"] for c in m.get("toolCalls") or ()],
        }
        for m in messages
    ]


@settings(max_examples=400, deadline=None)
@given(st.lists(events(), max_size=40))
def test_the_indexed_list_folds_like_the_plain_reference_algorithm(
    stream: list[dict[str, Any]],
) -> None:
    plain = Plain()
    session = Session(verify=False)
    for at, event in enumerate(stream):
        plain.apply(event)
        session.apply(event)
        if at % 7 == 6:  # reading in the middle must not disturb what follows
            assert _shape(session.messages) == _shape(plain.messages)
    assert _shape(session.messages) == _shape(plain.messages)
    for mid in [*IDS, "same", "n1", "n2"]:
        found = session.message(mid)
        expected = plain.find(mid)
        assert (found is None) == (expected is None)
        if found is not None and expected is not None:
            assert _shape([found]) == _shape([expected])


def test_many_results_under_one_parent_keep_their_order() -> None:
    # Many results under one parent (a shape that must not cost quadratic time), kept small
    # here: the results line up behind the parent in order.
    stream: list[dict[str, Any]] = [{"type": "TEXT_MESSAGE_START", "messageId": "p"}]
    for i in range(50):
        stream.append(
            {
                "type": "TOOL_CALL_START",
                "toolCallId": f"c{i}",
                "toolCallName": "f",
                "parentMessageId": "p",
            }
        )
    stream.append({"type": "TEXT_MESSAGE_START", "messageId": "later"})
    for i in range(50):
        stream.append(
            {
                "type": "TOOL_CALL_RESULT",
                "messageId": "same",
                "toolCallId": f"c{i}",
                "content": str(i),
            }
        )
    session = Session(verify=False).apply_all(stream)
    contents = [m.get("content") for m in session.messages]
    assert contents == ["", *[str(i) for i in range(50)], ""]
    assert session.message("same") is session.messages[1]


def test_a_snapshot_replaces_a_kept_client_only_message_it_names() -> None:
    # Reasoning messages survive a snapshot that has none, unless it names them: then the
    # snapshot's message takes their place (whatever its role).
    stream: list[dict[str, Any]] = [
        {"type": "TEXT_MESSAGE_START", "messageId": "t1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r1"},
        {"type": "REASONING_MESSAGE_START", "messageId": "r2"},
        {"type": "TEXT_MESSAGE_START", "messageId": "t2"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [
                {"id": "t2", "role": "user", "content": "two"},
                {"id": "r2", "role": "user", "content": "was reasoning"},
                {"id": "new", "role": "user", "content": "new"},
            ],
        },
    ]
    plain = Plain()
    for event in stream:
        plain.apply(event)
    session = Session(verify=False).apply_all(stream)
    assert _shape(session.messages) == _shape(plain.messages)
    assert [m["id"] for m in session.messages] == ["r1", "r2", "t2", "new"]
    assert session.message("r2") == {"id": "r2", "role": "user", "content": "was reasoning"}
    assert session.message("t1") is None


def test_two_messages_given_one_by_a_snapshot_change_apart_afterwards() -> None:
    # Two local messages with one id both take the snapshot's message; an activity snapshot
    # then re-mints the first only, as the reference does (it replaces that place with a new
    # object), and the second keeps what the snapshot gave it.
    stream: list[dict[str, Any]] = [
        {"type": "TEXT_MESSAGE_START", "messageId": "a"},
        {"type": "TOOL_CALL_RESULT", "messageId": "a", "toolCallId": "c1", "content": "ok"},
        {
            "type": "MESSAGES_SNAPSHOT",
            "messages": [{"id": "a", "role": "activity", "activityType": "plan", "content": {}}],
        },
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan"}
        | {"content": {"n": 0}},
    ]
    plain = Plain()
    session = Session(verify=False)
    for event in stream:
        plain.apply(event)
        session.apply(event)
    assert _shape(session.messages) == _shape(plain.messages)
    assert [m["content"] for m in session.messages] == [{"n": 0}, {}]
