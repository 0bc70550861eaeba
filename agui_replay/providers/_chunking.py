"""Split text (or tool arguments) into stream chunks: by word, by character, or any way.

>>> by_word("Hello big world")
['Hello', ' big', ' world']
>>> by_char("abc")
['a', 'b', 'c']
>>> by_size('{"city": "Paris"}', 6)
['{"city', '": "Pa', 'ris"}']

``chunkings(text)`` is a hypothesis strategy over every way to cut ``text`` into non-empty
chunks, so a test can prove an agent copes with any chunking (it needs the ``strategies``
extra; the other functions do not)::

    @given(chunks=chunkings("Hello world"))
    def test_any_split(chunks):
        fake = FakeProvider()
        fake.reply(*chunks)
        ...
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from agui_replay.errors import InvalidArgumentError

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["by_char", "by_size", "by_word", "chunkings", "split_at"]

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


def chunkings(text: str, *, max_chunks: int | None = None) -> SearchStrategy[list[str]]:
    """A hypothesis strategy: lists of non-empty chunks that join back to ``text``.

    Shrinks towards fewer cuts (the whole text in one chunk).
    """
    try:
        from hypothesis import strategies as st
    except ImportError as exc:
        raise ImportError(
            "chunkings() is a hypothesis strategy and needs hypothesis: install "
            'agui-replay[strategies] (pip install "agui-replay[strategies]")',
            name=exc.name,
        ) from exc

    if len(text) < 2:
        return st.just([text] if text else [])
    limit = len(text) - 1 if max_chunks is None else max(0, min(len(text) - 1, max_chunks - 1))
    cuts = st.lists(st.integers(1, len(text) - 1), max_size=limit, unique=True)
    return cuts.map(lambda cs: split_at(text, cs))
