"""Shared state: the snapshot-or-delta decision, and typed input-state decoding.

:class:`StateManager` decides, for each value you publish, what the client needs: the whole
state (:class:`Snapshot`), an RFC 6902 patch (:class:`Delta`) or nothing (:class:`Unchanged`).
The rule, against the state published last (the baseline):

1. the first publish (or the first after :meth:`StateManager.reset`) is a :class:`Snapshot`;
2. a state JSON-equal to the baseline (type-strict: ``1``, ``1.0`` and ``True`` differ; key
   order does not count) publishes nothing: :class:`Unchanged`;
3. otherwise the type-strict RFC 6902 diff from the baseline is a :class:`Delta` when its
   compact JSON is strictly shorter, in bytes, than the compact JSON of the new state;
4. otherwise a :class:`Snapshot` (so is a patch the TypeScript client refuses to apply, one
   through ``__proto__``).

``tests/support/state_rule.py`` states the same rule with the full diff, and the state tests check
every publish against it. How the manager gets there faster than that is told in the modules
of this package, one optimisation each (``_lazy``, ``_plain``).

>>> states = StateManager()
>>> notes = "the document the user is editing, at some length"
>>> states.publish({"step": 1, "notes": notes})
Snapshot({'step': 1, 'notes': 'the document the user is editing, at some length'})
>>> states.publish({"step": 2, "notes": notes})
Delta([{'op': 'replace', 'path': '/step', 'value': 2}])
>>> states.publish({"step": 2, "notes": notes})
Unchanged()

:func:`decode_state` turns ``RunAgentInput.state`` into your state type, and
:func:`encode_state` turns a typed state back into JSON.
"""

from __future__ import annotations

from agui_replay._facades import claim

from ._codec import decode_state, encode_state
from ._manager import StateManager
from ._variants import Delta, Snapshot, Unchanged

__all__ = [
    "Delta",
    "Snapshot",
    "StateManager",
    "Unchanged",
    "decode_state",
    "encode_state",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
