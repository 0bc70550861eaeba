"""Fake model providers that stream chunk by chunk in the real OpenAI, Anthropic, Gemini and
AWS Bedrock formats, and the recorder of real ones.

>>> from agui_replay.providers import FakeProvider
>>> fake = FakeProvider()
>>> _ = fake.reply("Hel", "lo")
>>> with fake.serve() as server:
...     server.base_url.endswith("/v1")
True

Importing this package never imports pytest; the fixtures live in
``agui_replay.pytest_plugin._provider_fixtures`` (loaded by the pytest plugin).

The building blocks are public too, for a harness of your own (the ``agui`` fixture is built
from them): a provider *app* (:data:`App`) answers ``(method, path, headers, body)`` with a
:class:`Plan`; ``FakeProvider.handle`` and :meth:`Recorder.app` are apps; a
:class:`LoopbackServer` serves an app over HTTP and the transports (``Httpx2Transport(app)``,
``Httpx2AsyncTransport(async_app)``, ``HttpxTransport``, ``HttpxAsyncTransport``; imported on
first use, with ``httpx``) serve it in process. :func:`error_plan` answers an error in the
provider's own shape, e.g. from a router that has no app for a request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agui_replay._lazy import lazy_names

if TYPE_CHECKING:
    from agui_replay.providers._fake import FakeProvider, MatchMode, ReplayTurn, detect_api
    from agui_replay.providers._interaction import (
        Chunk,
        Interaction,
        RecordedRequest,
        RecordedResponse,
        parse_body,
    )
    from agui_replay.providers._recorder import ProxyApp, Recorder
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
    from agui_replay.providers.formats import error_plan
    from agui_replay.providers.formats._wire import Plan
    from agui_replay.providers.transport._httpx import (
        Httpx2AsyncTransport,
        Httpx2Transport,
        HttpxAsyncTransport,
        HttpxTransport,
    )
    from agui_replay.providers.transport._loopback import App, AsyncApp, LoopbackServer

__all__ = [
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
    "Text",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "detect_api",
    "error_plan",
    "parse_body",
]

# Names load on first use: pytest imports this package (for the plugin's fixtures) in every run,
# and the fake, its server and the transports (httpx, httpx2) cost tens of milliseconds.
_SCRIPT = "agui_replay.providers._script"
_HOMES = {
    **dict.fromkeys(
        ("FakeProvider", "MatchMode", "ReplayTurn", "detect_api"), "agui_replay.providers._fake"
    ),
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
        _SCRIPT,
    ),
    **dict.fromkeys(
        ("App", "AsyncApp", "LoopbackServer"), "agui_replay.providers.transport._loopback"
    ),
    **dict.fromkeys(
        ("Httpx2AsyncTransport", "Httpx2Transport", "HttpxAsyncTransport", "HttpxTransport"),
        "agui_replay.providers.transport._httpx",
    ),
    "Plan": "agui_replay.providers.formats._wire",
    "error_plan": "agui_replay.providers.formats",
    **dict.fromkeys(
        ("Chunk", "Interaction", "RecordedRequest", "RecordedResponse", "parse_body"),
        "agui_replay.providers._interaction",
    ),
    **dict.fromkeys(("ProxyApp", "Recorder"), "agui_replay.providers._recorder"),
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
