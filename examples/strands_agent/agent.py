"""A Strands agent served over AG-UI by ag-ui-strands: a day planner with two tools.

The agent is a Strands ``Agent`` on ``BedrockModel`` (Claude Haiku 4.5 on Bedrock's
ConverseStream, through boto3) with two tools of two kinds:

* ``forecast(city)``, a Python tool that calls a weather API over HTTP with ``requests``;
* ``whats_on(city)``, the tool of an MCP server (``events_server.py``) that Strands reaches over
  streamable HTTP with its ``MCPClient``: the agent lists the server's tools when it is built and
  calls them through the MCP session.

ag-ui-strands' ``StrandsAgent`` wraps it (building a fresh Strands agent per thread from this
one) and ``add_strands_fastapi_endpoint`` serves it: ``POST /`` with a ``RunAgentInput``, an SSE
stream of AG-UI events back. The app's lifespan closes the MCP connection when the app shuts
down.

Nothing here knows about tests. Serve it against Bedrock, with AWS credentials in the
environment and the two services up::

    python examples/strands_agent/events_server.py 18632 &
    uvicorn --factory examples.strands_agent.agent:create_app

strands-agents pins ``mcp<2.2``, so this example has its own venv (``.venv-strands``, built by
``.ci/run``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import requests
from ag_ui_strands import StrandsAgent, add_strands_fastapi_endpoint
from fastapi import FastAPI
from mcp.client.streamable_http import streamable_http_client
from strands import Agent, tool
from strands.models import BedrockModel
from strands.tools.mcp import MCPClient

__all__ = [
    "EVENTS_PORT",
    "EVENTS_URL",
    "MODEL_ID",
    "REGION",
    "SYSTEM_PROMPT",
    "WEATHER_PORT",
    "WEATHER_URL",
    "build_agent",
    "create_app",
    "forecast_tool",
]

MODEL_ID = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
REGION = "us-east-1"

# The two services, on fixed loopback ports: a replay matches each request by its URL, so the
# addresses the cassettes were recorded from are the ones the agent must call.
WEATHER_PORT = 18631
WEATHER_URL = f"http://127.0.0.1:{WEATHER_PORT}"
EVENTS_PORT = 18632
EVENTS_URL = f"http://127.0.0.1:{EVENTS_PORT}/mcp"

SYSTEM_PROMPT = (
    "You help plan tomorrow in a city. Look the weather up with forecast, then what is on "
    "with whats_on, then answer in two short sentences. If the weather service knows no "
    "forecast for the city, say so and stop."
)


def forecast_tool(weather_url: str) -> Any:
    """The ``forecast`` tool, calling the weather API at ``weather_url``."""

    @tool
    def forecast(city: str) -> dict[str, Any]:
        """Tomorrow's weather forecast for a city.

        Args:
            city: The city's name, e.g. "Lisbon".
        """
        response = requests.get(f"{weather_url}/forecast", params={"city": city}, timeout=10)
        if response.status_code == 404:
            return {"status": "error", "error": response.json()["error"]}
        response.raise_for_status()
        return {"status": "ok", **response.json()}

    return forecast


def build_agent(weather_url: str = WEATHER_URL, events_url: str = EVENTS_URL) -> Agent:
    """The Strands agent, its MCP client among its tools.

    Passing the ``MCPClient`` itself as a tool makes Strands manage it: the agent connects to the
    MCP server and lists its tools when it is built, and closes the connection when it is
    cleaned up (``agent.cleanup()``).
    """
    events = MCPClient(lambda: streamable_http_client(events_url))
    model = BedrockModel(model_id=MODEL_ID, region_name=REGION)
    return Agent(
        model=model,
        system_prompt=SYSTEM_PROMPT,
        tools=[forecast_tool(weather_url), events],
    )


def create_app(weather_url: str = WEATHER_URL, events_url: str = EVENTS_URL) -> FastAPI:
    """The agent behind ``POST /``; its MCP connection lives as long as the app.

    Build it where its requests may go out (in a test, once the ``agui`` fixture is set up):
    boto3 looks its credentials up and the MCP client connects while the app is made.
    """
    agent = build_agent(weather_url, events_url)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        agent.cleanup()  # closes the MCP connection and stops its thread

    app = FastAPI(title="Strands day planner", lifespan=lifespan)
    add_strands_fastapi_endpoint(app, StrandsAgent(agent, name="day_planner"), "/")
    return app
