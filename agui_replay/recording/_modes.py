"""Record modes, the defaults of a cassette session, and the errors of recording and replay."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from enum import Enum

from agui_replay.errors import (
    MissingCassetteError,
    NetworkBlockedError,
    RecordModeError,
    ReplayMismatchError,
    TargetError,
    UpstreamError,
)

__all__ = [
    "DEFAULT_FROZEN_TIME",
    "DEFAULT_SECRET_ENV",
    "DEFAULT_UPSTREAM",
    "MissingCassetteError",
    "NetworkBlockedError",
    "RecordMode",
    "RecordModeError",
    "ReplayMismatchError",
    "TargetError",
    "UpstreamError",
    "secrets_from_env",
]

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
"""Where recording sends provider traffic unless configured otherwise."""

DEFAULT_FROZEN_TIME = "2025-01-01T00:00:00+00:00"
"""The wall-clock instant every run sees (record and replay), when time-machine is installed."""

DEFAULT_SECRET_ENV: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GROQ_API_KEY",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "OPENROUTER_API_KEY",
    "DEEPSEEK_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)
"""Environment variables whose values (when set) are always scrubbed from cassettes."""


# --- errors -----------------------------------------------------------------------------------


# --- record modes -----------------------------------------------------------------------------


class RecordMode(str, Enum):
    """When a :class:`CassetteSession` records and when it replays (see the module table)."""

    NONE = "none"
    ONCE = "once"
    REWRITE = "rewrite"
    NEW = "new"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: str | RecordMode, *, source: str = "record mode") -> RecordMode:
        """The mode named ``value``; anything else raises :class:`RecordModeError`.

        >>> RecordMode.parse("once")
        <RecordMode.ONCE: 'once'>
        """
        if isinstance(value, RecordMode):
            return value
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                return cls(value.strip().lower())
        valid = ", ".join(repr(m.value) for m in cls)
        raise RecordModeError(f"{source}: {value!r} is not a record mode; use one of {valid}")


def secrets_from_env(names: Iterable[str] = DEFAULT_SECRET_ENV) -> list[str]:
    """The values of those environment variables that are set (the secrets to scrub)."""
    return [v for v in (os.environ.get(n, "") for n in names) if v.strip()]
