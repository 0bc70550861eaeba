"""The scripted upstream the ADK cassettes were recorded against.

Imports nothing from ADK, so this file loads in any venv; the test module skips itself where
ag-ui-adk is not installed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agui_replay.providers import FakeProvider, LoopbackServer

from .scripted_model import scripted_model


@pytest.fixture
def agui_upstream() -> Iterator[LoopbackServer]:
    """The provider a recording forwards to: the scripted model on 127.0.0.1, with a random
    ``responseId`` per response as Gemini's. The plugin asks for this fixture only while a test
    records, so a replay never starts it."""
    fake = FakeProvider(function=scripted_model, ids="random")
    with fake.serve() as server:
        yield server
    fake.check()
