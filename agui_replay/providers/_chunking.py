"""Split text (or tool arguments) into stream chunks: by word, by character, by size or at cuts.

>>> by_word("Hello big world")
['Hello', ' big', ' world']
>>> by_char("abc")
['a', 'b', 'c']
>>> by_size('{"city": "Paris"}', 6)
['{"city', '": "Pa', 'ris"}']

Every way to cut a text: :func:`agui_replay.strategies.chunk_splits` (a hypothesis strategy).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from agui_replay.errors import InvalidArgumentError

__all__ = ["by_char", "by_size", "by_word", "split_at"]

_WORD = re.compile(r"\s*\S+")


def by_word(text: str) -> list[str]:
    """Chunks that each hold one word with the whitespace before it (joins back to ``text``)."""
    chunks = _WORD.findall(text)
    rest = text[sum(map(len, chunks)) :]
    if rest:
        chunks.append(rest)
    return chunks


def by_char(text: str) -> list[str]:
    """One chunk per character."""
    return list(text)


def by_size(text: str, size: int) -> list[str]:
    """Chunks of ``size`` characters (the last may be shorter)."""
    if size < 1:
        raise InvalidArgumentError(f"by_size needs a size >= 1, got {size}")
    return [text[i : i + size] for i in range(0, len(text), size)]


def split_at(text: str, cuts: Iterable[int]) -> list[str]:
    """Cut ``text`` at the given positions (0 and len(text) are implied; duplicates ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]
