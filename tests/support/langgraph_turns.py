"""Three turns with the LangGraph example (ag-ui-langgraph, a ``convert`` tool call each turn, a
``FakeProvider`` for its model), recorded the two ways a user records them: by pytest
(``--agui-record``, a test file written into a folder and run in a subprocess) and by
``agui-replay capture`` in front of the live agent while ``@ag-ui/client``'s ``HttpAgent`` talks
to it (``tests/js/converse.mjs``, under Node). The tests of ``serve`` play them back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("agui-replay")
ASKED = ["What is 180 C in Fahrenheit?", "And 2.5 kg in pounds?", "And 10 km in miles?"]
ANSWERS = ["That makes 356.00 F.", "That makes 5.51 lb.", "That makes 6.21 mi."]

RECORDING_TEST = f"""
import pytest

from agui_replay.client import Session
from agui_replay.server import run_input
from examples.langgraph_agent.test_langgraph_agent import (  # noqa: F401
    agui_normalizers,
    agui_upstream,
    anyio_backend,
    converter,
)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:`get_config_jsonschema` is deprecated"),
]


async def test_three_conversions(agui):
    app = converter(agui)  # one app, one checkpointer: the thread lives on between the runs
    client = Session(messages=[])
    for n, said in enumerate({ASKED!r}, 1):
        said = {{"id": f"user-{{n}}", "role": "user", "content": said}}
        body = run_input(
            "kitchen", f"run-{{n}}", state=client.state, messages=[*client.messages, said]
        )
        events = await agui.arun(app, body, path="/agent")
        client = Session(state=body.state, messages=body.messages).apply_all(events).finish()
"""


def converse(
    js: Path, url: str, tmp: Path, fault: str | None = None, said: list[str] = ASKED
) -> list[dict[str, Any]]:
    """One HttpAgent through the turns (each with ``fault``): what each turn left."""
    script = tmp / "script.json"
    script.write_text(json.dumps({"said": said, "fault": fault}), encoding="utf-8")
    done = subprocess.run(
        ["node", "converse.mjs", url, str(script)],
        cwd=js,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def record_with_pytest(folder: Path) -> Path:
    """The three turns as ``pytest --agui-record`` writes them, run in ``folder``."""
    (folder / "test_three_turns.py").write_text(RECORDING_TEST, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--agui-record"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return folder / "cassettes" / "test_three_turns" / "test_three_conversions.json"


def capture_live(js: Path, folder: Path) -> tuple[Path, list[dict[str, Any]]]:
    """The three turns captured into ``folder`` between HttpAgent (the npm packages in ``js``)
    and the live agent, and what HttpAgent held after each of them."""
    pytest.importorskip("ag_ui_langgraph")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from agui_replay.providers import FakeProvider
    from agui_replay.server.testing import serve
    from examples.langgraph_agent.agent import create_app
    from examples.langgraph_agent.test_langgraph_agent import scripted_model

    out = folder / "captured.json"
    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as provider, serve(create_app(provider.base_url)) as agent:
        process = subprocess.Popen(
            [str(SCRIPT), "capture", "--target", f"{agent}/agent", "--out", str(out), "--quiet"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:"), process.communicate(timeout=30)
            live = converse(js, url, folder)
        finally:
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    return out, live
