"""Normalization: make an event stream deterministic so two runs of one agent compare equal."""

from agui_replay._facades import claim
from agui_replay.normalize._normalizer import (
    NormalizedStream,
    Normalizer,
    blank,
    ignore,
    normalize_events,
    normalize_stream,
    replace,
)

__all__ = [
    "NormalizedStream",
    "Normalizer",
    "blank",
    "ignore",
    "normalize_events",
    "normalize_stream",
    "replace",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
