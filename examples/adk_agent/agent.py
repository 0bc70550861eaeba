"""A Google ADK agent served over AG-UI by ag-ui-adk.

The agent is an ADK ``LlmAgent`` on a Gemini model with one plain Python function as its tool,
``city_weather``, which answers from a small table. ag-ui-adk's ``ADKAgent`` wraps it (with an
in-memory ADK session service of its own, for one user) and ``add_adk_fastapi_endpoint`` serves
it as a FastAPI app: ``POST /`` with a ``RunAgentInput``, an SSE stream of AG-UI events back.

The model client is ADK's own: ``LlmAgent(model="gemini-2.5-flash")`` makes ADK build a
google-genai client from ``GOOGLE_API_KEY`` when it first calls the model, with no base URL, so
its requests go to ``generativelanguage.googleapis.com`` (over aiohttp, google-genai's async
transport when aiohttp is installed). Nothing here knows about tests. Serve it against Gemini::

    GOOGLE_API_KEY=... uvicorn --factory examples.adk_agent.agent:create_app

google-adk is a large install, so this example has its own venv (``.venv-adk``, built by
``.ci/run``).
"""

from __future__ import annotations

from ag_ui_adk import ADKAgent, add_adk_fastapi_endpoint
from fastapi import FastAPI
from google.adk.agents import LlmAgent
from google.adk.sessions import InMemorySessionService

__all__ = ["FORECASTS", "INSTRUCTION", "MODEL", "build_agent", "city_weather", "create_app"]

MODEL = "gemini-2.5-flash"

FORECASTS = {
    "lisbon": {"sky": "sunny", "high_c": 24, "low_c": 16},
    "oslo": {"sky": "light snow", "high_c": -2, "low_c": -7},
    "nairobi": {"sky": "showers", "high_c": 22, "low_c": 13},
}
"""What ``city_weather`` knows: tomorrow's forecast for three cities."""

INSTRUCTION = (
    "You answer questions about tomorrow's weather. Look the city up with city_weather, "
    "then answer in one short sentence. If the tool knows no forecast, say so."
)


def city_weather(city: str) -> dict[str, object]:
    """Tomorrow's weather forecast for a city.

    Args:
        city: The city's name, e.g. "Lisbon".

    Returns:
        The sky and the high and low temperatures in degrees Celsius, or an error.
    """
    forecast = FORECASTS.get(city.strip().lower())
    if forecast is None:
        return {"status": "error", "error": f"no forecast for {city}"}
    return {"status": "ok", "city": city, **forecast}


def build_agent(model: str = MODEL) -> ADKAgent:
    """The ADK agent wrapped for AG-UI: one app, one user, sessions in memory.

    The session service is this agent's own: an ``ADKAgent`` built without one shares a
    process-wide default, so two apps of one process (two tests, say) would see each other's
    threads.
    """
    weather = LlmAgent(
        name="weather_agent",
        model=model,
        description="Answers questions about tomorrow's weather in a city.",
        instruction=INSTRUCTION,
        tools=[city_weather],
    )
    return ADKAgent(
        adk_agent=weather,
        app_name="weather_app",
        user_id="demo-user",
        session_service=InMemorySessionService(),
        use_in_memory_services=True,
    )


def create_app(model: str = MODEL) -> FastAPI:
    """The agent behind ``POST /`` (ag-ui-adk also adds ``/capabilities`` and ``/agents/state``)."""
    app = FastAPI(title="ADK weather agent")
    add_adk_fastapi_endpoint(app, build_agent(model), path="/")
    return app
