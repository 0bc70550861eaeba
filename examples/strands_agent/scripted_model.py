"""The model the Strands cassettes were recorded from: a script that answers like Bedrock.

Imports nothing from Strands, so ``conftest.py`` loads it in any venv (the main one too, where
the test module skips itself).

It reads the Converse ``messages`` Strands sends (``request.messages``), one tool at a time as
the system prompt asks: a user turn naming a city gets a ``forecast`` call; once the forecast
came back, a ``whats_on`` call (the MCP server's tool); once both did, a two-sentence answer
streamed word by word. A forecast the weather service did not have ends the turn with an
apology. Tool results come back as ``toolResult`` blocks of a user message, matched to their
call by ``toolUseId``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from agui_replay.providers import ProviderRequest, ToolCallDelta

__all__ = ["ASK_AGAIN", "answer_for", "scripted_model"]

ASK_AGAIN = "Which city are you planning tomorrow in?"

_CITIES = ("Lisbon", "Oslo", "Atlantis")


def answer_for(forecast: dict[str, Any], whats_on: str | None) -> str:
    """What the model says once the tools have answered."""
    if forecast.get("status") != "ok":
        return f"Sorry: {forecast.get('error', 'the forecast lookup failed')}."
    return (
        f"Tomorrow in {forecast['city']}: {forecast['sky']}, "
        f"{forecast['low_c']} to {forecast['high_c']} °C. {whats_on}"
    )


def _words(text: str) -> Iterator[str]:
    words = text.split(" ")
    for n, word in enumerate(words):
        yield word if n == len(words) - 1 else word + " "


def _text(content: list[dict[str, Any]]) -> str:
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def _results(messages: list[Any]) -> dict[str, str]:
    """Each tool's latest result text, by tool name."""
    names: dict[str, str] = {}
    results: dict[str, str] = {}
    for message in messages:
        for block in message.get("content", []):
            if "toolUse" in block:
                names[block["toolUse"]["toolUseId"]] = block["toolUse"]["name"]
            elif "toolResult" in block:
                result = block["toolResult"]
                name = names.get(result["toolUseId"], "?")
                results[name] = _text(result.get("content", []))
    return results


def scripted_model(request: ProviderRequest) -> Iterator[str | ToolCallDelta]:
    """A stand-in for Claude on Bedrock: forecast, then whats_on, then the answer."""
    messages = request.messages
    # The question this turn answers: the last user message that says something (tool results
    # come back in user messages too, with no text).
    start = max(
        n for n, m in enumerate(messages) if m.get("role") == "user" and _text(m["content"])
    )
    asked = _text(messages[start]["content"])
    results = _results(messages[start:])
    if not results:
        city = next((c for c in _CITIES if c.lower() in asked.lower()), None)
        if city is None:
            yield from _words(ASK_AGAIN)
            return
        yield ToolCallDelta('{"city": ', name="forecast")
        yield ToolCallDelta(json.dumps(city) + "}")
        return
    forecast = json.loads(results["forecast"])
    if forecast.get("status") == "ok" and "whats_on" not in results:
        yield ToolCallDelta(json.dumps({"city": forecast["city"]}), name="whats_on")
        return
    yield from _words(answer_for(forecast, results.get("whats_on")))
