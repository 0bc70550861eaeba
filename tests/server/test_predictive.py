"""Predictive state: tool arguments streamed into the client's state, and confirmation.

The parser is checked against ``json.loads`` and against the one property the client relies on
(every value shown is a prefix of the final one); the emitter through ``RunContext.new`` and the
run driver, every stream folded by the client ``Session`` in strict mode.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agui_replay.client import Session
from agui_replay.errors import AgentError, InvalidArgumentError
from agui_replay.events import to_wire
from agui_replay.providers._chunking import by_char, by_size
from agui_replay.server import (
    PredictState,
    RunContext,
    StateFromArgument,
    run_agent_sync,
    run_input,
)
from agui_replay.server._partial_json import PartialJSON
from agui_replay.server._predictive import InMemoryConfirmations
from agui_replay.server.testing import fold
from agui_replay.strategies import chunk_splits
from agui_replay.strategies._documents import json_values

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# The recipe the example agent streams, imported so that the data lives in one place.
from examples.recipe.recipe import CARBONARA as RECIPE  # noqa: E402

ARGS = json.dumps({"recipe": RECIPE}, ensure_ascii=False)
CONFIG = {"recipe": ("update_recipe", "recipe")}


def grows_into(partial: Any, final: Any) -> bool:
    """Whether ``partial`` can become ``final`` by more text arriving (the prefix relation)."""
    if isinstance(partial, str) and isinstance(final, str):
        return final.startswith(partial)
    if isinstance(partial, dict) and isinstance(final, dict):
        return all(k in final and grows_into(v, final[k]) for k, v in partial.items())
    if isinstance(partial, list) and isinstance(final, list):
        if len(partial) > len(final):
            return False
        if not partial:
            return True
        done = partial[:-1]
        return json_same(done, final[: len(done)]) and grows_into(partial[-1], final[len(done)])
    return json_same(partial, final)


def json_same(a: Any, b: Any) -> bool:
    """JSON equality that tells 1 from 1.0 and from true."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def state_events(events: list[Any]) -> list[dict[str, Any]]:
    return [w for w in map(to_wire, events) if w["type"].startswith("STATE_")]


def states_seen(events: list[Any], start: Any = None) -> tuple[list[Any], Session]:
    """The client's state after every state event (harness streams, strict mode)."""
    wires = [to_wire(e) for e in events]
    session = Session(state=start, mode="strict")
    seen = []
    session.apply({"type": "RUN_STARTED", "threadId": "harness", "runId": "harness"})
    for wire in wires:
        session.apply(wire)
        if wire["type"].startswith("STATE_"):
            seen.append(session.state)
    session.apply({"type": "RUN_FINISHED", "threadId": "harness", "runId": "harness"})
    session.finish()
    assert session.errors == [], session.errors
    return seen, session


def stream_call(fragments: list[str], **config: Any) -> tuple[list[Any], RunContext[Any]]:
    ctx, events = RunContext.new(
        run_input("t", "r", state=config.pop("state", None)),
        config.pop("state_type", None),
        predict_state=config.pop("predict_state", CONFIG),
        **config,
    )
    with ctx.tool_call("update_recipe") as call:
        for fragment in fragments:
            call.args(fragment)
        call.result("Recipe updated.")
    return events.drain(), ctx


# -- the parser -------------------------------------------------------------------------------


def test_partial_values_follow_the_text_without_guessing() -> None:
    parser = PartialJSON()
    seen = []
    for fragment in ['{"tit', 'le": "Clas', 'sic", "serves": 1', "2, ", '"vegan": tr', "ue}"]:
        parser.feed(fragment)
        seen.append(parser.value)
    assert seen == [
        {},  # the key is incomplete
        {"title": "Clas"},
        {"title": "Classic"},  # 1 may become 12: not shown
        {"title": "Classic", "serves": 12},
        {"title": "Classic", "serves": 12},  # "tr" is not a value yet
        {"title": "Classic", "serves": 12, "vegan": True},
    ]
    assert parser.complete
    assert parser.final() == {"title": "Classic", "serves": 12, "vegan": True}


def test_split_escapes_and_surrogate_pairs_never_show_half_a_character() -> None:
    text = json.dumps({"icon": '🍝 "q" \\ é'}, ensure_ascii=True)  # 🍝 = \ud83c\udf5d
    parser = PartialJSON()
    for ch in text:
        parser.feed(ch)
        if parser.value is not PartialJSON.NOTHING:
            value = parser.value.get("icon", "")
            # A lone surrogate would not encode as UTF-8, nor be a prefix of the final text.
            value.encode("utf-8")
            assert '🍝 "q" \\ é'.startswith(value)
    assert parser.value == {"icon": '🍝 "q" \\ é'}


