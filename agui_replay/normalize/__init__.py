"""Normalization: make an event stream deterministic so two runs of one agent compare equal."""

from agui_replay._lazy import claim
from agui_replay.normalize._normalizer import (
    ID_KINDS,
    NormalizedStream,
    Normalizer,
    Rule,
    TimestampMode,
    blank,
    ignore,
    normalize_events,
    normalize_stream,
    replace,
)
from agui_replay.normalize._rules import (
    as_rules,
)

__all__ = [
    "ID_KINDS",
    "NormalizedStream",
    "Normalizer",
    "Rule",
    "TimestampMode",
    "as_rules",
    "blank",
    "ignore",
    "normalize_events",
    "normalize_stream",
    "replace",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
