"""A packing assistant on pydantic-ai, spoken over AG-UI by pydantic-ai's own ``AGUIAdapter``.

The agent reaches its model through the ``openai`` SDK (pydantic-ai's ``OpenAIChatModel``) at
any OpenAI-compatible base URL. It has two tools: ``get_forecast`` (a lookup) and ``pack``,
which puts items on the shared packing list and publishes the whole list to the client as a
``STATE_SNAPSHOT``. The client sends the list back with every request (``RunAgentInput.state``),
and the agent's instructions tell the model what is already packed.

:func:`create_app` is the ASGI app: ``POST /agent`` with a ``RunAgentInput``, an SSE event stream
back. Serve it against OpenAI::

    OPENAI_API_KEY=sk-... uvicorn --factory examples.pydantic_ai_agent.agent:app_from_env
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ag_ui.core import StateSnapshotEvent
from openai import AsyncOpenAI
from pydantic import BaseModel, Field
from pydantic_ai import Agent, RunContext, ToolReturn
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui import StateDeps
from pydantic_ai.ui.ag_ui import AGUIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

__all__ = ["FORECASTS", "INSTRUCTIONS", "PackingList", "app_from_env", "build_agent", "create_app"]

INSTRUCTIONS = (
    "You help people pack for a trip. Look up the forecast for their destination with "
    "get_forecast, then put what they need on the packing list with pack (only what is not on "
    "it yet). Answer in one or two short sentences."
)

FORECASTS = {
    "oslo": "8°C, rain showers all weekend",
    "lisbon": "24°C and sunny",
    "reykjavik": "3°C, wind and sleet",
}
"""What ``get_forecast`` knows (a stand-in for a weather service)."""


class PackingList(BaseModel):
    """The shared state: where the trip goes and what is packed."""

    destination: str | None = None
    items: list[str] = Field(default_factory=list)


Deps = StateDeps[PackingList]


def build_agent(client: AsyncOpenAI, *, model: str = "gpt-4o-mini") -> Agent[Deps, str]:
    """The pydantic-ai agent, its model called through ``client``."""
    agent = Agent(
        OpenAIChatModel(model, provider=OpenAIProvider(openai_client=client)),
        deps_type=Deps,
        instructions=INSTRUCTIONS,
    )

    @agent.instructions
    def packed_so_far(ctx: RunContext[Deps]) -> str:
        # Rebuilt from the client's state on every request, so the model never re-packs.
        packing = ctx.deps.state
        items = ", ".join(packing.items) if packing.items else "nothing yet"
        return f"Destination: {packing.destination or 'unknown'}. Packed: {items}."

    @agent.tool_plain
    def get_forecast(city: str) -> str:
        """The weather forecast for a city."""
        return FORECASTS.get(city.strip().lower(), f"no forecast for {city}")

    @agent.tool
    def pack(ctx: RunContext[Deps], destination: str, items: list[str]) -> ToolReturn:
        """Put items on the packing list for a trip to ``destination``."""
        packing = ctx.deps.state
        packing.destination = destination
        added = [item for item in items if item not in packing.items]
        packing.items.extend(added)
        snapshot = StateSnapshotEvent(snapshot=packing.model_dump(mode="json"))
        return ToolReturn(
            return_value=f"Packed {len(added)} item(s); {len(packing.items)} on the list.",
            metadata=[snapshot],  # AGUIAdapter emits AG-UI events found in a tool's metadata
        )

    return agent


def create_app(client: AsyncOpenAI, *, model: str = "gpt-4o-mini") -> Starlette:
    """The agent behind ``POST /agent`` (the caller owns ``client`` and closes it)."""
    agent = build_agent(client, model=model)

    async def run(request: Request) -> Response:
        # A fresh list per request: the adapter fills it from RunAgentInput.state.
        return await AGUIAdapter.dispatch_request(
            request, agent=agent, deps=StateDeps(PackingList())
        )

    return Starlette(routes=[Route("/agent", run, methods=["POST"])])


def app_from_env() -> Starlette:
    """For ``uvicorn --factory``: ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``PACKING_MODEL``."""
    client = AsyncOpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
        api_key=os.environ.get("OPENAI_API_KEY"),
    )
    app = create_app(client, model=os.environ.get("PACKING_MODEL", "gpt-4o-mini"))

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with client:
            yield

    app.router.lifespan_context = lifespan
    return app