def test_text_that_stops_being_json_keeps_the_last_good_value() -> None:
    parser = PartialJSON()
    parser.feed('{"title": "Carbonara", ')
    assert parser.feed("oops") is False
    assert parser.error is not None
    assert "expected a key" in parser.error
    assert parser.value == {"title": "Carbonara"}
    with pytest.raises(ValueError, match="Expecting"):
        parser.final()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), value=json_values(max_depth=3, max_leaves=20), ascii=st.booleans())
def test_every_partial_value_is_a_prefix_of_the_final_one(
    data: st.DataObject, value: Any, ascii: bool
) -> None:
    indent = data.draw(st.sampled_from([None, 1]))
    text = json.dumps(value, ensure_ascii=ascii, indent=indent)
    parser = PartialJSON()
    previous: Any = PartialJSON.NOTHING
    for fragment in data.draw(chunk_splits(text, allow_empty=True)):
        parser.feed(fragment)
        if parser.value is PartialJSON.NOTHING:
            continue
        json.dumps(parser.value).encode("utf-8")  # strict JSON, no lone surrogates
        assert grows_into(parser.value, value), (parser.value, value)
        if previous is not PartialJSON.NOTHING:
            assert grows_into(previous, parser.value), (previous, parser.value)
        previous = parser.value
    # A bare number or literal at the top stays open (it could go on); the rest is complete.
    if isinstance(value, (str, list, dict)):
        assert parser.complete
        assert json_same(parser.value, value)


# -- streaming into the state -----------------------------------------------------------------


def test_fragments_grow_the_recipe_title_first_then_a_final_snapshot() -> None:
    events, _ = stream_call(by_size(ARGS, 9))
    wires = state_events(events)
    assert wires[0]["type"] == "STATE_SNAPSHOT"  # the first publish of a run
    assert wires[-1] == {"type": "STATE_SNAPSHOT", "snapshot": {"recipe": RECIPE}}
    deltas = [w for w in wires if w["type"] == "STATE_DELTA"]
    assert len(deltas) > 40  # the recipe is written piece by piece, not at the end
    seen, session = states_seen(events)
    recipes = [s["recipe"] for s in seen]
    assert all(grows_into(r, RECIPE) for r in recipes)
    firsts = {}
    for index, recipe in enumerate(recipes):
        for key in recipe:
            firsts.setdefault(key, index)
    assert list(firsts) == list(RECIPE)  # fields appear in the order the model writes them
    # The title shows while it is being written, before any other field.
    partial_titles = [r for r in recipes if r.get("title") not in (None, RECIPE["title"])]
    assert partial_titles
    assert all(list(r) == ["title"] for r in partial_titles)
    # Ingredients arrive one by one.
    counts = [len(r["ingredients"]) for r in recipes if "ingredients" in r]
    assert counts == sorted(counts)
    assert {1, 2, 3, 4, 5} <= set(counts)
    assert session.state == {"recipe": RECIPE}


def test_the_stream_verifies_strictly_through_the_run_driver() -> None:
    def agent(ctx: RunContext[Any]) -> None:
        with ctx.tool_call("update_recipe") as call:
            for fragment in by_size(ARGS, 13):
                call.args(fragment)
            call.result("Recipe updated.")
        ctx.say("Here's your recipe!")

    events = run_agent_sync(agent, run_input("t", "r1"), predict_state=CONFIG)
    session = fold(events, mode="strict")
    assert session.run_error is None
    assert session.errors == []
    assert session.state == {"recipe": RECIPE}
    kinds = [to_wire(e)["type"] for e in events]
    # The final snapshot goes out while the call is open, before its end and result.
    last_snapshot = max(i for i, k in enumerate(kinds) if k == "STATE_SNAPSHOT")
    assert kinds[last_snapshot + 1 : last_snapshot + 3] == ["TOOL_CALL_END", "TOOL_CALL_RESULT"]


def test_fragments_that_change_nothing_send_nothing() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), predict_state=CONFIG)
    with ctx.tool_call("update_recipe") as call:
        call.args('{"recipe": {"title": "Carbonara"')
        before = len(state_events(events.drain()))
        for fragment in [" ", "\n", ', "ski', "ll_lev", 'el"', ": "]:  # no new value
            call.args(fragment)
        assert state_events(events.drain()) == []
        call.args('"Easy"}}')
        assert len(state_events(events.drain())) == 1
    assert before == 1


