"""The model the ADK cassettes were recorded from: a script that answers like Gemini.

Imports nothing from ADK, so ``conftest.py`` loads it in any venv (the main one too, where the
test module skips itself).

It reads the Gemini ``contents`` ADK sends (``request.messages``): a user turn naming a city
gets a ``city_weather`` function call; the turn that carries the tool's ``functionResponse`` gets
a one-sentence answer, streamed word by word. Gemini sends a function call whole, with no id
(ADK names it ``adk-<uuid>`` itself), so the script gives none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agui_replay.providers import ProviderRequest, ToolCallDelta, by_word

__all__ = ["ASK_AGAIN", "answer_for", "scripted_model"]

ASK_AGAIN = "Which city would you like tomorrow's forecast for?"

_CITIES = ("Lisbon", "Oslo", "Nairobi", "Atlantis")


def answer_for(response: dict[str, Any]) -> str:
    """What the model says once ``city_weather`` has answered with ``response``."""
    if response.get("status") != "ok":
        return f"Sorry: {response.get('error', 'the lookup failed')}."
    return (
        f"Tomorrow in {response['city']}: {response['sky']}, "
        f"{response['low_c']} to {response['high_c']} °C."
    )


def _parts(content: Any) -> list[dict[str, Any]]:
    return [p for p in content.get("parts", []) if isinstance(p, dict)]


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """A stand-in for Gemini: call the tool for the city the user names, then say what it said."""
    last = request.messages[-1]
    for part in _parts(last):
        if "functionResponse" in part:
            yield from by_word(answer_for(part["functionResponse"]["response"]))
            return
    asked = " ".join(p.get("text", "") for p in _parts(last))
    city = next((c for c in _CITIES if c.lower() in asked.lower()), None)
    if city is None:
        yield from by_word(ASK_AGAIN)
        return
    yield ToolCallDelta(json.dumps({"city": city}), name="city_weather")
