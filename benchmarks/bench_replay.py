"""What replaying a cassette costs, against baselines measured in the same run.

Run:  .venv/bin/python benchmarks/bench_replay.py [--part 1|2]

1. One 1,000-event cassette (an agent streaming 996 provider chunks through the real ``openai``
   SDK, one AG-UI delta per chunk), medians of interleaved rounds:

   * baseline: read the file + ``json.loads`` it;
   * the replay work per test, piece by piece through the functions ``CassetteSession`` calls:
     load + shape-check the file, build the fake provider from the recorded interactions,
     check the run input (scrubbed) against the recorded one, then compare the agent's new
     stream with the recorded one as canonical bytes. Two new streams: this package's emitter
     (run-derived ids, no timestamps: equal to the recording as it is, so it needs no
     normalizing) and the same stream as a framework emits it (a random UUID message id, a
     timestamp on every event), which is normalized first;
   * ratio = replay work / baseline (target <= 1.5);
   * for scale, a whole ``CassetteSession`` replay (open, load, build the fake, start/stop its
     loopback server, run the driver, compare, close) minus the time spent inside the agent
     function, against the same agent on a hand-fed provider (paired difference; noisy, as
     both are dominated by the SDK parsing the chunks).

2. 200 replayed cassette tests in one pytest process (``--agui-record`` first, then a plain
   replaying run) against the same 200 tests with the replay replaced by a hand-fed provider
   script and a hand-built list of expected events; best of 3 whole-process runs each, pytest
   start-up included in both. Overhead = (plugin - hand-fed) / hand-fed (target <= 20%).
   Also shown: the time per test of each arm.

A script, not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path
from typing import Any

import openai
import orjson

from agui_replay.cassette import load_cassette
from agui_replay.normalize import normalize_events
from agui_replay.providers import FakeProvider
from agui_replay.recording import CassetteSession
from agui_replay.scrub import scrub
from agui_replay.server import run_agent_sync, run_input

CHUNKS = 996  # + RUN_STARTED, TEXT_MESSAGE_START, TEXT_MESSAGE_END, RUN_FINISHED = 1,000 events


def make_agent(base_url: str) -> Any:
    client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)

    def agent(ctx: Any) -> None:
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "count"}], stream=True
        )
        with ctx.assistant_message() as message:
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    message.delta(chunk.choices[0].delta.content)

    return agent


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def part_one(folder: Path) -> None:
    upstream = FakeProvider()
    upstream.reply(*(f"w{i} " for i in range(CHUNKS)))
    path = folder / "big.json"
    with (
        upstream.serve() as server,
        CassetteSession(
            path, mode="rewrite", upstream=server.base_url, freeze_time=False
        ) as session,
    ):
        events = session.run(make_agent(session.provider.base_url), "count")
    assert len(events) == 1000, len(events)
    size = path.stat().st_size
    interactions = load_cassette(path).runs[0].interactions

    def baseline() -> float:
        start = time.perf_counter()
        json.loads(path.read_text(encoding="utf-8"))
        return time.perf_counter() - start

    def replay() -> tuple[float, float]:
        # The agent's own time (SDK parsing the chunks it is served) is measured inside the
        # same call and taken out: what is left is what the plugin adds to a test.
        inside = 0.0
        start = time.perf_counter()
        with CassetteSession(path, mode="none", freeze_time=False) as session:
            agent = make_agent(session.provider.base_url)

            def timed(ctx: Any) -> None:
                nonlocal inside
                began = time.perf_counter()
                agent(ctx)
                inside += time.perf_counter() - began

            session.run(timed, "count")
        return time.perf_counter() - start, inside

    recorded_events = load_cassette(path).runs[0].events

    def hand_fed() -> float:
        # The same test without the plugin: a provider fed the same chunks by hand, the events
        # converted to wire dicts and compared with a hand-built list.
        start = time.perf_counter()
        fake = FakeProvider.from_interactions(interactions)
        with fake.serve() as server:
            got = run_agent_sync(make_agent(server.base_url), run_input("thread", "run-1"))
        wire = [e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in got]
        assert len(wire) == len(recorded_events)
        return time.perf_counter() - start

    def canonical(value: Any) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    wire_input = load_cassette(path).runs[0].input
    # The same stream as a framework emits it: a random message id, a timestamp per event.
    framework_id = str(uuid.uuid4())
    framework_events = [
        {
            **e,
            **({"messageId": framework_id} if "messageId" in e else {}),
            "timestamp": 1_750_000_000_000 + i,
        }
        for i, e in enumerate(events)
    ]

    def components(new_events: list[dict[str, Any]]) -> float:
        # What the session adds to a run, piece by piece, through the functions it calls.
        start = time.perf_counter()
        cassette = load_cassette(path, validate="shape")
        run = cassette.runs[0]
        FakeProvider.from_interactions(run.interactions)
        assert canonical(scrub(wire_input)) == canonical(run.input)
        expected = canonical(run.events)
        same = canonical(new_events) == expected
        if not same:
            keep = {m["id"] for m in wire_input["messages"]}
            same = canonical(normalize_events(new_events, preserve=keep)) == expected
        assert same
        return time.perf_counter() - start

    baseline(), replay(), hand_fed(), components(events), components(framework_events)
    base_s, total_s, agent_s, fed_s, emitter_s, framework_s = [], [], [], [], [], []
    for _ in range(25):
        base_s.append(baseline())
        total, inside = replay()
        total_s.append(total)
        agent_s.append(inside)
        fed_s.append(hand_fed())
        emitter_s.append(components(events))
        framework_s.append(components(framework_events))
    paired = [t - f for t, f in zip(total_s, fed_s, strict=True)]
    base, diff = median_ms(base_s), median_ms(paired)
    emitter, framework = median_ms(emitter_s), median_ms(framework_s)
    print(f"1,000-event cassette ({size / 1024:.0f} KB, {CHUNKS} provider chunks), medians of 25:")
    print(f"  read + json.loads:                              {base:7.2f} ms")
    print("  replay work (load, build fake, check input, compare):")
    print(
        f"    new stream from this package's emitter:       {emitter:7.2f} ms"
        f"  = {emitter / base:.2f}x"
    )
    print(
        f"    new stream with random ids + timestamps:      {framework:7.2f} ms"
        f"  = {framework / base:.2f}x  (normalized first)"
    )
    print("  target: replay work <= 1.5x read + json.loads")
    print(f"  CassetteSession replay, whole:                  {median_ms(total_s):7.2f} ms")
    print(f"    of which inside the agent function:           {median_ms(agent_s):7.2f} ms")
    print(f"  same test, hand-fed provider, whole:            {median_ms(fed_s):7.2f} ms")
    print(f"  paired difference (session - hand-fed):         {diff:7.2f} ms  = {diff / base:.2f}x")


CONFTEST = textwrap.dedent(
    """
    import openai, pytest
    from agui_replay.providers import FakeProvider

    def make_agent(base_url):
        client = openai.OpenAI(base_url=base_url, api_key="bench", max_retries=0)

        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o", messages=[{"role": "user", "content": ctx.last_user_text()}],
                stream=True)
            with ctx.assistant_message() as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        return agent

    @pytest.fixture
    def agui_upstream():
        fake = FakeProvider()
        fake.reply("Hello", ", ", "world", "!")
        with fake.serve() as server:
            yield server
    """
)

TEST_PLUGIN = textwrap.dedent(
    """
    import pytest
    from conftest import make_agent

    @pytest.mark.parametrize("n", range(200))
    def test_replayed(agui, n):
        events = agui.run(make_agent(agui.provider.base_url), f"question {n}")
        assert events[-1]["type"] == "RUN_FINISHED"
    """
)

TEST_HAND_FED = textwrap.dedent(
    """
    import pytest
    from agui_replay.normalize import normalize_events
    from agui_replay.server import run_agent_sync, run_input
    from conftest import make_agent

    def expected(run_id):
        m = f"{run_id}-msg-1"
        return [{"type": "RUN_STARTED", "threadId": "thread", "runId": run_id},
                {"type": "TEXT_MESSAGE_START", "messageId": m, "role": "assistant"},
                *({"type": "TEXT_MESSAGE_CONTENT", "messageId": m, "delta": d}
                  for d in ("Hello", ", ", "world", "!")),
                {"type": "TEXT_MESSAGE_END", "messageId": m},
                {"type": "RUN_FINISHED", "threadId": "thread", "runId": run_id,
                 "outcome": {"type": "success"}}]

    @pytest.mark.parametrize("n", range(200))
    def test_hand_fed(fake_provider, fake_provider_server, n):
        fake_provider.reply("Hello", ", ", "world", "!")
        agent = make_agent(fake_provider_server.base_url)
        events = run_agent_sync(agent, run_input("thread", "run-1", messages=[f"question {n}"]))
        wire = [e.model_dump(by_alias=True, exclude_none=True, mode="json") for e in events]
        assert normalize_events(wire) == expected("run-1")
        assert events[-1].type == "RUN_FINISHED"
    """
)


def pytest_run(folder: Path, *args: str) -> float:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:hypothesispytest", *args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    start = time.perf_counter()
    done = subprocess.run(command, cwd=folder, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest {' '.join(args)} failed:\n{done.stdout[-3000:]}")
    return elapsed


def part_two(folder: Path) -> None:
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_plugin.py").write_text(TEST_PLUGIN)
    (folder / "test_hand_fed.py").write_text(TEST_HAND_FED)
    (folder / "pytest.ini").write_text("[pytest]\n")
    pytest_run(folder, "test_plugin.py", "--agui-record")
    plugin, fed = [], []
    for _ in range(3):
        plugin.append(pytest_run(folder, "test_plugin.py"))
        fed.append(pytest_run(folder, "test_hand_fed.py"))
    best_plugin, best_fed = min(plugin), min(fed)
    print("200 tests, whole pytest process, best of 3:")
    print(
        f"  replayed from cassettes (agui fixture): {best_plugin:6.2f} s"
        f"  ({best_plugin / 200 * 1000:5.1f} ms a test, start-up included)"
    )
    print(
        f"  hand-fed provider + hand-built events:  {best_fed:6.2f} s"
        f"  ({best_fed / 200 * 1000:5.1f} ms a test, start-up included)"
    )
    print(
        f"  plugin overhead:                        {(best_plugin / best_fed - 1) * 100:+6.1f} %"
        "   (target <= 20%)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", type=int, choices=(1, 2), help="run only this part")
    part = parser.parse_args().part
    with tempfile.TemporaryDirectory() as tmp:
        if part in (None, 1):
            part_one(Path(tmp))
        if part in (None, 2):
            part_two(Path(tmp))


if __name__ == "__main__":
    main()
