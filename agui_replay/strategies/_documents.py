"""The JSON-level strategies of :mod:`agui_replay.strategies`: values, documents, mutations,
re-chunked text. Importing this module imports ``hypothesis``; use it through
:mod:`agui_replay.strategies`, which re-exports every public name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from hypothesis import strategies as st

from agui_replay.errors import InvalidArgumentError

__all__ = [
    "AWKWARD_KEYS",
    "MAX_SAFE_INTEGER",
    "chunk_splits",
    "json_documents",
    "json_keys",
    "json_scalars",
    "json_values",
    "mutation_sequences",
    "mutations",
    "resplit",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""Integers beyond this do not survive a JavaScript client, so they are not generated."""

AWKWARD_KEYS: tuple[str, ...] = (
    "",
    "~",
    "/",
    "~0",
    "~1",
    "~01",
    "0",
    "01",
    "1",
    "-",
    "a/b",
    "m~n",
    " ",
    "1e2",
    "é",
    "e\u0301",
    "键",
    "🙂",
    "__proto__",
)
"""Object keys that trip JSON Pointer escaping (``~``, ``/``), array-index look-alikes and
unicode normalization."""

# -- JSON -----------------------------------------------------------------------------------


def json_keys() -> st.SearchStrategy[str]:
    """Object keys: the :data:`AWKWARD_KEYS` half the time, short unicode text otherwise."""
    return st.one_of(st.sampled_from(AWKWARD_KEYS), st.text(max_size=6))


def json_scalars() -> st.SearchStrategy[Any]:
    """``null``, booleans, integers (JS-safe), finite floats and unicode strings.

    ``0``, ``1``, ``0.0``, ``1.0``, ``-0.0``, ``true`` and ``false`` come up often, because
    Python's ``==`` confuses them and JSON does not.
    """
    return st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from([0, 1, 0.0, 1.0, -0.0, 2, 2.0]),
        st.integers(min_value=-MAX_SAFE_INTEGER, max_value=MAX_SAFE_INTEGER),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=12),
    )


def _width(max_depth: int, max_leaves: int) -> int:
    """The largest container length w with w ** max_depth <= max_leaves (at least 1)."""
    width = 1
    while (width + 1) ** max_depth <= max_leaves:
        width += 1
    return width


def json_values(*, max_depth: int = 3, max_leaves: int = 64) -> st.SearchStrategy[Any]:
    """Any JSON value, nested at most ``max_depth`` containers deep, with at most
    ``max_leaves`` scalars (each list or object holds at most ``max_leaves ** (1/max_depth)``
    items).

    >>> from hypothesis import given
    >>> @given(json_values(max_depth=1, max_leaves=3))
    ... def test(value): assert not isinstance(value, list) or len(value) <= 3
    >>> test()
    """
    if max_depth < 0 or max_leaves < 1:
        raise InvalidArgumentError("json_values needs max_depth >= 0 and max_leaves >= 1")
    scalars = json_scalars()
    if max_depth == 0:
        return scalars
    width = _width(max_depth, max_leaves)
    keys = json_keys()
    value = scalars
    for _ in range(max_depth):
        value = st.one_of(
            scalars,
            st.lists(value, max_size=width),
            st.dictionaries(keys, value, max_size=width),
        )
    return value


