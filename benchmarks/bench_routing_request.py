"""Where the loopback route's cost goes, request by request: one replayed streaming response,
in process against over the socket, in one interpreter.

Run:  .venv/bin/python benchmarks/bench_routing_request.py [--chunks 2000] [--pairs 15]

A 2,000-chunk OpenAI stream is recorded (a scripted FakeProvider behind a Recorder), once for
every request the arms will make, and replayed from that recording (``Recorder.to_fake()``:
every chunk listed, as a cassette's are) by five arms, alternated round by round, each with
its client built once:

* ``sdk, in process``: the ``openai`` SDK on ``fake.transport()`` (httpx2, no socket);
* ``sdk, socket``: the same SDK at the fake's loopback server (``fake.serve()``), every chunk
  its own HTTP chunk, parsed by the client's h11;
* ``sdk, socket to another process``: the same, the server forked into a child process, so
  that its thread shares no interpreter (and no GIL) with the client;
* ``httpx2 bytes, in process`` / ``httpx2 bytes, socket``: the raw stream read with
  ``iter_bytes()`` and no SDK: the transport's share alone.

Each figure is the median CPU time of the client's thread per request (``time.thread_time``;
the server thread's own CPU is printed beside it), with ratios to the in-process arm of the
same kind. A script, not a test: nothing here passes or fails on time.
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai

from agui_replay.providers import FakeProvider, Recorder
from agui_replay.providers._transport import _loopback as _server

BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "count"}], "stream": True}


def recording(chunks: int, requests: int) -> Recorder:
    """``requests`` recorded responses of ``chunks`` chunks each."""
    source = FakeProvider(function=lambda request: (f"w{i} " for i in range(chunks)))
    recorder = Recorder()
    client = httpx2.Client(transport=recorder.transport(source.transport()))
    for _ in range(requests):
        with client.stream("POST", "http://bench.invalid/v1/chat/completions", json=BODY) as r:
            for _ in r.iter_bytes():
                pass
    return recorder


def sdk(client: openai.OpenAI) -> Callable[[], int]:
    def call() -> int:
        stream = client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "count"}], stream=True
        )
        return sum(1 for _ in stream)

    return call


def raw(client: httpx2.Client, base: str) -> Callable[[], int]:
    def call() -> int:
        with client.stream("POST", base + "/chat/completions", json=BODY) as response:
            return sum(1 for _ in response.iter_bytes())

    return call


def _child(recorder: Recorder, urls: Any) -> None:
    with recorder.to_fake().serve() as server:
        urls.put(server.base_url)
        threading.Event().wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=15)
    options = parser.parse_args()
    pairs = options.pairs
    recorder = recording(options.chunks, 5 * (pairs + 1))

    server_cpu: list[float] = []
    original = _server._Handler._serve

    def timed_serve(self: Any) -> None:
        start = time.thread_time()
        original(self)
        server_cpu.append(time.thread_time() - start)

    _server._Handler._serve = timed_serve  # type: ignore[method-assign]

    fork = multiprocessing.get_context("fork")
    urls = fork.Queue()
    child = fork.Process(target=_child, args=(recorder, urls), daemon=True)
    child.start()
    remote = urls.get(timeout=30)

    fake = recorder.to_fake()
    with fake.serve() as server:
        arms = {
            "sdk, in process": sdk(
                openai.OpenAI(
                    base_url="http://bench.invalid/v1",
                    api_key="sk-bench",
                    max_retries=0,
                    http_client=httpx2.Client(transport=fake.transport()),
                )
            ),
            "sdk, socket": sdk(openai.OpenAI(base_url=server.base_url, api_key="sk-bench")),
            "sdk, socket to another process": sdk(openai.OpenAI(base_url=remote, api_key="k")),
            "httpx2 bytes, in process": raw(
                httpx2.Client(transport=fake.transport()), "http://bench.invalid/v1"
            ),
            "httpx2 bytes, socket": raw(httpx2.Client(), server.base_url),
        }
        for call in arms.values():  # warm-up, untimed
            call()
        times: dict[str, list[float]] = {arm: [] for arm in arms}
        for _ in range(pairs):
            for arm, call in arms.items():
                start = time.thread_time()
                call()
                times[arm].append(time.thread_time() - start)
    child.kill()

    median = {arm: statistics.median(t) * 1000 for arm, t in times.items()}
    print(
        f"one replayed response of {options.chunks} chunks; client thread CPU, median of"
        f" {pairs} alternated requests"
    )
    for arm, ms in median.items():
        base = "sdk, in process" if arm.startswith("sdk") else "httpx2 bytes, in process"
        print(f"  {arm:32} {ms:8.1f} ms  {ms / median[base]:6.3f}x")
    served = statistics.median(server_cpu) * 1000
    print(f"  the loopback server's thread: {served:.1f} ms of CPU a response")


if __name__ == "__main__":
    main()
