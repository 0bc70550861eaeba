"""Cassette ages: ``agui_max_age`` values (``90d``, ``12w``, ``6m``) and a cassette's age.

A cassette's age counts from its ``recorded_at`` (the UTC time it was recorded; a refresh and
an unchanged re-record keep it). A cassette without one has no age and is never stale.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone

__all__ = ["AGE_FORMS", "age_days", "describe_age", "parse_max_age"]

AGE_FORMS = "a whole number followed by d (days), w (weeks) or m (months of 30 days): 90d, 12w, 6m"
_UNIT_DAYS = {"d": 1, "w": 7, "m": 30}
_MAX_AGE = re.compile(r"\A\s*([0-9]+)\s*([dwm])\s*\Z", re.IGNORECASE)


def parse_max_age(value: str) -> int | None:
    """The number of days ``value`` means, or ``None`` when it is not one of :data:`AGE_FORMS`."""
    found = _MAX_AGE.match(value)
    if found is None or int(found.group(1)) == 0:
        return None
    return int(found.group(1)) * _UNIT_DAYS[found.group(2).lower()]


def age_days(recorded_at: str | None, now: datetime | None = None) -> int | None:
    """Whole days since ``recorded_at`` (ISO 8601; ``None`` when missing or unreadable)."""
    if not recorded_at:
        return None
    try:
        when = datetime.fromisoformat(recorded_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    now = now or datetime.now(timezone.utc)
    return max(0, (now - when).days)


def describe_age(days: int) -> str:
    """``"3 days"``, ``"1 day"``: an age for a message."""
    return f"{days} day" + ("" if days == 1 else "s")
