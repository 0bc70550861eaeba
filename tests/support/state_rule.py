"""The size rule for a StateManager publish, as the state tests check it: nothing when the full
type-strict diff is empty, a delta when its patch is shorter (compact JSON) than the new state,
a snapshot otherwise; and a client rebuilt from what was sent that holds the state."""

from __future__ import annotations

from typing import Any

import orjson

from agui_replay._limits import dumps
from agui_replay.patch import apply_patch, diff
from agui_replay.state import Delta, Snapshot, StateManager, Unchanged


def compact_json(value: Any) -> bytes:
    """The compact JSON a STATE_* event carries, key order kept (the manager's own encoder)."""
    return dumps(value, sort=False)


def strict(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def expected(previous: Any, new: Any) -> type:
    """What the size rule gives, from the full type-strict diff."""
    ops = diff(previous, new)
    if not ops:
        return Unchanged
    return Delta if len(compact_json(ops)) < len(compact_json(new)) else Snapshot


def check(states: StateManager, client: Any, previous: Any, new: Any, exact: bool = False) -> Any:
    """Publish ``new``; assert the rule's outcome and a client that ends with ``new``. A
    delta's patch is as long as the full diff's, or (``exact``) the full diff's very
    operations from what the client holds: the manager and the client applied the same
    operations to the same snapshot, so their objects' keys come in the same order, which a
    change of key order alone (no operation) leaves as it was in both, while ``previous``,
    the caller's copy, has the new order (the removals from one object follow its keys)."""
    before = orjson.loads(orjson.dumps(new))
    result = states.publish(new)
    want = expected(previous, before)
    assert type(result) is want, (want, result)
    if isinstance(result, Delta):
        if exact:
            assert result == Delta(diff(client, before))
        else:
            ops = diff(previous, before)
            assert len(compact_json(result.ops)) == len(compact_json(ops))
        client = apply_patch(client, result.ops)
    elif isinstance(result, Snapshot):
        client = result.value
    assert strict(client) == strict(before)
    assert strict(states.published) == strict(before)
    return client
