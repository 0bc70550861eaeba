"""What the units that take normalization options from users share with ``normalize``.

``normalize`` does the work and defines the rules (``replace``, ``ignore``, ``blank``); this
module holds the few names others need without reaching into it: :data:`Rule` and
:func:`as_rules`, the type and the check of a user's list of rules (``recording``,
``snapshot``), :data:`TimestampMode`, the ``timestamps=`` option (``snapshot``), and
:data:`ID_KINDS`, the kinds in a normalized id such as ``run-1-msg-2`` (``recording`` tells
such ids apart when it refreshes a cassette).

It also says which strings look like ids minted at random, and where inside a longer string they
sit (:func:`looks_random`, :func:`replace_ids`): ``normalize`` finds random ids anywhere in an
event's payload with them (state, CUSTOM and RAW values, ``rawEvent``, tool results, run
inputs), and ``recording`` renames the ones in a run's input. Recognised, bare or embedded:

* UUIDs of every version, dashed (``3f1c...-...``), also inside ``lc_run--<uuid>`` or
  ``tools:<uuid>``; ULIDs (26 Crockford base-32 characters);
* provider ids: ``chatcmpl-``, ``call_``, ``toolu_``, ``srvtoolu_``, ``msg_``, ``resp_``,
  ``fc_``, ``rs_``, ``run_``, ``thread_``, ``asst_``, ``file_``, ``req_``, ``item_``,
  ``evt_``, ``batch_`` followed by a random-looking tail of 8 or more letters and digits,
  or of 20 or more letters whose case is scrambled the way no word's is (one OpenAI
  ``call_`` id in 70 draws no digit among its 24 characters);
* OpenAI's ``system_fingerprint`` (``fp_`` and 8 or more hex digits), which LangChain copies
  into every AI message's ``response_metadata`` and so into the state;
* hex runs of 16 or more characters with letters and digits mixed (undashed UUIDs, trace ids);
  base-62 runs of 22 or more characters with digits, upper and lower case mixed.

"Random-looking" means the tail mixes letters and digits (or, after a provider prefix, upper
and lower case the way no word does), so words (``msg_important``) and numbers (a nanosecond
timestamp) are left alone. The placeholders this package writes (``<id-1>``) and its own
run-derived ids (``run-1-msg-1``) never match.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from typing import Any, Literal, TypeAlias

from agui_replay.errors import InvalidArgumentError

__all__ = [
    "ID_KINDS",
    "ID_SHAPES",
    "Rule",
    "TimestampMode",
    "as_rules",
    "looks_random",
    "replace_ids",
]

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


_PROVIDER_PREFIXES = (
    "chatcmpl",
    "srvtoolu",
    "toolu",
    "call",
    "msg",
    "resp",
    "fc",
    "rs",
    "run",
    "thread",
    "asst",
    "file",
    "req",
    "item",
    "evt",
    "batch",
    "fp",
)

ID_SHAPES: re.Pattern[str] = re.compile(
    r"(?P<uuid>(?<![0-9A-Za-z])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}"
    r"-[0-9A-Fa-f]{12}(?![0-9A-Za-z]))"
    r"|(?P<provider>(?<![0-9A-Za-z])(?P<prefix>" + "|".join(_PROVIDER_PREFIXES) + r")[-_]"
    r"(?P<tail>[A-Za-z0-9]{8,})(?![0-9A-Za-z]))"
    r"|(?P<hex>(?<![0-9A-Za-z])[0-9A-Fa-f]{16,}(?![0-9A-Za-z]))"
    r"|(?P<ulid>(?<![0-9A-Za-z])[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z]))"
    r"|(?P<b62>(?<![0-9A-Za-z])[A-Za-z0-9]{22,}(?![0-9A-Za-z]))"
)
"""One pattern for every recognised shape; a match is a candidate, checked by :func:`_random`."""

_HEX_RUN = re.compile(r"[0-9A-Fa-f]+")

# A cheap first look: every shape holds a run of 8 hex digits or 8 letters-and-digits.
_CANDIDATE = re.compile(r"[0-9A-Za-z]{8}")
_TWO_CAPITALS = re.compile(r"[A-Z]{2}")
_TWO_SMALL = re.compile(r"[a-z]{2}")


def _mixed(text: str) -> bool:
    has_digit = has_alpha = False
    for ch in text:
        if ch.isdigit():
            has_digit = True
        elif ch.isalpha():
            has_alpha = True
        if has_digit and has_alpha:
            return True
    return False


def _scrambled(text: str) -> bool:
    """20+ letters mixed like a base-62 draw that happens to hold no digit.

    The case flips 7 times or more (a random 24-letter draw: about 12), and two capitals stand
    together somewhere, as do two small letters. A camelCase name puts two capitals together
    only around an acronym or a one-letter word.
    """
    if len(text) < 20 or not text.isalpha():
        return False
    flips = sum(1 for a, b in itertools.pairwise(text) if a.isupper() != b.isupper())
    return (
        flips >= 7
        and _TWO_CAPITALS.search(text) is not None
        and _TWO_SMALL.search(text) is not None
    )


def _random(match: re.Match[str]) -> str | None:
    """The part of the match that is random (``None`` when it is not random after all)."""
    kind = match.lastgroup
    if kind == "uuid":
        return match.group("uuid")
    if kind == "provider":
        tail = match.group("tail")
        if match.group("prefix") == "fp" and _HEX_RUN.fullmatch(tail):
            return tail  # a fingerprint is hex, and all digits one time in a hundred
        return tail if _mixed(tail) or _scrambled(tail) else None
    if kind in ("hex", "ulid"):
        text = match.group(0)
        return text if _mixed(text) else None
    text = match.group(0)  # base-62: digits and both cases
    if _mixed(text) and any(c.isupper() for c in text) and any(c.islower() for c in text):
        return text
    return None


def looks_random(value: str) -> bool:
    """True when the whole of ``value`` is one recognised id (a UUID, ``call_...``, ...)."""
    match = ID_SHAPES.fullmatch(value)
    return match is not None and _random(match) is not None


def replace_ids(value: str, name: Callable[[str, str], str]) -> str:
    """``value`` with each random id in it replaced by ``name(token, random_part)``.

    ``token`` is the whole match (``call_AbC12...``), ``random_part`` the part that is random
    (the tail after a provider prefix; the whole token otherwise). ``name`` returns the text to
    put in place of the whole token.
    """
    if _CANDIDATE.search(value) is None:
        return value

    def swap(match: re.Match[str]) -> str:
        part = _random(match)
        return match.group(0) if part is None else name(match.group(0), part)

    return ID_SHAPES.sub(swap, value)
