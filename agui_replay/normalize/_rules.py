"""User normalizers: rules for what the built-in normalization cannot guess.

A rule takes one event (a wire dict) and returns the event to store and compare. Three kinds
are built in, and any callable ``event -> event`` is a rule too::

    from agui_replay.normalize import blank, ignore, replace

    rules = [
        replace(r"order-\\d+", "<order>"),          # a regex, in every string of the event
        ignore("/snapshot/*/updated_at"),          # drop what a JSON-pointer glob names
        blank("/value/etag"),                      # keep the key, hide its value
        lambda event: {k: v for k, v in event.items() if k != "usage"},
    ]

Give them to the plugin with ``@pytest.mark.agui(normalize=rules)`` or a ``conftest.py``
fixture ``agui_normalizers`` returning the list; they apply to the stored and replayed events
alike, after the built-in id and timestamp normalization, and to ``agui_snapshot``. Only
:func:`replace` rules also apply to run inputs (the others are written against events).

A pointer glob is a JSON pointer (``/snapshot/items/0/id``) in which ``*`` stands for any one
key or index and ``**`` for any number of them (``/**/updated_at``: at any depth).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agui_replay._normalizing import Rule
from agui_replay.errors import InvalidArgumentError

__all__ = [
    "Blank",
    "Ignore",
    "Replace",
    "apply_rules",
    "blank",
    "ignore",
    "replace",
]


@dataclass(frozen=True)
class Replace:
    """Replace every match of ``pattern`` in the event's strings (keys too) by ``placeholder``.

    ``type`` is never touched. ``placeholder`` may use group references (``\\1``).
    """

    pattern: re.Pattern[str]
    placeholder: str

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        return self.apply(event)

    def apply(self, data: dict[str, Any]) -> dict[str, Any]:
        """The rule over any JSON object (an event or a run input)."""
        return {
            key if key == "type" else self._text(key): value if key == "type" else self._walk(value)
            for key, value in data.items()
        }

    def _text(self, value: str) -> str:
        return self.pattern.sub(self.placeholder, value)

    def _walk(self, value: Any) -> Any:
        return map_strings(value, self._text)


def map_strings(value: Any, text: Callable[[str], str]) -> Any:
    """A copy of JSON-like ``value`` with ``text`` applied to every string in it, keys too."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, dict):
        return {
            (text(k) if isinstance(k, str) else k): map_strings(v, text) for k, v in value.items()
        }
    if isinstance(value, list):
        return [map_strings(v, text) for v in value]
    return value


def replace(pattern: str | re.Pattern[str], placeholder: str) -> Replace:
    """A rule replacing each match of the regex ``pattern`` by ``placeholder``."""
    if not isinstance(placeholder, str):
        raise InvalidArgumentError(
            f"replace(): the placeholder must be a string, not {type(placeholder).__name__}"
        )
    if isinstance(pattern, re.Pattern):
        return Replace(pattern, placeholder)
    if not isinstance(pattern, str):
        raise InvalidArgumentError(
            f"replace(): the pattern must be a regex string, not {type(pattern).__name__}"
        )
    try:
        return Replace(re.compile(pattern), placeholder)
    except re.error as exc:
        raise InvalidArgumentError(f"replace({pattern!r}): not a valid regex: {exc}") from None


def _parse_glob(glob: str, rule: str) -> tuple[str, ...]:
    if not isinstance(glob, str) or not glob.startswith("/"):
        raise InvalidArgumentError(
            f"{rule}({glob!r}): a pointer glob is a JSON pointer starting with '/', "
            'e.g. "/snapshot/*/updated_at"'
        )
    return tuple(part.replace("~1", "/").replace("~0", "~") for part in glob[1:].split("/"))


def _edit(
    value: Any, parts: tuple[str, ...], action: Callable[[dict[str, Any] | list[Any], Any], None]
) -> Any:
    """``value`` copied along the paths ``parts`` matches; ``action(container, key)`` at ends."""
    if not parts:
        return value
    head, rest = parts[0], parts[1:]
    if head == "**":
        # Zero segments, or one segment and "**" again.
        value = _edit(value, rest, action)
        if isinstance(value, dict):
            return {k: _edit(v, parts, action) for k, v in value.items()}
        if isinstance(value, list):
            return [_edit(v, parts, action) for v in value]
        return value
    if isinstance(value, dict):
        keys = list(value) if head == "*" else [head] if head in value else []
        if not keys:
            return value
        copied = dict(value)
        for key in keys:
            if rest:
                copied[key] = _edit(copied[key], rest, action)
            else:
                action(copied, key)
        return copied
    if isinstance(value, list):
        if head == "*":
            indexes = list(range(len(value)))
        elif head.isdigit() and int(head) < len(value):
            indexes = [int(head)]
        else:
            return value
        items = list(value)
        for index in reversed(indexes):  # removals from the end keep the indexes valid
            if rest:
                items[index] = _edit(items[index], rest, action)
            else:
                action(items, index)
        return items
    return value


@dataclass(frozen=True)
class Ignore:
    """Remove whatever the pointer glob names (a key from its object, an item from its list)."""

    glob: str
    parts: tuple[str, ...]

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        def drop(container: dict[str, Any] | list[Any], key: Any) -> None:
            del container[key]

        edited: dict[str, Any] = _edit(event, self.parts, drop)
        return edited


@dataclass(frozen=True)
class Blank:
    """Put ``placeholder`` in place of whatever the pointer glob names (the key stays)."""

    glob: str
    parts: tuple[str, ...]
    placeholder: Any

    def __call__(self, event: dict[str, Any]) -> dict[str, Any]:
        placeholder = self.placeholder

        def hide(container: dict[str, Any] | list[Any], key: Any) -> None:
            container[key] = placeholder

        edited: dict[str, Any] = _edit(event, self.parts, hide)
        return edited


def ignore(glob: str) -> Ignore:
    """A rule removing what the JSON-pointer glob ``glob`` names (``*``: one key, ``**``: any)."""
    return Ignore(glob, _parse_glob(glob, "ignore"))


def blank(glob: str, placeholder: Any = "<blank>") -> Blank:
    """A rule replacing what the JSON-pointer glob ``glob`` names by ``placeholder``."""
    return Blank(glob, _parse_glob(glob, "blank"), placeholder)


def apply_rules(rules: Iterable[Rule], event: dict[str, Any], index: int) -> dict[str, Any]:
    """``event`` through every rule in order; a rule that fails or returns no dict is named."""
    for rule in rules:
        try:
            result = rule(event)
        except Exception as exc:
            raise InvalidArgumentError(
                f"normalizer {rule!r} failed on event #{index} ({event.get('type')}): "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(result, dict):
            raise InvalidArgumentError(
                f"normalizer {rule!r} returned {type(result).__name__} for event #{index} "
                f"({event.get('type')}); a rule returns the event (a dict)"
            )
        event = result
    return event
