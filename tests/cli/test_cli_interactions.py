"""``agui-replay show --interactions`` and ``agui-replay diff --interactions``: reviewing a
cassette's recorded HTTP requests with the tool, on cassettes recorded here (an agent with the
OpenAI and Anthropic SDKs against a fake provider; a pytest test whose tool calls a local
API, taped into the ``http`` list) and on a shipped cassette, through ``main([...])`` and the
installed console script.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anthropic
import httpcore2  # noqa: F401  (imported once here: pytester drops modules first imported
import httpx2  # noqa: F401  inside, and httpx2 maps only its own httpcore2's errors)
import openai
import pytest

from agui_replay.cli import main
from agui_replay.providers import FakeProvider, ToolCall
from agui_replay.recording import CassetteSession

SCRIPT = Path(sys.executable).with_name("agui-replay")
SHIPPED = Path(__file__).parents[2] / "cassettes" / "strands_agent" / "test_strands_agent"
KEY = "sk-interactions-test-0123456789"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main([*args, "--no-color"] if args[0] in ("show", "diff") else list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _agent(prompt: str) -> Any:
    """Asks OpenAI (which calls a tool) and then Anthropic, and says both answers."""

    def agent(ctx: Any) -> None:
        oa = openai.OpenAI(api_key=KEY, max_retries=0)
        stream = oa.chat.completions.create(
            model="gpt-4o",
            messages=[
                {"role": "system", "content": "You convert units."},
                {"role": "user", "content": prompt},
            ],
            tools=[{"type": "function", "function": {"name": "convert", "parameters": {}}}],
            stream=True,
        )
        calls = [c for chunk in stream for c in (chunk.choices[0].delta.tool_calls or [])]
        an = anthropic.Anthropic(api_key=KEY, max_retries=0)
        with an.messages.stream(
            model="claude-x", max_tokens=50, messages=[{"role": "user", "content": "sum up"}]
        ) as answer:
            text = answer.get_final_text()
        ctx.say(f"{len(calls)} call(s); {text}")

    return agent


def _record(path: Path, prompt: str = "10 km in miles?", runs: int = 1) -> Path:
    oa, an = FakeProvider(), FakeProvider()
    for _ in range(runs):
        oa.tool_calls(ToolCall("convert", '{"value": 10,', ' "unit": "km"}', id="call-1"))
        an.reply("That is ", "6.2 miles.")
    with (
        oa.serve() as o,
        an.serve() as a,
        CassetteSession(path, mode="rewrite", upstream={"openai": o, "anthropic": a}) as s,
    ):
        for _ in range(runs):
            s.run(_agent(prompt), "convert")
    return path


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _record(tmp_path_factory.mktemp("recorded") / "units.json")


def test_show_lists_each_interaction_with_what_it_asked_and_answered(
    recorded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "show", "--interactions", str(recorded))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{recorded}: 2 provider interaction(s) in 1 run(s)"
    assert lines[1] == "run #0:"
    doc = json.loads(recorded.read_text())
    first, second = doc["runs"][0]["interactions"]
    size = sum(len(c["data"].encode()) for c in first["response"]["chunks"])
    chunks = len(first["response"]["chunks"])
    assert lines[2] == (
        f"  #0 openai POST /v1/chat/completions → 200, {chunks} chunk(s), {size} bytes  "
        "runs[0].interactions[0]"
    )
    assert lines[3] == '      asks: gpt-4o, 2 message(s), last user: "10 km in miles?", 1 tool(s)'
    assert lines[4] == '      answer: calls convert({"value": 10, "unit": "km"})'
    assert lines[5].startswith(
        f"  #1 anthropic POST /v1/messages → 200, {len(second['response']['chunks'])} chunk(s), "
    )
    assert lines[6] == '      asks: claude-x, 1 message(s), last user: "sum up"'
    assert lines[7] == '      answer: text "That is 6.2 miles."'
    assert len(lines) == 8
    assert KEY not in out


def test_show_interactions_of_one_run_and_in_full(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_prompt = "convert " + "ten kilometres " * 30
    path = _record(tmp_path / "two.json", prompt=long_prompt, runs=2)
    code, out, _ = run_cli(capsys, "show", "--interactions", "--run", "1", str(path))
    assert code == 0
    assert out.splitlines()[0] == f"{path}: 2 provider interaction(s)"
    assert "run #0:" not in out
    assert "#2 openai POST /v1/chat/completions" in out
    assert "runs[1].interactions[1]" in out
    assert "…" in out  # a long prompt is cut to the width
    code, out, _ = run_cli(capsys, "show", "--interactions", "--full", str(path))
    assert json.dumps(long_prompt) in out
    code, _, err = run_cli(capsys, "show", "--interactions", "--run", "2", str(path))
    assert code == 2
    assert "--run 2 is out of range" in err


def test_diff_interactions_names_the_first_differing_field(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    same = _record(tmp_path / "same.json")
    code, out, _ = run_cli(capsys, "diff", "--interactions", str(recorded), str(same))
    assert code == 0
    assert out.startswith("same: 2 interaction(s), 2 to providers and 0 to other hosts")

    other = _record(tmp_path / "other.json", prompt="10 km in feet?")
    code, out, _ = run_cli(capsys, "diff", "--interactions", str(recorded), str(other))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(
        "interactions differ at #0 (runs[0].interactions[0]: openai POST /v1/chat/completions)"
    )
    # The place is a JSON pointer; both values line up under names as wide as the longer one.
    a, b = f"A ({recorded}):", f"B ({other}):"
    width = max(len(a), len(b))
    assert lines[1:] == [
        "  first difference at /request/body/messages/1/content",
        f'    {a:<{width}} "10 km in miles?"',
        f'    {b:<{width}} "10 km in feet?"',
    ]


def test_diff_interactions_reads_into_the_response_stream(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(recorded.read_text())
    chunks = doc["runs"][0]["interactions"][1]["response"]["chunks"]
    at = next(i for i, c in enumerate(chunks) if "6.2 miles." in c["data"])
    chunks[at]["data"] = chunks[at]["data"].replace("6.2 miles.", "6.3 miles.")
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "diff", "--interactions", str(recorded), str(changed))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("interactions differ at #1 (runs[0].interactions[1]: anthropic")
    assert re.fullmatch(r"  first difference at /response/stream/\d+/data/delta/text", lines[1])
    assert lines[2].endswith('"6.2 miles."')
    assert lines[3].endswith('"6.3 miles."')

    # chunk boundaries and offsets are not compared: the same bytes cut elsewhere are equal
    doc = json.loads(recorded.read_text())
    chunks = doc["runs"][0]["interactions"][1]["response"]["chunks"]
    joined = "".join(c["data"] for c in chunks)
    doc["runs"][0]["interactions"][1]["response"]["chunks"] = [
        {"offset": 0.5, "data": joined[:7]},
        {"offset": 0.75, "data": joined[7:]},
    ]
    recut = tmp_path / "recut.json"
    recut.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "diff", "--interactions", str(recorded), str(recut))
    assert code == 0, out


def test_diff_interactions_counts_the_missing_ones(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    longer = _record(tmp_path / "longer.json", runs=2)
    code, out, _ = run_cli(capsys, "diff", "--interactions", str(recorded), str(longer))
    assert code == 1
    assert out.startswith(
        "B has 2 more interaction(s): the first, #2 (runs[1].interactions[0]: openai POST "
        "/v1/chat/completions), is not in A; the 2 before it are the same"
    )


def test_interactions_refuse_what_they_cannot_show(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_cli(capsys, "show", "--interactions", "--type", "RUN_STARTED", str(recorded))
    assert code == 2
    assert "--type/--types choose events; --interactions lists HTTP requests" in err
    code, _, err = run_cli(capsys, "diff", "--interactions", "--raw", str(recorded), str(recorded))
    assert code == 2
    assert "use one or the other" in err
    events = tmp_path / "events.jsonl"
    events.write_text('{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n')
    code, _, err = run_cli(capsys, "show", "--interactions", str(events))
    assert code == 2
    assert f"{events}: --interactions needs a cassette (.json)" in err
    code, _, err = run_cli(capsys, "diff", "--interactions", str(recorded), "nope.json")
    assert code == 2
    assert "nope.json: no cassette at this path" in err


# --- a pytest test whose tool calls a local API: its requests are in the http list ------------

CONFTEST = textwrap.dedent(
    """
    import json, threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    import pytest
    from agui_replay.providers import FakeProvider, ToolCall

    class Weather(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"city": "Lisbon", "sky": "sunny"}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    @pytest.fixture(scope="session")
    def weather_url():
        server = ThreadingHTTPServer(("127.0.0.1", 0), Weather)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield f"http://127.0.0.1:{server.server_port}"
        server.shutdown()
        server.server_close()

    @pytest.fixture
    def agui_upstream():
        fake = FakeProvider()
        fake.tool_calls(ToolCall("weather", '{"city": "Lisbon"}', id="call-1"))
        fake.reply("Sunny in Lisbon.")
        with fake.serve() as server:
            yield server
    """
)

TEST = textwrap.dedent(
    """
    import json
    import httpx, openai

    def test_weather(agui, weather_url):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="k", max_retries=0)

        def agent(ctx):
            messages = [{"role": "user", "content": ctx.last_user_text()}]
            first = client.chat.completions.create(model="gpt-4o", messages=messages)
            call = first.choices[0].message.tool_calls[0]
            city = json.loads(call.function.arguments)["city"]
            weather = httpx.get(f"{weather_url}/forecast", params={"city": city}).json()
            messages += [
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(weather)},
            ]
            second = client.chat.completions.create(model="gpt-4o", messages=messages)
            ctx.say(second.choices[0].message.content)

        agui.run(agent, "weather in Lisbon?")
    """
)


def test_the_requests_to_other_hosts_are_listed_and_compared(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_tool=TEST)
    args = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    pytester.runpytest(*args, "--agui-record").assert_outcomes(passed=1)
    path = pytester.path / "cassettes" / "test_tool" / "test_weather.json"
    first = pytester.path / "first.json"
    shutil.copy(path, first)
    capsys.readouterr()

    code, out, _ = run_cli(capsys, "show", "--interactions", str(path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"{path}: 2 provider interaction(s) in 1 run(s), 1 request(s) to other hosts"
    assert '      answer: calls weather({"city": "Lisbon"})' in lines
    assert '      answer: text "Sunny in Lisbon."' in lines
    at = lines.index("requests to other hosts (http):")
    host = json.loads(path.read_text())["http"][0]["request"]["url"].split("/")[2]
    assert lines[at + 1] == (
        f"  #2 {host} GET http://{host}/forecast?city=Lisbon → 200, 1 chunk(s), 34 bytes  http[0]"
    )
    assert lines[at + 2 :] == [
        "      asks: no body",
        '      answer: body {"city":"Lisbon","sky":"sunny"}',
    ]
    assert "tool (call-1): " in out  # the second request ends with the tool's result

    # the API answers otherwise: a re-record differs in the http list
    doc = json.loads(path.read_text())
    doc["http"][0]["response"]["chunks"][0]["data"] = '{"city": "Lisbon", "sky": "rain"}'
    path.write_text(json.dumps(doc))
    code, out, _ = run_cli(capsys, "diff", "--interactions", str(first), str(path))
    assert code == 1
    assert out.splitlines()[:2] == [
        f"interactions differ at #2 (http[0]: {host} GET http://{host}/forecast?city=Lisbon)"
        "  (headers, chunk boundaries and timing not compared)",
        "  first difference at /response/body/sky",
    ]


# --- the console script on a shipped cassette ---------------------------------------------------


def test_the_console_script_on_a_shipped_cassette() -> None:
    shipped = SHIPPED / "test_the_agent_asks_the_api_and_the_mcp_server_then_answers.json"
    other = SHIPPED / "test_a_city_the_weather_api_does_not_know.json"
    shown = subprocess.run(
        [str(SCRIPT), "show", "--interactions", str(shipped)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shipped.read_text())
    providers = sum(len(run["interactions"]) for run in doc["runs"])
    assert shown.stdout.startswith(
        f"{shipped}: {providers} provider interaction(s) in {len(doc['runs'])} run(s), "
        f"{len(doc['http'])} request(s) to other hosts\n"
    )
    assert "  #0 bedrock POST /model/" in shown.stdout  # binary event stream, read
    assert "      answer: calls forecast(" in shown.stdout
    assert f"http[{len(doc['http']) - 1}]" in shown.stdout

    same = subprocess.run(
        [str(SCRIPT), "diff", "--interactions", str(shipped), str(shipped)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert same.returncode == 0, same.stderr
    differ = subprocess.run(
        [str(SCRIPT), "diff", "--interactions", str(shipped), str(other)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert differ.returncode == 1, differ.stderr
    assert differ.stdout.startswith("interactions differ at #0 (runs[0].interactions[0]: bedrock")
    assert "  first difference at /request/body/messages/0/content/0/text\n" in differ.stdout


def test_an_mcp_server_s_requests_show_their_method(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = SHIPPED / "test_the_agent_asks_the_api_and_the_mcp_server_then_answers.json"
    code, out, _ = run_cli(capsys, "show", "--interactions", str(shipped))
    assert code == 0
    assert "      asks: JSON-RPC tools/list (id 2)\n" in out
    assert "      asks: JSON-RPC tools/call whats_on (id 3)\n" in out
