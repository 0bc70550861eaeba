"""freezegun vs time-machine for freezing the clock inside a replayed agent run.

Run: ``.venv/bin/python benchmarks/bench_time_freeze.py`` (needs ``time-machine`` installed).

What it measures, all in one process, medians, ratios against a baseline from the same run:

1. entering + leaving the freeze, with a realistic ``sys.modules`` (pydantic-ai, openai,
   anthropic, starlette imported), against one unfrozen pydantic-ai AG-UI run;
2. a pydantic-ai AG-UI run (FunctionModel, one tool call, streamed text) inside the freeze,
   against the same run unfrozen, and whether every event timestamp came out frozen;
3. ``time.time()`` per call while frozen, against unfrozen;
4. whether ``time.monotonic`` is frozen (it drives asyncio timers, httpx/uvicorn timeouts) and
   whether ``asyncio.sleep(0.01)`` still returns inside the freeze.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime, timezone
from typing import Any

import anthropic  # noqa: F401  (realistic sys.modules: freezegun scans it on every start)
import freezegun
import openai  # noqa: F401
import starlette.applications  # noqa: F401
import time_machine
from ag_ui.core import RunAgentInput, UserMessage
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.ui.ag_ui import AGUIAdapter

FROZEN = datetime(2025, 1, 1, tzinfo=timezone.utc)


async def _stream_fn(messages: list[ModelMessage], info: AgentInfo) -> Any:
    if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
        for word in ("The ", "weather ", "is ", "sunny."):
            yield word
    else:
        yield {0: DeltaToolCall(name="get_weather", json_args='{"city": ')}
        yield {0: DeltaToolCall(json_args='"Paris"}')}


agent = Agent(FunctionModel(stream_function=_stream_fn))


@agent.tool_plain
def get_weather(city: str) -> str:
    return f"sunny in {city}"


RUN_INPUT = RunAgentInput(
    thread_id="t",
    run_id="r",
    state={},
    messages=[UserMessage(id="u1", role="user", content="weather?")],
    tools=[],
    context=[],
    forwarded_props={},
)


def agent_run() -> list[Any]:
    async def collect() -> list[Any]:
        return [e async for e in AGUIAdapter(agent=agent, run_input=RUN_INPUT).run_stream()]

    return asyncio.run(collect())


Freezer = Callable[[], AbstractContextManager[Any]]

FREEZERS: dict[str, Freezer] = {
    "freezegun": lambda: freezegun.freeze_time(FROZEN),
    "freezegun(real_asyncio)": lambda: freezegun.freeze_time(FROZEN, real_asyncio=True),
    "time-machine(tick=False)": lambda: time_machine.travel(FROZEN, tick=False),
}


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def enter_exit(freezer: Freezer) -> None:
    with freezer():
        pass


def frozen_run(freezer: Freezer) -> list[Any]:
    with freezer():
        return agent_run()


def time_calls(n: int = 20_000) -> None:
    for _ in range(n):
        time.time()


_SLEEP_CHECK = {
    "freezegun": "freezegun.freeze_time(FROZEN)",
    "freezegun(real_asyncio)": "freezegun.freeze_time(FROZEN, real_asyncio=True)",
    "time-machine(tick=False)": "time_machine.travel(FROZEN, tick=False)",
}


def asyncio_sleep_ok(name: str) -> bool:
    """Whether asyncio.sleep(0.01) returns inside the freeze (in a child: a hang stays there)."""
    code = (
        "import asyncio, datetime, freezegun, time_machine\n"
        "FROZEN = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)\n"
        f"with {_SLEEP_CHECK[name]}:\n"
        "    asyncio.run(asyncio.sleep(0.01))\n"
    )
    try:
        subprocess.run([sys.executable, "-c", code], timeout=10, check=True)
    except subprocess.TimeoutExpired:
        return False
    return True


def monotonic_frozen(freezer: Freezer) -> bool:
    with freezer():
        a = time.monotonic()
        time.sleep(0.005)
        return time.monotonic() == a


def interleaved(fns: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """Median ms of each function, run round-robin so machine load hits them all alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - start) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def main() -> None:
    agent_run()  # warm up imports and caches
    print(f"python {sys.version.split()[0]}, {len(sys.modules)} modules imported")
    print(f"freezegun {freezegun.__version__}, time-machine {_version('time-machine')}")

    runs = interleaved(
        {"baseline": agent_run}
        | {name: (lambda f=f: frozen_run(f)) for name, f in FREEZERS.items()},  # type: ignore[misc]
        repeat=25,
    )
    enters = interleaved(
        {name: (lambda f=f: enter_exit(f)) for name, f in FREEZERS.items()},  # type: ignore[misc]
        repeat=25,
    )

    def calls_in(f: Freezer) -> Callable[[], None]:
        def run() -> None:
            with f():
                time_calls()

        return run

    calls = interleaved(
        {"baseline": time_calls} | {name: calls_in(f) for name, f in FREEZERS.items()}, repeat=9
    )
    base = runs["baseline"]
    print(
        f"baseline: unfrozen pydantic-ai AG-UI run {base:.2f} ms; "
        f"20k time.time() {calls['baseline']:.2f} ms (medians, interleaved)"
    )
    print(
        f"{'freezer':26} {'enter+exit':>11} {'/run':>6} {'frozen run':>11} {'/run':>6} "
        f"{'time() x':>9} {'ts frozen':>10} {'monotonic':>10} {'asyncio':>8}"
    )
    for name, freezer in FREEZERS.items():
        stamps = {e.timestamp for e in frozen_run(freezer)}
        ts_ok = stamps == {int(FROZEN.timestamp() * 1000)}
        mono = "frozen" if monotonic_frozen(freezer) else "real"
        aio = "ok" if asyncio_sleep_ok(name) else "HANGS"
        call_x = (calls[name] - enters[name]) / calls["baseline"]
        print(
            f"{name:26} {enters[name]:9.2f}ms {enters[name] / base:6.2f} {runs[name]:9.2f}ms "
            f"{runs[name] / base:6.2f} {call_x:9.1f} {ts_ok!s:>10} {mono:>10} {aio:>8}"
        )


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


if __name__ == "__main__":
    main()