def test_other_tools_and_arguments_before_the_mapped_one_publish_nothing() -> None:
    ctx, events = RunContext.new(run_input("t", "r"), predict_state=CONFIG)
    stream: list[Any] = []
    with ctx.tool_call("get_weather") as call:
        call.args('{"recipe": {"title": "not a recipe tool"}}')
        call.result("sunny")
    with ctx.tool_call("update_recipe") as call:
        call.args('{"note": "first the note", ')
        stream += events.drain()
        assert state_events(stream) == []
        call.args('"recipe": {"title": "Ca')
        stream += events.drain()
        assert [w["type"] for w in state_events(stream)] == ["STATE_SNAPSHOT"]
        call.args('rbonara"}}')
        call.result("ok")
    stream += events.drain()
    seen, _session = states_seen(stream)
    # Predicted twice, then the final snapshot when the tool finished.
    assert seen == [{"recipe": {"title": "Ca"}}] + [{"recipe": {"title": "Carbonara"}}] * 2


def test_star_maps_the_whole_argument_object_and_keeps_other_keys() -> None:
    document = {"title": "Minutes", "content": "We met. " * 20, "metadata": {"tags": ["a"]}}
    ctx, events = RunContext.new(
        run_input("t", "r", state={"recipe": RECIPE}),
        predict_state={"document": {"tool": "create_document", "tool_argument": "*"}},
    )
    with ctx.tool_call("create_document") as call:
        for fragment in by_size(json.dumps(document), 11):
            call.args(fragment)
        call.result("Document created.")
    seen, session = states_seen(events.drain(), {"recipe": RECIPE})
    assert all(s["recipe"] == RECIPE for s in seen)
    assert all(grows_into(s["document"], document) for s in seen)
    assert session.state == {"recipe": RECIPE, "document": document}
    assert ctx.state() == {"recipe": RECIPE, "document": document}


def test_two_keys_can_follow_two_arguments_of_one_tool() -> None:
    config = [
        StateFromArgument("steps", "plan", "steps"),
        StateFromArgument("goal", "plan", "goal"),
    ]
    args = {"goal": "ship", "steps": [{"description": "write"}, {"description": "test"}]}
    ctx, events = RunContext.new(run_input("t", "r"), predict_state=PredictState(config))
    with ctx.tool_call("plan") as call:
        for ch in by_char(json.dumps(args)):
            call.args(ch)
        call.result("ok")
    seen, session = states_seen(events.drain())
    assert any("goal" in s and "steps" not in s for s in seen)  # goal is written first
    assert session.state == {"goal": "ship", "steps": args["steps"]}


class Kitchen(BaseModel):
    recipe: dict[str, Any] | None = None
    servings: int = 2


def test_a_typed_state_takes_the_final_value_and_keeps_its_other_fields() -> None:
    events, ctx = stream_call(by_size(ARGS, 50), state=Kitchen(servings=4), state_type=Kitchen)
    assert isinstance(ctx.state(), Kitchen)
    assert ctx.state().recipe == RECIPE
    assert ctx.state().servings == 4
    seen, session = states_seen(events)
    assert all(s["servings"] == 4 for s in seen)
    assert session.state == {"recipe": RECIPE, "servings": 4}


def test_new_takes_the_typed_state_from_run_input() -> None:
    # stream_call passes state through run_input, so also check RunContext.new's state_type.
    ctx, _events = RunContext.new(
        run_input("t", "r", state={"servings": 3}), Kitchen, predict_state=CONFIG
    )
    with ctx.tool_call("update_recipe") as call:
        call.args(ARGS)
        call.result("ok")
    assert ctx.state() == Kitchen(recipe=RECIPE, servings=3)


def test_discarding_a_prediction_puts_the_old_value_back() -> None:
    old = {"title": "Toast", "instructions": ["toast it"]}
    ctx, events = RunContext.new(run_input("t", "r", state={"recipe": old}), predict_state=CONFIG)
    with ctx.tool_call("update_recipe") as call:
        for fragment in by_size(ARGS, 20):
            call.args(fragment)
        call.discard_prediction()  # say the tool refused the recipe
        call.result("not valid")
    wires = state_events(events.drain())
    assert wires[-1] == {"type": "STATE_SNAPSHOT", "snapshot": {"recipe": old}}
    assert ctx.state() == {"recipe": old}


def test_arguments_that_are_not_json_fail_clearly_when_the_tool_finishes() -> None:
    ctx, _events = RunContext.new(run_input("t", "r"), predict_state=CONFIG)
    call = ctx.tool_call("update_recipe")
    call.args('{"recipe": {"title": "Ca')
    with pytest.raises(AgentError, match="not complete JSON"):
        call.result("ok")


