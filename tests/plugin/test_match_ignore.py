"""Tolerant provider matching: ``match_ignore`` leaves fields out of the compared request bodies.

The project is what a user has: an agent module whose system prompt and tool list go to an
OpenAI model, a test that runs it, and a conftest whose ``agui_upstream`` is a FakeProvider
standing in for the real provider. The suite records, edits the agent the way a user does
(a reworded prompt, a reworded tool description), and replays.
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
    import pytest

    from agui_replay.providers import FakeProvider


    @pytest.fixture
    def agui_upstream():
        upstream = FakeProvider()  # stands in for api.openai.com
        upstream.reply("Take ", "an umbrella.")
        with upstream.serve() as server:
            yield server
    """
)

AGENT = textwrap.dedent(
    """
    import openai

    PROMPT = "You are a weather assistant. Answer in one sentence."
    TOOLS = [
        {
            "type": "function",
            "function": {
                "name": "forecast",
                "description": "Tomorrow's forecast for a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]


    class Assistant:
        def __init__(self, client):
            self.client = client

        def run(self, ctx):
            stream = self.client.chat.completions.create(
                model="gpt-4o-mini",
                temperature=0.2,
                messages=[
                    {"role": "system", "content": PROMPT},
                    {"role": "user", "content": ctx.last_user_text() or ""},
                ],
                tools=TOOLS,
                stream=True,
            )
            with ctx.assistant_message() as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)
    """
)

TEST = textwrap.dedent(
    """
    import openai
    import pytest

    from agent import Assistant
    from agui_replay.assertions import message_text


    {marker}
    def test_umbrella(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="sk-replay", max_retries=0)
        events = agui.run(Assistant(client), "Rain in Oslo tomorrow?")
        assert message_text(events) == "Take an umbrella."
    """
)

CASSETTE = Path("cassettes", "test_weather", "test_umbrella.json")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(agent=AGENT)
    write_test(pytester, "")
    pytester.makeini("[pytest]\npythonpath = .\n")
    return pytester


def write_test(pytester: pytest.Pytester, marker: str) -> None:
    pytester.makepyfile(test_weather=TEST.format(marker=marker))


def edit_agent(pytester: pytest.Pytester, old: str, new: str) -> None:
    agent = pytester.path / "agent.py"
    text = agent.read_text(encoding="utf-8")
    assert old in text
    agent.write_text(text.replace(old, new), encoding="utf-8")


