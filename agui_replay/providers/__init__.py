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
:class:`SessionProvider` is ``agui.provider``, the seam the recording session reaches every
request through.

Where things live (all private, behind the names below):

* ``_fake``, ``_script``: the scripted fake and its script vocabulary; ``_chunking``: text
  cut into stream chunks; ``_recorder``: the recorder; ``_interaction``: the recorded data;
  ``_seam``: the seam; ``_plan``: a planned answer (:class:`Plan`) and the three ways a
  request fails (cut, timeout, unreachable);
* where a replayed request is matched: ``_replaying`` (the reel of recorded exchanges every
  replay answers from, its faults, and the model providers' role) with ``_matchers`` (the
  named matchers: method, origin, path, query, body less ``match_ignore``, headers,
  callables); ``_transport/_tape`` is the other hosts' role (and records them);
* ``_formats/``: one module per wire format (``_wire`` OpenAI and Anthropic, ``_gemini``,
  ``_bedrock``); a new provider format goes there, dispatched in ``_formats/__init__.py``;
* ``_transport/``: how requests reach an answer: the loopback server, one module per HTTP
  library (``_httpx``, ``_aiohttp``, ``_urllib3``, ``_urllib``), the routing of the known
  provider hosts (``_routing``) and the tape of other hosts (``_tape``);
* ``_background``: the telemetry a tape drops (:data:`DEFAULT_DROP_HOSTS`, light to import:
  the pytest plugin reads it at start-up) and how background work is told from the test's.

Adding an HTTP library is one new module in ``_transport/`` and its line in
``_routing._transports``: the module defines ``install(answer_for)``, which patches the
library so a request that ``answer_for(host, port, origin, asynchronous=...)`` routes is
answered in process, and a :class:`~agui_replay.providers._plan.Library` subclass naming the
library's exceptions for a timeout, a refused connection and a cut stream.
"""

from __future__ import annotations

from agui_replay._facades import claim
from agui_replay.providers._background import DEFAULT_DROP_HOSTS
from agui_replay.providers._chunking import by_size, by_word
from agui_replay.providers._fake import FakeProvider
from agui_replay.providers._interaction import Interaction
from agui_replay.providers._recorder import Recorder
from agui_replay.providers._script import (
    ProviderRequest,
    Reasoning,
    ReasoningDelta,
    Text,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    detect_api,
)
from agui_replay.providers._seam import SessionProvider
from agui_replay.providers._transport._loopback import LoopbackServer
from agui_replay.providers._transport._tape import HttpTape

__all__ = [
    "DEFAULT_DROP_HOSTS",
    "FakeProvider",
    "HttpTape",
    "Interaction",
    "LoopbackServer",
    "ProviderRequest",
    "Reasoning",
    "ReasoningDelta",
    "Recorder",
    "SessionProvider",
    "Text",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "by_size",
    "by_word",
    "detect_api",
]

# Plain imports (about 50 ms in a bare interpreter, httpx and httpx2 not among them; about
# 16 ms at a pytest start, where the plugin reads DEFAULT_DROP_HOSTS for its ini default).
claim(__name__, [globals()[name] for name in __all__])
