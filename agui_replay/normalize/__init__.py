"""Normalization: make an event stream deterministic so two runs of one agent compare equal."""

from agui_replay._lazy import claim
from agui_replay.normalize._normalizer import (
    ID_KINDS,
    NormalizedStream,
    Normalizer,
    Rule,
    TimestampMode,
    blank,
    copy_json,
    ignore,
    normalize_events,
    normalize_stream,
    replace,
)
from agui_replay.normalize._rules import (
    Blank,
    Ignore,
    Replace,
    apply_rules,
    as_rules,
)

__all__ = [
    "ID_KINDS",
    "Blank",
    "Ignore",
    "NormalizedStream",
    "Normalizer",
    "Replace",
    "Rule",
    "TimestampMode",
    "apply_rules",
    "as_rules",
    "blank",
    "copy_json",
    "ignore",
    "normalize_events",
    "normalize_stream",
    "replace",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