def json_documents(
    *, max_depth: int = 3, max_leaves: int = 64
) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object (the usual shape of an agent's state) of :func:`json_values`."""
    if max_depth < 1:
        raise InvalidArgumentError("json_documents needs max_depth >= 1")
    width = _width(max_depth, max_leaves)
    inner = json_values(max_depth=max_depth - 1, max_leaves=max(1, max_leaves // width))
    return st.dictionaries(json_keys(), inner, max_size=width)


# -- mutations ------------------------------------------------------------------------------

Path = tuple[Any, ...]


def _copy(value: Any) -> Any:
    try:
        return orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        import copy

        return copy.deepcopy(value)


def _nodes(doc: Any) -> list[tuple[Path, Any]]:
    """Every node of a document with its path, root first (iterative: no recursion limit)."""
    out: list[tuple[Path, Any]] = []
    stack: list[tuple[Path, Any]] = [((), doc)]
    while stack:
        path, node = stack.pop()
        out.append((path, node))
        if isinstance(node, list):
            stack.extend(((*path, i), child) for i, child in enumerate(node))
        elif isinstance(node, dict):
            stack.extend(((*path, k), child) for k, child in node.items())
    out.sort(key=lambda item: len(item[0]))
    return out


def _get(doc: Any, path: Path) -> Any:
    for part in path:
        doc = doc[part]
    return doc


def _set(doc: Any, path: Path, value: Any) -> Any:
    """``doc`` with the node at ``path`` replaced (in place below the root; returns the root)."""
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _type_twins(value: Any) -> list[Any]:
    """Values of another JSON type that Python may think equal or that look alike."""
    if isinstance(value, bool):
        return [int(value), float(value), None, "true" if value else "false", [value]]
    if isinstance(value, int):
        twins: list[Any] = [str(value), None, [value]]
        if abs(value) <= MAX_SAFE_INTEGER:
            twins.append(float(value))
        if value in (0, 1):
            twins.append(bool(value))
        return twins
    if isinstance(value, float):
        twins = [repr(value), None]
        if value.is_integer() and abs(value) <= MAX_SAFE_INTEGER:
            twins.append(int(value))
            if value in (0.0, 1.0):
                twins.append(bool(value))
        return twins
    if value is None:
        return [0, 0.0, False, "", [], {}]
    if isinstance(value, str):
        return [None, [value], {value: value}, len(value)]
    if isinstance(value, list):
        # A list turned into an object with digit keys looks the same to a JSON Pointer.
        return [{str(i): v for i, v in enumerate(value)}, None, *value[:1]]
    if isinstance(value, dict):
        return [list(value.values()), None, *list(value.values())[:1]]
    return [None]


@st.composite
def mutations(
    draw: st.DrawFn,
    doc: Any,
    *,
    values: st.SearchStrategy[Any] | None = None,
    allow_root_replace: bool = False,
) -> Any:
    """A copy of ``doc`` with one random change (``doc`` itself is never modified).

    Changes: insert / remove / move / replace an item of a list; add / remove / rename /
    change a key of an object; change a node's type (``1`` -> ``1.0`` -> ``true`` -> ``"1"``,
    list -> object with digit keys, ...). New values come from ``values`` (default: small
    :func:`json_values`). The root is replaced only with ``allow_root_replace``.
    """
    values = values if values is not None else json_values(max_depth=2, max_leaves=9)
    new = _copy(doc)
    nodes = _nodes(new)
    candidates = [n for n in nodes if n[0] or allow_root_replace or isinstance(n[1], (list, dict))]
    if not candidates:
        # A scalar root that may not be replaced: nothing to change.
        return new
    path, node = draw(st.sampled_from(candidates))
    ops: list[str] = []
    if path or allow_root_replace:
        ops += ["replace", "retype"]
    if isinstance(node, list):
        ops += ["insert"] + (["remove"] if node else []) + (["move"] if len(node) > 1 else [])
    elif isinstance(node, dict):
        ops += ["add"] + (["delete", "rename"] if node else [])
    op = draw(st.sampled_from(ops))
    if op == "replace":
        return _set(new, path, draw(values))
    if op == "retype":
        return _set(new, path, _copy(draw(st.sampled_from(_type_twins(node)))))
    if isinstance(node, list):
        if op == "insert":
            node.insert(draw(st.integers(0, len(node))), draw(values))
        elif op == "remove":
            del node[draw(st.integers(0, len(node) - 1))]
        else:
            item = node.pop(draw(st.integers(0, len(node) - 1)))
            node.insert(draw(st.integers(0, len(node))), item)
        return new
    assert isinstance(node, dict)
    if op == "add":
        node[draw(json_keys())] = draw(values)
    elif op == "delete":
        del node[draw(st.sampled_from(sorted(node)))]
    else:
        old = draw(st.sampled_from(sorted(node)))
        node[draw(json_keys())] = node.pop(old)
    return new


@st.composite
def mutation_sequences(
    draw: st.DrawFn,
    doc_strategy: st.SearchStrategy[Any] | None = None,
    *,
    max_steps: int = 8,
    allow_root_replace: bool = False,
) -> list[Any]:
    """Successive full documents: a start from ``doc_strategy`` (default
    :func:`json_documents`), then each step one to three :func:`mutations` of the previous
    document, an unchanged copy, or now and then an unrelated new document."""
    docs = doc_strategy if doc_strategy is not None else json_documents()
    current = draw(docs)
    sequence = [current]
    for _ in range(draw(st.integers(0, max_steps))):
        how = draw(st.sampled_from(["mutate", "mutate", "mutate", "mutate", "same", "fresh"]))
        if how == "same":
            current = _copy(current)
        elif how == "fresh":
            current = draw(docs)
        else:
            for _ in range(draw(st.integers(1, 3))):
                current = draw(mutations(current, allow_root_replace=allow_root_replace))
        sequence.append(current)
    return sequence


# -- text re-chunking -----------------------------------------------------------------------


@st.composite
def chunk_splits(
    draw: st.DrawFn, text: str, *, max_chunks: int | None = None, allow_empty: bool = False
) -> list[str]:
    """Ways to cut ``text`` into consecutive pieces (joined, they give ``text`` back).

    Cuts fall between code points, so a grapheme (an emoji with a modifier, a letter with a
    combining accent) may be split, as providers do. ``allow_empty`` adds empty pieces, which
    AG-UI allows as deltas. ``""`` splits into ``[]`` (or empty pieces).
    """
    n = len(text)
    limit = max_chunks if max_chunks is not None else max(1, n) + (3 if allow_empty else 0)
    if limit < 1:
        raise InvalidArgumentError("max_chunks must be at least 1")
    if allow_empty:
        cuts = draw(st.lists(st.integers(0, n), max_size=limit - 1))
        cuts.sort()
    else:
        if n == 0:
            return []
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=limit - 1))) if n > 1 else []
    pieces = []
    start = 0
    for cut in cuts:
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def resplit(
    chunks: Sequence[str], *, max_chunks: int | None = None, allow_empty: bool = False
) -> st.SearchStrategy[list[str]]:
    """Other chunkings of the same text: :func:`chunk_splits` of ``"".join(chunks)``."""
    return chunk_splits("".join(chunks), max_chunks=max_chunks, allow_empty=allow_empty)
