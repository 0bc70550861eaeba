"""What the units that take normalization options from users share with ``normalize``.

``normalize`` does the work and defines the rules (``replace``, ``ignore``, ``blank``); this
module holds the few names others need without reaching into it: :data:`Rule` and
:func:`as_rules`, the type and the check of a user's list of rules (``recording``,
``snapshot``), :data:`TimestampMode`, the ``timestamps=`` option (``snapshot``), and
:data:`ID_KINDS`, the kinds in a normalized id such as ``run-1-msg-2`` (``recording`` tells
such ids apart when it refreshes a cassette).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeAlias

from agui_replay.errors import InvalidArgumentError

__all__ = ["ID_KINDS", "Rule", "TimestampMode", "as_rules"]

ID_KINDS: tuple[str, ...] = ("msg", "call", "interrupt", "subagent")
"""The id namespaces, each with its own counter per run."""

TimestampMode: TypeAlias = Literal["remove", "freeze", "keep"]
"""``"remove"`` timestamps, ``"freeze"`` them to one value, or ``"keep"`` them."""

Rule: TypeAlias = Callable[[dict[str, Any]], dict[str, Any]]
"""A user normalizer: an event (wire dict) in, the event to store and compare out."""


def as_rules(rules: Iterable[Any] | None, *, source: str = "normalize") -> tuple[Rule, ...]:
    """Check a list of rules; a wrong item fails naming its position and what a rule is."""
    if rules is None:
        return ()
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Iterable):
        raise InvalidArgumentError(
            f"{source}: expected a list of rules (replace(...), ignore(...), blank(...) or "
            f"callables event -> event), not {type(rules).__name__}"
        )
    checked: list[Rule] = []
    for index, rule in enumerate(rules):
        if not callable(rule):
            raise InvalidArgumentError(
                f"{source}[{index}]: {rule!r} is not a rule; use "
                "agui_replay.normalize.replace(regex, placeholder), ignore(glob), blank(glob) "
                "or a callable taking an event dict and returning one"
            )
        checked.append(rule)
    return tuple(checked)
