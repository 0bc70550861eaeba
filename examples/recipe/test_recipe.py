"""The recipe agent against a fake OpenAI endpoint, through the real ``openai`` SDK.

The fake streams the seed's recipe as ``update_recipe`` arguments in many fragments (and, in the
property tests, in any chunking hypothesis picks), then a text reply. Every run's events are folded
by the client ``Session`` in strict mode, carrying the state and the thread from run to run.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings

from agui_replay.client import Session
from agui_replay.events import to_wire
from agui_replay.providers import FakeProvider, by_size
from agui_replay.server import agui_app, run_agent_sync, run_input
from agui_replay.server.testing import fold, serve
from agui_replay.sse import decode_sse
from agui_replay.strategies import chunk_splits

from .agent import REJECTED, RecipeAgent
from .recipe import CARBONARA, UPDATE_RECIPE

ARGS = json.dumps({"recipe": CARBONARA}, ensure_ascii=False)
REPLY = ("Here's", " your", " recipe!")


def grows_into(partial: Any, final: Any) -> bool:
    """Whether more text could turn ``partial`` into ``final`` (strings and lists only grow)."""
    if isinstance(partial, str) and isinstance(final, str):
        return final.startswith(partial)
    if isinstance(partial, dict) and isinstance(final, dict):
        return all(k in final and grows_into(v, final[k]) for k, v in partial.items())
    if isinstance(partial, list) and isinstance(final, list):
        return len(partial) <= len(final) and all(
            (grows_into if i == len(partial) - 1 else _eq)(p, final[i])
            for i, p in enumerate(partial)
        )
    return _eq(partial, final)


def _eq(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


class Thread:
    """A client: state and messages carried between runs; every state it passed through."""

    def __init__(self) -> None:
        self.state: Any = None
        self.messages: list[dict[str, Any]] = []
        self.runs = 0
        self.states: list[Any] = []
        self.events: list[dict[str, Any]] = []

    def run(
        self,
        agent: RecipeAgent,
        said: str | None = None,
        resume: list[dict[str, Any]] | None = None,
    ) -> Session:
        self.runs += 1
        if said is not None:
            self.messages.append({"id": f"user-{self.runs}", "role": "user", "content": said})
        events = run_agent_sync(
            agent,
            run_input(
                "kitchen",
                f"run-{self.runs}",
                state=self.state,
                messages=self.messages,
                resume=resume,
            ),
        )
        self.events = [to_wire(e) for e in events]
        session = Session(state=self.state, messages=self.messages, mode="strict")
        self.states = []
        for event in self.events:
            session.apply(event)
            if event["type"].startswith("STATE_"):
                self.states.append(session.state)
        session.finish()
        assert session.errors == [], session.errors  # every delta applied
        assert session.run_error is None, session.run_error
        self.state, self.messages = session.state, list(session.messages)
        return session

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def reply(self) -> str:
        content: str = self.messages[-1]["content"]
        return content


def scripted(*argument_chunks: str, turns: int = 1) -> FakeProvider:
    fake = FakeProvider()
    if argument_chunks:
        fake.tool_call(UPDATE_RECIPE, *argument_chunks)
    for _ in range(turns):
        fake.reply(*REPLY)
    return fake


def test_the_recipe_is_written_into_the_state_then_the_model_replies() -> None:
    fake = scripted(*by_size(ARGS, 8))
    thread = Thread()
    with fake.serve() as server:
        thread.run(RecipeAgent(base_url=server.base_url), "I want to make a classic carbonara")
    fake.check()

    types = thread.types()
    assert types[:2] == ["RUN_STARTED", "TOOL_CALL_START"]
    assert types.count("TOOL_CALL_ARGS") == len(by_size(ARGS, 8))
    assert types.count("STATE_DELTA") > 40
    end = types.index("TOOL_CALL_END")
    assert types[end - 1] == "STATE_SNAPSHOT"  # the final state, once the tool has run
    assert thread.events[end - 1]["snapshot"] == {"recipe": CARBONARA}
    assert types[end + 1 :] == [
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * len(REPLY),
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    # The recipe grew: the title first, the other fields in the order the model wrote them.
    recipes = [s["recipe"] for s in thread.states]
    assert all(grows_into(r, CARBONARA) for r in recipes)
    order: dict[str, int] = {}
    for index, recipe in enumerate(recipes):
        for key in recipe:
            order.setdefault(key, index)
    assert list(order) == list(CARBONARA)
    assert thread.state == {"recipe": CARBONARA}
    assert thread.reply() == "".join(REPLY)

    # A real two-turn loop: the second request carries the call and the tool's result.
    first, second = fake.requests
    assert first.tool_names == [UPDATE_RECIPE]
    assert first.messages[-1] == {"role": "user", "content": "I want to make a classic carbonara"}
    call, result = second.messages[-2:]
    assert call["tool_calls"][0]["function"] == {"name": UPDATE_RECIPE, "arguments": ARGS}
    assert result == {
        "role": "tool",
        "tool_call_id": call["tool_calls"][0]["id"],
        "content": "Recipe updated.",
    }
    # The system prompt carries the state the tool just set.
    assert "Classic Pasta Carbonara" in second.messages[0]["content"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=chunk_splits(ARGS, max_chunks=60))
def test_any_chunking_of_the_arguments_ends_in_the_same_state(chunks: list[str]) -> None:
    fake = scripted(*chunks)
    thread = Thread()
    with fake.serve() as server:
        thread.run(RecipeAgent(base_url=server.base_url), "carbonara")
    fake.check()
    assert thread.state == {"recipe": CARBONARA}
    assert all(grows_into(s["recipe"], CARBONARA) for s in thread.states)
    assert thread.states[-1] == {"recipe": CARBONARA}


def test_confirmation_then_approval() -> None:
    fake = scripted(*by_size(ARGS, 10))
    thread = Thread()
    with fake.serve() as server:
        agent = RecipeAgent(base_url=server.base_url, require_confirmation=True)
        session = thread.run(agent, "carbonara")
        # Run 1 stopped before the tool ran, the predicted recipe on screen.
        assert thread.types()[-2:] == ["TOOL_CALL_END", "RUN_FINISHED"]
        assert "TOOL_CALL_RESULT" not in thread.types()
        [interrupt] = session.pending_interrupts
        assert interrupt["reason"] == "tool_call"
        assert interrupt["toolCallId"] == "run-1-call-1"
        assert thread.state == {"recipe": CARBONARA}
        assert len(fake.requests) == 1  # the model waits too

        thread.run(agent, resume=[{"interruptId": interrupt["id"], "status": "resolved"}])
    fake.check()
    assert thread.types()[:4] == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "STATE_SNAPSHOT",
        "TOOL_CALL_END",
    ]
    assert thread.events[2]["snapshot"] == {"recipe": CARBONARA}
    assert thread.state == {"recipe": CARBONARA}
    assert thread.reply() == "".join(REPLY)
    assert fake.requests[1].messages[-1]["content"] == "Recipe updated."
    assert [m["role"] for m in thread.messages] == ["user", "assistant", "tool", "assistant"]


def test_confirmation_then_rejection_restores_the_recipe() -> None:
    before = {"recipe": {**CARBONARA, "title": "Weeknight Carbonara", "ingredients": []}}
    fake = scripted(*by_size(ARGS, 10))
    thread = Thread()
    thread.state = before
    with fake.serve() as server:
        agent = RecipeAgent(base_url=server.base_url, require_confirmation=True)
        session = thread.run(agent, "make it classic")
        assert thread.state == {"recipe": CARBONARA}  # predicted
        [interrupt] = session.pending_interrupts
        thread.run(agent, resume=[{"interruptId": interrupt["id"], "status": "cancelled"}])
    fake.check()
    assert thread.state == before
    assert [e for e in thread.events if e["type"] == "STATE_SNAPSHOT"] == [
        {"type": "STATE_SNAPSHOT", "snapshot": before}
    ]
    # The model hears that the tool never ran.
    assert fake.requests[1].messages[-1]["content"] == REJECTED
    assert "rejected" in fake.requests[1].messages[-1]["content"]


def test_a_recipe_the_tool_refuses_is_taken_back() -> None:
    bad = json.dumps({"recipe": {"title": "Soup", "skill_level": "Wizard"}})
    fake = scripted(*by_size(bad, 5))
    thread = Thread()
    with fake.serve() as server:
        thread.run(RecipeAgent(base_url=server.base_url), "soup")
    fake.check()
    assert any(s.get("recipe", {}).get("title") == "Soup" for s in thread.states)
    assert thread.state == {"recipe": None}  # back to the default
    assert "not valid" in fake.requests[1].messages[-1]["content"]


def test_served_over_http_with_an_event_stream() -> None:
    fake = scripted(*by_size(ARGS, 25))
    with fake.serve() as provider:
        app = agui_app(RecipeAgent(base_url=provider.base_url))
        body = run_input("web", "r1", messages=["carbonara"])
        with serve(app) as url:
            response = httpx.post(
                url,
                json=body.model_dump(by_alias=True, mode="json"),
                headers={"accept": "text/event-stream"},
                timeout=30.0,
            )
    fake.check()
    assert response.status_code == 200
    events = decode_sse(response.content)
    session = fold(events, mode="strict")
    assert session.errors == []
    assert session.state == {"recipe": CARBONARA}
    assert session.messages[-1]["content"] == "".join(REPLY)
