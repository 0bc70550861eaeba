"""Scrubbing: keep API keys and other secrets out of everything that is stored."""

from agui_replay._facades import claim
from agui_replay.scrub._scrubber import (
    DEFAULT_SECRET_HEADERS,
    DEFAULT_SECRET_PATTERNS,
    SCRUBBED,
    Scrubber,
    scrub,
)

__all__ = [
    "DEFAULT_SECRET_HEADERS",
    "DEFAULT_SECRET_PATTERNS",
    "SCRUBBED",
    "Scrubber",
    "scrub",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
