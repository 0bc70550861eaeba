"""Fake model providers that stream chunk by chunk in the real OpenAI and Anthropic formats.

>>> from agui_replay.providers import FakeProvider
>>> fake = FakeProvider()
>>> _ = fake.reply("Hel", "lo")
>>> with fake.serve() as server:
...     server.base_url.endswith("/v1")
True

Importing this package never imports pytest; the fixtures live in
``agui_replay.providers.fixtures`` (loaded by the pytest plugin).
"""

from __future__ import annotations

from agui_replay.providers._fake import FakeProvider, MatchMode, ReplayTurn, detect_api
from agui_replay.providers._script import (
    ProviderRequest,
    Reasoning,
    ReasoningDelta,
    ScriptTurn,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from agui_replay.providers._server import LoopbackServer
from agui_replay.providers.interaction import Chunk, Interaction, RecordedRequest, RecordedResponse
from agui_replay.providers.recording import SCRUBBED, Recorder, Scrubber

__all__ = [
    "SCRUBBED",
    "Chunk",
    "FakeProvider",
    "Interaction",
    "LoopbackServer",
    "MatchMode",
    "ProviderRequest",
    "Reasoning",
    "ReasoningDelta",
    "RecordedRequest",
    "RecordedResponse",
    "Recorder",
    "ReplayTurn",
    "ScriptTurn",
    "Scrubber",
    "Text",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "detect_api",
]
