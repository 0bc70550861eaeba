"""Scrubbing: keep API keys and other secrets out of everything that is stored."""

from agui_replay._lazy import claim
from agui_replay.scrub._eventstream import scrub_eventstream
from agui_replay.scrub._scrubber import (
    DEFAULT_SECRET_HEADERS,
    DEFAULT_SECRET_PATTERNS,
    DEFAULT_SIGNING_HEADERS,
    MIN_SECRET_LENGTH,
    SCRUBBED,
    Scrubber,
    scrub,
    scrub_sequence,
    sigv4_secrets,
)
from agui_replay.scrub._streams import (
    scrub_chunks,
    split_scrub,
)

__all__ = [
    "DEFAULT_SECRET_HEADERS",
    "DEFAULT_SECRET_PATTERNS",
    "DEFAULT_SIGNING_HEADERS",
    "MIN_SECRET_LENGTH",
    "SCRUBBED",
    "Scrubber",
    "scrub",
    "scrub_chunks",
    "scrub_eventstream",
    "scrub_sequence",
    "sigv4_secrets",
    "split_scrub",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
