"""Record modes, the defaults of a cassette session, and the errors of recording and replay."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum

from agui_replay.errors import (
    MissingCassetteError,
    NetworkBlockedError,
    RecordModeError,
    ReplayMismatchError,
    TargetError,
    UpstreamError,
)
from agui_replay.recording._botocore import placeholder_credentials

__all__ = [
    "DEFAULT_FROZEN_TIME",
    "DEFAULT_SECRET_ENV",
    "DEFAULT_UPSTREAM",
    "PLACEHOLDER_ENV",
    "MissingCassetteError",
    "NetworkBlockedError",
    "RecordMode",
    "RecordModeError",
    "ReplayMismatchError",
    "TargetError",
    "UpstreamError",
    "placeholder_env",
    "placeholder_variables",
    "secrets_from_env",
]

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
"""Where recording sends provider traffic unless configured otherwise."""

_API_KEYS = (
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
)
"""The model SDKs' API key variables: each a secret to scrub, each given a placeholder."""

_KEY_PLACEHOLDER = "sk-agui-replay-placeholder"

PLACEHOLDER_ENV: dict[str, str] = {
    **dict.fromkeys(_API_KEYS, _KEY_PLACEHOLDER),
    "AWS_ACCESS_KEY_ID": "AKIAAGUIREPLAYPLACE0",
    "AWS_SECRET_ACCESS_KEY": "agui-replay-placeholder-secret-access-key",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
}
"""The variables the supported SDKs demand before they send anything (API keys, AWS
credentials and region), each with a placeholder of the shape the SDK accepts. Optional
credentials that change how an SDK signs (``AWS_SESSION_TOKEN``, ``AWS_BEARER_TOKEN_BEDROCK``)
are not in it.

While a session replays (the ``agui`` fixture's setup to teardown in a replay-only session,
and every replayed run), or the pytest plugin records from loopback stand-ins only, each
variable of this list that is unset holds its placeholder, so ``openai.OpenAI()`` with no key
in the environment works: nothing is ever sent with a placeholder beyond loopback. A variable
the user set is never changed; the ones set here are removed afterwards. Placeholders are never
secrets to scrub (the key-shaped ones are scrubbed like any key-shaped string)."""


@contextlib.contextmanager
def placeholder_variables(placeholders: Mapping[str, str] = PLACEHOLDER_ENV) -> Iterator[list[str]]:
    """For the block, each variable of ``placeholders`` that is unset holds its placeholder;
    yields the names set. Afterwards those are unset again, unless something changed them
    meanwhile (then the new value stays)."""
    added = [name for name in placeholders if name not in os.environ]
    for name in added:
        os.environ[name] = placeholders[name]
    try:
        yield added
    finally:
        for name in added:
            if os.environ.get(name) == placeholders[name]:
                del os.environ[name]


DEFAULT_FROZEN_TIME = "2025-01-01T00:00:00+00:00"
"""The wall-clock instant every run sees (record and replay), when time-machine is installed."""

DEFAULT_SECRET_ENV: tuple[str, ...] = (
    *_API_KEYS,
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
    """The values of those environment variables that are set (the secrets to scrub).

    A value shorter than 8 characters is left out, with a
    ``UserWarning`` naming the variable (never its value): replacing ``x`` everywhere would
    wreck the cassette, and no real key is that short.
    """
    from agui_replay._secrets import MIN_SECRET_LENGTH

    found: list[str] = []
    for name in dict.fromkeys(names):
        value = os.environ.get(name, "")
        if not value.strip():
            continue
        if len(value) < MIN_SECRET_LENGTH:
            warnings.warn(
                f"agui_replay: the value of ${name} is shorter than {MIN_SECRET_LENGTH} "
                "characters, so it is not scrubbed from cassettes (every occurrence of so short "
                "a string would be replaced, corrupting them); a real key is longer",
                UserWarning,
                stacklevel=2,
            )
            continue
        found.append(value)
    return found


@contextlib.contextmanager
def placeholder_env(placeholders: Mapping[str, str] = PLACEHOLDER_ENV) -> Iterator[list[str]]:
    """For the block, each variable of ``placeholders`` that is unset holds its placeholder
    (see :data:`PLACEHOLDER_ENV`); yields the names set. Afterwards those are unset again,
    unless something changed them meanwhile (then the new value stays). A boto3 client built
    earlier with no credentials at all signs with the placeholder AWS ones meanwhile."""
    aws = (PLACEHOLDER_ENV["AWS_ACCESS_KEY_ID"], PLACEHOLDER_ENV["AWS_SECRET_ACCESS_KEY"])
    with (
        placeholder_variables(placeholders) as added,
        placeholder_credentials(*aws),  # a boto3 client built before, with none
    ):
        yield added
