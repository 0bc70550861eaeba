"""RFC 6902 JSON Patch: a type-strict ``diff``, an atomic copy-on-write ``apply_patch``, and
for documents you own ``apply_patch_in_place`` (atomic too, through an undo log) and
``diff_in_place`` (the diff that turns one into a new value, with a size limit).

JSON values are the plain Python ones: ``None``, ``bool``, ``int``, ``float`` (finite),
``str``, ``list`` (tuples are read as arrays) and ``dict`` with ``str`` keys. Equality is
JSON-strict: ``1``, ``1.0`` and ``True`` are three different values, nested or not, because
they serialize differently and a client sees the difference.

>>> doc = {"step": 1, "notes": ["a"]}
>>> ops = diff(doc, {"step": 2, "notes": ["a", "b"]})
>>> ops
[{'op': 'replace', 'path': '/step', 'value': 2}, {'op': 'add', 'path': '/notes/1', 'value': 'b'}]
>>> apply_patch(doc, ops)
{'step': 2, 'notes': ['a', 'b']}
>>> doc  # never mutated
{'step': 1, 'notes': ['a']}
>>> json_equal(1, 1.0), json_equal([1], [True])
(False, False)

Documents nested deeper than :data:`MAX_DEPTH` containers are refused with a
:class:`~agui_replay.errors.PatchError`, as are NaN/infinity, non-string keys and objects that
are not JSON values.
"""

from __future__ import annotations

from agui_replay._facades import claim

from .._limits import MAX_DEPTH
from ._apply import apply_patch, apply_patch_in_place
from ._diff import diff, diff_exceeds, diff_in_place
from ._json import json_equal

__all__ = [
    "MAX_DEPTH",
    "apply_patch",
    "apply_patch_in_place",
    "diff",
    "diff_exceeds",
    "diff_in_place",
    "json_equal",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