def literal(text: str) -> str:
    """``text`` as an fnmatch pattern matching itself."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in text)


def record(pytester: pytest.Pytester) -> bytes:
    run(pytester, "--agui-record").assert_outcomes(passed=1)
    return (pytester.path / CASSETTE).read_bytes()


REWORDED = ("Answer in one sentence.", "Answer briefly, in one friendly sentence.")


def test_a_prompt_edit_fails_and_the_message_names_the_setting(project: pytest.Pytester) -> None:
    record(project)
    edit_agent(project, *REWORDED)
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*request #0 (POST /v1/chat/completions) does not match recorded interaction #0*",
            "*first difference at /body/messages/0/content",
            "*if this field does not matter to the test, re-record, or ignore it: "
            + literal('@pytest.mark.agui(match_ignore=["/messages/0/content"])'),
        ]
    )
    result.stdout.no_fnmatch_line("*replayed with ignored fields*")


SECOND_TOOL = (
    "    }\n]\n",
    """    },
    {
        "type": "function",
        "function": {
            "name": "air_quality",
            "description": "Today's air quality for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
]
""",
)


@pytest.mark.parametrize(
    ("edit", "change"),
    [
        (SECOND_TOOL, " gained a tool (/tools/1)"),
        (('model="gpt-4o-mini"', 'model="gpt-4.1-mini"'), "'s /model changed"),
        (('"name": "forecast"', '"name": "weather_forecast"'), "'s /tools/0/function/name changed"),
    ],
    ids=["a second tool", "another model", "a renamed tool"],
)
def test_a_changed_agent_is_told_to_re_record_not_to_ignore_the_change(
    project: pytest.Pytester, edit: tuple[str, str], change: str
) -> None:
    # A user adds a tool to the agent (or switches its model, or renames a tool) and replays:
    # the hint must not offer to hide the very change under test.
    record(project)
    edit_agent(project, *edit)
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*the request{literal(change)}*the agent changed; if that is intended, re-record*"]
    )
    result.stdout.no_fnmatch_line("*match_ignore=*")


def test_a_prompt_edit_replays_with_match_ignore(project: pytest.Pytester) -> None:
    recorded = record(project)
    edit_agent(project, *REWORDED)
    write_test(project, '@pytest.mark.agui(match_ignore=["/messages/0/content"])')
    result = run(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*= agui-replay =*",
            "0 cassette(s) recorded, 1 replayed, 0 unused",
            "replayed with ignored fields: 1 test (match_ignore)",
        ]
    )
    assert (project.path / CASSETTE).read_bytes() == recorded  # a replay writes nothing
    # -v names the test and what was left out
    verbose = run(project, "-v")
    verbose.assert_outcomes(passed=1)
    verbose.stdout.fnmatch_lines(
        [
            "  replayed with ignored fields: test_weather.py::test_umbrella "
            "(run #0 request #0: /messages/0/content)"
        ]
    )


def test_an_unchanged_request_is_not_counted(project: pytest.Pytester) -> None:
    record(project)
    write_test(project, '@pytest.mark.agui(match_ignore=["/messages/0/content"])')
    result = run(project)
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*replayed with ignored fields*")


def test_only_the_named_fields_are_left_out(project: pytest.Pytester) -> None:
    record(project)
    edit_agent(project, *REWORDED)
    edit_agent(project, "temperature=0.2", "temperature=0.7")
    write_test(project, '@pytest.mark.agui(match_ignore=["/temperature"])')
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*first difference at /body/messages/0/content", "*match_ignore=*/messages/0/content*"]
    )
    write_test(project, '@pytest.mark.agui(match_ignore=["/temperature", "/messages/0/content"])')
    run(project).assert_outcomes(passed=1)


def test_the_ini_form_with_globs(project: pytest.Pytester) -> None:
    record(project)
    edit_agent(project, "Tomorrow's forecast for a city.", "The forecast for a city, tomorrow.")
    edit_agent(project, *REWORDED)
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*first difference at /body/messages/0/content"])
    project.makeini(
        """
        [pytest]
        pythonpath = .
        agui_match_ignore =
            /messages/*/content
            /tools/*/function/description
        """
    )
    result = run(project)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["replayed with ignored fields: 1 test (match_ignore)"])
    # ** reaches any depth; the marker adds to the ini's list
    project.makeini("[pytest]\npythonpath = .\nagui_match_ignore =\n    /**/description\n")
    run(project).assert_outcomes(failed=1)
    write_test(project, '@pytest.mark.agui(match_ignore="/messages/0/content")')
    run(project).assert_outcomes(passed=1)


def test_a_bad_glob_fails_that_test_naming_it(project: pytest.Pytester) -> None:
    record(project)
    write_test(project, '@pytest.mark.agui(match_ignore=["messages/0/content"])')
    result = run(project)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_weather.py::test_umbrella: match_ignore: 'messages/0/content' is not a "
            "JSON-pointer glob into the request body; write it as a JSON pointer starting "
            'with "/"*'
        ]
    )


def test_the_fake_provider_takes_match_ignore_directly() -> None:
    from agui_replay.errors import InvalidArgumentError
    from agui_replay.providers import FakeProvider

    fake = FakeProvider(match_ignore=["/messages/0/content", "/tools/*/description"])
    assert fake.match_ignore == ("/messages/0/content", "/tools/*/description")
    assert fake.ignored == []
    with pytest.raises(InvalidArgumentError, match="match_ignore: 3 is not a JSON-pointer glob"):
        FakeProvider(match_ignore=[3])  # type: ignore[list-item]
