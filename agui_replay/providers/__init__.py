"""Fake model providers that stream chunk by chunk in the real OpenAI, Anthropic and Gemini
formats.

>>> from agui_replay.providers import FakeProvider
>>> fake = FakeProvider()
>>> _ = fake.reply("Hel", "lo")
>>> with fake.serve() as server:
...     server.base_url.endswith("/v1")
True

Importing this package never imports pytest; the fixtures live in
``agui_replay.providers.fixtures`` (loaded by the pytest plugin).

The building blocks are public too, for a harness of your own (the ``agui`` fixture is built
from them): a provider *app* (:data:`App`) answers ``(method, path, headers, body)`` with a
:class:`Plan`; ``FakeProvider.handle`` and :meth:`Recorder.app` are apps; a
:class:`LoopbackServer` serves an app over HTTP and the transports (``Httpx2Transport(app)``,
``Httpx2AsyncTransport(async_app)``, ``HttpxTransport``, ``HttpxAsyncTransport``; imported on
first use, with ``httpx``) serve it in process. :func:`error_plan` answers an error in the
provider's own shape, e.g. from a router that has no app for a request.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agui_replay.providers._fake import FakeProvider, MatchMode, ReplayTurn, detect_api
    from agui_replay.providers._formats import error_plan
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
    from agui_replay.providers._server import App, AsyncApp, LoopbackServer
    from agui_replay.providers._transports import (
        Httpx2AsyncTransport,
        Httpx2Transport,
        HttpxAsyncTransport,
        HttpxTransport,
    )
    from agui_replay.providers._wire import Plan
    from agui_replay.providers.interaction import (
        Chunk,
        Interaction,
        RecordedRequest,
        RecordedResponse,
    )
    from agui_replay.providers.recording import SCRUBBED, ProxyApp, Recorder, Scrubber

__all__ = [
    "SCRUBBED",
    "App",
    "AsyncApp",
    "Chunk",
    "FakeProvider",
    "Httpx2AsyncTransport",
    "Httpx2Transport",
    "HttpxAsyncTransport",
    "HttpxTransport",
    "Interaction",
    "LoopbackServer",
    "MatchMode",
    "Plan",
    "ProviderRequest",
    "ProxyApp",
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
    "error_plan",
]

# Names load on first use: pytest imports this package (for the plugin's fixtures) in every run,
# and the fake, its server and the transports (httpx, httpx2) cost tens of milliseconds.
_HOME = {
    **dict.fromkeys(("FakeProvider", "MatchMode", "ReplayTurn", "detect_api"), "_fake"),
    **dict.fromkeys(
        (
            "ProviderRequest",
            "Reasoning",
            "ReasoningDelta",
            "ScriptTurn",
            "Text",
            "TextDelta",
            "ToolCall",
            "ToolCallDelta",
            "Usage",
        ),
        "_script",
    ),
    **dict.fromkeys(("App", "AsyncApp", "LoopbackServer"), "_server"),
    **dict.fromkeys(
        ("Httpx2AsyncTransport", "Httpx2Transport", "HttpxAsyncTransport", "HttpxTransport"),
        "_transports",
    ),
    "Plan": "_wire",
    "error_plan": "_formats",
    **dict.fromkeys(("Chunk", "Interaction", "RecordedRequest", "RecordedResponse"), "interaction"),
    **dict.fromkeys(("SCRUBBED", "ProxyApp", "Recorder", "Scrubber"), "recording"),
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # Not cached in this module's globals: the name is read from the submodule each time (a
    # dict look-up in sys.modules), so a submodule imported again (pytester drops the modules
    # a test run imported first) never leaves this package handing out its old classes beside
    # the new ones.
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
