"""Concurrent runs of a sync agent through ``agui_app`` under uvicorn, by ``sync_concurrency``.

Run:  .venv/bin/python benchmarks/bench_endpoint_sync.py [--runs 20] [--seconds 1.0]

A sync agent that blocks for ``--seconds`` (as one waiting on a model's HTTP answer does) is
served on 127.0.0.1; ``--runs`` clients POST at once. For each ``sync_concurrency`` the script
prints the wall time until the last stream ended and the distinct finishing times rounded to
the blocking time (the "waves"). ``6`` is what the loop's default executor gave before on a
two-core machine (``min(32, cores + 4)`` workers). Then the resident memory one more idle
worker thread costs, measured by starting 64 blocked threads.

A script, not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time
from typing import Any

import httpx

from agui_replay.server import RunContext, agui_app
from agui_replay.server.testing import serve

BODY = {"threadId": "t", "runId": "r", "messages": [], "state": None}


def _rss_kib() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def _burst(url: str, runs: int) -> list[float]:
    limits = httpx.Limits(max_connections=runs, max_keepalive_connections=runs)
    start = time.perf_counter()
    done: list[float] = []
    async with httpx.AsyncClient(timeout=600, limits=limits) as client:

        async def one() -> None:
            response = await client.post(url, json=BODY)
            assert b"RUN_FINISHED" in response.content
            done.append(time.perf_counter() - start)

        await asyncio.gather(*(one() for _ in range(runs)))
    return sorted(done)


def measure(concurrency: int, runs: int, seconds: float) -> None:
    def blocking(ctx: RunContext[Any]) -> None:
        time.sleep(seconds)
        ctx.say("done")

    with serve(agui_app(blocking, sync_concurrency=concurrency)) as url:
        finished = asyncio.run(_burst(url, runs))
    waves = sorted({round(t / seconds) * seconds for t in finished})
    print(
        f"sync_concurrency={concurrency:>3}: {runs} runs of {seconds:g} s in "
        f"{finished[-1]:.2f} s; finishing at {', '.join(f'{w:g}' for w in waves)} s"
    )


def thread_cost(count: int = 64) -> None:
    release = threading.Event()
    before = _rss_kib()
    threads = [threading.Thread(target=release.wait) for _ in range(count)]
    for thread in threads:
        thread.start()
    after = _rss_kib()
    release.set()
    for thread in threads:
        thread.join()
    print(
        f"{count} idle threads: +{after - before} KiB resident "
        f"({(after - before) / count:.0f} KiB each)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()
    for concurrency in (6, 20, 64):
        measure(concurrency, args.runs, args.seconds)
    thread_cost()


if __name__ == "__main__":
    main()
