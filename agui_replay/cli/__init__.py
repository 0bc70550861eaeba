"""The ``agui-replay`` command: look at, check, compare and serve recorded AG-UI streams.

Every subcommand reads a cassette (``.json``), an SSE capture (``data:`` frames, ``.sse`` /
``.txt``) or JSON lines (``.jsonl``, one event per line)::

    agui-replay show cassettes/test_agent/test_weather.json
    agui-replay verify capture.sse --mode strict --json
    agui-replay diff before.json after.json
    agui-replay state capture.jsonl --at 12
    agui-replay serve cassettes/test_agent/test_weather.json --speed 0
    agui-replay capture --target http://127.0.0.1:8000/agent --out captured.json
    agui-replay view cassettes/test_agent/test_weather.json -o weather.html
    agui-replay examples                  # replay every example's cassettes, offline

Exit codes: 0 all good, 1 a protocol violation or a difference was found, 2 the command line
or an input file is wrong (the message names the file and line). Event indices (``#N``) count
every event of the file from 0, across runs, exactly as the verifier numbers them; runs count
from 0 as in ``runs[0]`` of a cassette.
"""

from __future__ import annotations

from agui_replay._facades import claim
from agui_replay.cli._parser import main
from agui_replay.cli._serve import replay_app

__all__ = [
    "main",
    "replay_app",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
