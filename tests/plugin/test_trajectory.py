"""A replayed agent test that asserts its trajectory, written as a user writes it (pytester).

The project: a trip planner that asks an OpenAI model, runs the tools the model calls (each
one an AG-UI tool call with its result), and answers. The conftest's ``agui_upstream`` is a
FakeProvider standing in for the model; ``TRIP_ORDER`` says in which order it calls the tools,
as a model might after a prompt edit. The test checks the tool calls with
``assert_tool_calls``: strict mode catches a change of order, ``unordered`` accepts it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import openai  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from tests.support.pytester_run import run

CONFTEST = textwrap.dedent(
    """
    import os

    import pytest

    from agui_replay.providers import FakeProvider, ToolCall

    CALLS = {
        "flights": ToolCall("search_flights", '{"to": "Lis', 'bon", "from": "Oslo"}'),
        "hotels": ToolCall("find_hotels", '{"city": "Lisbon",', ' "nights": 2}'),
    }


    @pytest.fixture
    def agui_upstream():
        upstream = FakeProvider()  # stands in for api.openai.com
        order = os.environ.get("TRIP_ORDER", "flights,hotels").split(",")
        upstream.tool_calls(*(CALLS[name] for name in order))
        upstream.reply("Booked: a flight ", "and two nights.")
        with upstream.serve() as server:
            yield server
    """
)

AGENT = textwrap.dedent(
    """
    import json

    import openai

    SPECS = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}
        for name in ("search_flights", "find_hotels")
    ]


    def search_flights(args):
        return {"flight": "TP1234", "to": args["to"]}


    def find_hotels(args):
        return {"hotel": "Casa Azul", "nights": args["nights"]}


    TOOLS = {"search_flights": search_flights, "find_hotels": find_hotels}


    class TripPlanner:
        def __init__(self, client):
            self.client = client

        def run(self, ctx):
            messages = [{"role": "user", "content": ctx.last_user_text() or ""}]
            while True:
                stream = self.client.chat.completions.create(
                    model="gpt-4o-mini", messages=messages, tools=SPECS, stream=True
                )
                text, calls = "", {}
                for chunk in stream:
                    if not chunk.choices:
                        continue
                    delta = chunk.choices[0].delta
                    text += delta.content or ""
                    for part in delta.tool_calls or []:
                        call = calls.setdefault(part.index, {"id": "", "name": "", "args": ""})
                        call["id"] = part.id or call["id"]
                        call["name"] = part.function.name or call["name"]
                        call["args"] += part.function.arguments or ""
                if not calls:
                    ctx.say(text)
                    return
                messages.append({
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": c["id"],
                            "type": "function",
                            "function": {"name": c["name"], "arguments": c["args"]},
                        }
                        for c in calls.values()
                    ],
                })
                for call in calls.values():
                    result = TOOLS[call["name"]](json.loads(call["args"]))
                    with ctx.tool_call(call["name"]) as handle:
                        handle.args(call["args"])
                        handle.result(json.dumps(result))
                    messages.append(
                        {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
                    )
    """
)

TEST = textwrap.dedent(
    """
    import openai

    from agent import TripPlanner
    from agui_replay.assertions import assert_tool_calls, message_text, tool_calls


    def test_a_weekend_in_lisbon(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="sk-replay", max_retries=0)
        events = agui.run(TripPlanner(client), "A weekend in Lisbon, from Oslo")
        assert_tool_calls(
            events,
            [
                ("search_flights", {"to": "Lisbon", "from": "Oslo"}),
                ("find_hotels", {"city": "Lisbon", "nights": 2}),
            ],
            mode="MODE",
        )
        assert {c["name"]: c["result"] for c in tool_calls(events)} == {
            "search_flights": {"flight": "TP1234", "to": "Lisbon"},
            "find_hotels": {"hotel": "Casa Azul", "nights": 2},
        }
        assert message_text(events) == "Booked: a flight and two nights."
    """
)

CASSETTE = Path("cassettes", "test_trip", "test_a_weekend_in_lisbon.json")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("TRIP_ORDER", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(agent=AGENT)
    pytester.makeini("[pytest]\npythonpath = .\n")
    write_test(pytester, "strict")
    return pytester


def write_test(pytester: pytest.Pytester, mode: str) -> None:
    pytester.makepyfile(test_trip=TEST.replace("MODE", mode))


def test_a_replayed_test_asserts_its_trajectory_strictly(project: pytest.Pytester) -> None:
    run(project, "--agui-record").assert_outcomes(passed=1)
    assert (project.path / CASSETTE).is_file()
    result = run(project)  # offline: the trajectory comes from the recorded model turns
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["0 cassette(s) recorded, 1 replayed, 0 unused"])


def test_a_changed_tool_order_is_caught_by_strict_and_accepted_by_unordered(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "--agui-record").assert_outcomes(passed=1)
    # the model now looks the hotel up first (say, after a prompt edit), and the test is
    # recorded again
    monkeypatch.setenv("TRIP_ORDER", "hotels,flights")
    result = run(project, "--agui-record")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *AssertionError: tool calls differ (mode='strict', args='exact'; 2 expected, "
            '2 made): call #0 differs in the name: expected "search_flights", got "find_hotels"',
            "E *expected * | actual",
            'E *> #0 search_flights {"to": "Lisbon", "from": "Oslo"}*'
            '| #0 find_hotels {"city": "Lisbon", "nights": 2}',
            'E *#1 find_hotels {"city": "Lisbon", "nights": 2}*'
            '| #1 search_flights {"to": "Lisbon", "from": "Oslo"}',
        ]
    )
    # the order does not matter to this test: unordered accepts the new recording
    write_test(project, "unordered")
    run(project, "--agui-record").assert_outcomes(passed=1)
    run(project).assert_outcomes(passed=1)  # and its replay
    monkeypatch.delenv("TRIP_ORDER")
    run(project, "--agui-record").assert_outcomes(passed=1)  # and the first order still passes
