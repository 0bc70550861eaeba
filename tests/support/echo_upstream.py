"""The turn of an echoing FakeProvider for recording tests: the last user message, word by
word, in whichever wire format the provider is asked in (OpenAI, Anthropic, Gemini)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def echo(request: Any) -> Iterator[str]:
    """``[echo]``, then each word of the last message (a string, or Gemini's text parts)."""
    yield "[echo]"
    messages = getattr(request, "messages", None) or [{}]
    last = messages[-1] if isinstance(messages[-1], dict) else {}
    text = last.get("content")
    if not isinstance(text, str):  # Gemini parts
        text = " ".join(p.get("text", "") for p in last.get("parts") or [] if isinstance(p, dict))
    for word in str(text).split():
        yield " " + word