def test_a_state_that_is_not_an_object_cannot_take_keys() -> None:
    ctx, _events = RunContext.new(run_input("t", "r", state=[1, 2]), list, predict_state=CONFIG)
    call = ctx.tool_call("update_recipe")
    with pytest.raises(InvalidArgumentError, match="must be a JSON object"):
        call.args('{"recipe": {"title": "x"}}')


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"recipe": "update_recipe"}, "expected state key"),
        ({"recipe": ("update_recipe",)}, "expected state key"),
        ({"recipe": ("", "recipe")}, "non-empty strings"),
        ({"recipe": {"tool_argument": "recipe"}}, "non-empty strings"),
        ({3: ("update_recipe", "recipe")}, "state key"),
    ],
)
def test_bad_configurations_say_what_is_expected(config: Any, match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        RunContext.new(run_input(), predict_state=config)


def test_require_confirmation_alone_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="needs predict_state"):
        run_agent_sync(lambda ctx: None, run_input(), require_confirmation=True)


# -- confirmation -----------------------------------------------------------------------------


class Client:
    """One thread as a client keeps it: the state and the messages, carried from run to run."""

    def __init__(self, state: Any = None) -> None:
        self.state = state
        self.messages: list[dict[str, Any]] = [
            {"id": "u1", "role": "user", "content": "carbonara, please"}
        ]
        self.last_events: list[dict[str, Any]] = []
        self.runs = 0

    def run(self, agent: Any, resume: list[dict[str, Any]] | None = None, **config: Any) -> Session:
        self.runs += 1
        events = run_agent_sync(
            agent,
            run_input(
                "thread-1",
                f"run-{self.runs}",
                state=self.state,
                messages=self.messages,
                resume=resume,
            ),
            **config,
        )
        session = fold(events, state=self.state, messages=self.messages, mode="strict")
        assert session.errors == [], session.errors
        self.state = session.state
        self.messages = list(session.messages)
        self.last_events = [to_wire(e) for e in events]
        return session


class RecipeTool:
    """A function agent: the recipe tool, paused for confirmation, with a record of runs."""

    def __init__(self) -> None:
        self.ran: list[Any] = []
        self.resumed: list[bool] = []

    def __call__(self, ctx: RunContext[Any]) -> Any:
        resumed = ctx.resumed_tool_call()
        if resumed is not None:
            with resumed as call:
                self.resumed.append(call.approved)
                if call.approved:
                    self.ran.append(call.parse_args())
                    call.result("Recipe updated.")
                else:
                    call.result("The user said no.")
            return None
        with ctx.tool_call("update_recipe") as call:
            for fragment in by_size(ARGS, 17):
                call.args(fragment)
            return call.request_confirmation("Use this recipe?")


OLD = {"recipe": {"title": "Toast", "instructions": ["toast it"]}, "servings": 2}
CONFIRM = {"predict_state": CONFIG, "require_confirmation": True}


def test_run_one_pauses_on_a_tool_call_interrupt_with_the_prediction_visible() -> None:
    client, agent = Client(OLD), RecipeTool()
    session = client.run(agent, **CONFIRM)
    assert session.run_error is None
    [interrupt] = session.pending_interrupts
    assert interrupt["reason"] == "tool_call"
    assert interrupt["toolCallId"] == "run-1-call-1"
    assert interrupt["id"] == "run-1-call-1-confirm"
    assert interrupt["message"] == "Use this recipe?"
    assert interrupt["responseSchema"]["properties"] == {"approved": {"type": "boolean"}}
    # The client watched the recipe being written; the tool has not run.
    assert client.state == {"recipe": RECIPE, "servings": 2}
    assert agent.ran == []
    call = client.messages[-1]["toolCalls"][0]
    assert json.loads(call["function"]["arguments"]) == {"recipe": RECIPE}


def test_approving_runs_the_tool_and_publishes_the_final_state() -> None:
    client, agent = Client(OLD), RecipeTool()
    client.run(agent, **CONFIRM)
    session = client.run(
        agent, resume=[{"interruptId": "run-1-call-1-confirm", "status": "resolved"}], **CONFIRM
    )
    assert session.run_error is None
    assert session.pending_interrupts == []
    assert agent.resumed == [True]
    assert agent.ran == [{"recipe": RECIPE}]
    assert client.state == {"recipe": RECIPE, "servings": 2}
    wires = client.last_events
    assert [w["type"] for w in wires] == [
        "RUN_STARTED",
        "TOOL_CALL_START",  # the paused call, by its id: the client already holds it
        "STATE_SNAPSHOT",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "RUN_FINISHED",
    ]
    assert wires[2]["snapshot"] == {"recipe": RECIPE, "servings": 2}
    assert wires[4]["toolCallId"] == "run-1-call-1"
    # The client's thread: one call, answered once, right after it.
    assert [m["role"] for m in client.messages] == ["user", "assistant", "tool"]
    assert len(client.messages[1]["toolCalls"]) == 1


def test_rejecting_restores_the_state_and_never_runs_the_tool() -> None:
    client, agent = Client(OLD), RecipeTool()
    client.run(agent, **CONFIRM)
    assert client.state != OLD
    session = client.run(
        agent, resume=[{"interruptId": "run-1-call-1-confirm", "status": "cancelled"}], **CONFIRM
    )
    assert session.run_error is None
    assert agent.ran == []
    assert agent.resumed == [False]
    assert client.state == OLD
    snapshots = [w for w in client.last_events if w["type"] == "STATE_SNAPSHOT"]
    assert snapshots == [{"type": "STATE_SNAPSHOT", "snapshot": OLD}]


def test_a_resolved_answer_with_approved_false_rejects_too() -> None:
    client, agent = Client(OLD), RecipeTool()
    client.run(agent, **CONFIRM)
    client.run(
        agent,
        resume=[
            {
                "interruptId": "run-1-call-1-confirm",
                "status": "resolved",
                "payload": {"approved": False},
            }
        ],
        **CONFIRM,
    )
    assert agent.ran == []
    assert client.state == OLD


def test_rejecting_removes_a_key_the_state_did_not_have() -> None:
    client, agent = Client({"servings": 2}), RecipeTool()
    client.run(agent, **CONFIRM)
    assert "recipe" in client.state
    client.run(agent, resume=[{"interruptId": "run-1-call-1-confirm", "status": "cancelled"}])
    assert client.state == {"servings": 2}


def test_the_tool_cannot_run_before_confirmation() -> None:
    ctx, _ = RunContext.new(run_input(), **CONFIRM)
    call = ctx.tool_call("update_recipe")
    call.args(ARGS)
    with pytest.raises(AgentError, match="request_confirmation") as refused:
        call.result("Recipe updated.")
    assert refused.value.code == "PROTOCOL"  # the run ends with RUN_ERROR code PROTOCOL


def test_an_approval_without_the_record_is_rebuilt_from_the_thread() -> None:
    """Another process paused the run: the arguments come from the client's messages."""
    client, agent = Client(OLD), RecipeTool()
    client.run(agent, predict_state=PredictState(CONFIG, require_confirmation=True))
    fresh = PredictState(CONFIG, confirmations=InMemoryConfirmations())  # an empty store
    client.run(
        agent,
        resume=[{"interruptId": "run-1-call-1-confirm", "status": "resolved"}],
        predict_state=fresh,
    )
    assert agent.ran == [{"recipe": RECIPE}]
    assert client.state == {"recipe": RECIPE, "servings": 2}


def test_a_rejection_without_the_record_fails_loudly() -> None:
    client, agent = Client(OLD), RecipeTool()
    client.run(agent, **CONFIRM)
    fresh = PredictState(CONFIG, confirmations=InMemoryConfirmations())
    session = client.run(
        agent,
        resume=[{"interruptId": "run-1-call-1-confirm", "status": "cancelled"}],
        predict_state=fresh,
    )
    assert session.run_error is not None
    assert session.run_error["code"] == "PROTOCOL"
    assert "cannot be restored" in session.run_error["message"]
    assert agent.ran == []


def test_answers_to_other_interrupts_are_left_alone() -> None:
    seen = []

    def agent(ctx: RunContext[Any]) -> None:
        seen.append(ctx.resumed_tool_call())

    run_agent_sync(
        agent,
        run_input(resume=[{"interruptId": "confirm-clear", "status": "resolved"}]),
        **CONFIRM,
    )
    assert seen == [None]


# -- any chunking -----------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(chunks=chunk_splits(ARGS, max_chunks=80))
def test_every_chunking_ends_in_the_same_state(chunks: list[str]) -> None:
    events, _ = stream_call(chunks)
    seen, session = states_seen(events)
    assert session.state == {"recipe": RECIPE}
    assert all(grows_into(s["recipe"], RECIPE) for s in seen[:-1])


@settings(max_examples=40, deadline=None)
@given(chunks=chunk_splits(json.dumps({"recipe": RECIPE}, ensure_ascii=True), max_chunks=60))
def test_escaped_arguments_in_any_chunking_end_in_the_same_state(chunks: list[str]) -> None:
    events, _ = stream_call(chunks)
    seen, session = states_seen(events)
    assert session.state == {"recipe": RECIPE}
    assert all(grows_into(s["recipe"], RECIPE) for s in seen)
