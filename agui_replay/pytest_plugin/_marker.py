"""The ``@pytest.mark.agui`` marker's keys, written once: each key's default and how its value
is read; the marker's ``--markers`` line and its parsing both come from this table.

A marker on a test, its class and its module add up; the closest wins per key. A bad value
raises ``pytest.UsageError`` naming the test; the fixtures turn it into that test's failure.
The engine's types (``RecordMode``, ``Fault``) are imported only when a value is read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

MARKER = "agui"


@dataclass(frozen=True)
class _Key:
    default: Any
    """The setting when the marker leaves the key out (``None``: the ini or the command line
    decides); not read, so a test without the key imports nothing for it."""
    read: Callable[[Any, str], Any]
    """``(value, node id) -> setting``; raises ``pytest.UsageError`` on a bad value."""
    shown: str | None = None
    """The default as the ``--markers`` line shows it (``repr(default)`` when not given)."""


def _given(value: Any, nodeid: str) -> Any:
    return value


def _items(value: Any, nodeid: str) -> tuple[Any, ...]:
    return tuple(value)


def _flag(value: Any, nodeid: str) -> bool:
    return bool(value)


def _record_mode(value: Any, nodeid: str) -> Any:
    from agui_replay.errors import RecordModeError
    from agui_replay.recording import RecordMode

    try:
        return RecordMode.parse(value, source=f"@pytest.mark.{MARKER}(record_mode)")
    except RecordModeError as exc:
        raise pytest.UsageError(str(exc)) from None


def _outside(value: Any, nodeid: str) -> bool:
    if not isinstance(value, bool):
        raise pytest.UsageError(
            f"{nodeid}: @pytest.mark.{MARKER}(cassette_outside=...) takes True or False, "
            f"not {value!r}"
        )
    return value


def _normalize(value: Any, nodeid: str) -> tuple[bool, tuple[Any, ...]]:
    """``True``/``False``, or a list of rules (normalization on): ``(on, rules)``."""
    if isinstance(value, bool):
        return value, ()
    if isinstance(value, (list, tuple)):
        return True, tuple(value)
    if callable(value):
        return True, (value,)
    raise pytest.UsageError(
        f"{nodeid}: @pytest.mark.{MARKER}(normalize=...) takes True, False or a list of rules "
        f"(agui_replay.normalize.replace/ignore/blank or callables), not {value!r}"
    )


def _hosts(value: Any, nodeid: str) -> tuple[str, ...]:
    # a host string, a list of them, or a mapping of provider name to host
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Mapping):
        return tuple(f"{name}={host}" for name, host in value.items())
    return tuple(str(v) for v in value)


def _host_list(value: Any, nodeid: str) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(str(v) for v in value)


def _texts(value: Any, nodeid: str) -> tuple[Any, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _rules(value: Any, nodeid: str) -> tuple[Any, ...]:
    # a name, a callable or a list of them
    return (value,) if isinstance(value, str) or callable(value) else tuple(value)


def _generators(value: Any, nodeid: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise pytest.UsageError(
            f"{nodeid}: @pytest.mark.{MARKER}(id_generators=...) takes a list of "
            f"'package.module.function' names, not {value!r}"
        )
    return tuple(value)


def _faults(value: Any, nodeid: str) -> tuple[Any, ...]:
    from agui_replay.faults import Fault

    given = [value] if isinstance(value, Fault) else value
    if isinstance(given, (str, bytes, Mapping)) or not hasattr(given, "__iter__"):
        given = [given]
    faults = tuple(given)
    for i, fault in enumerate(faults):
        if not isinstance(fault, Fault):
            raise pytest.UsageError(
                f"{nodeid}: @pytest.mark.{MARKER}(faults=[...]) item #{i} is "
                f"{type(fault).__name__} {fault!r}; build each fault with agui_replay.faults: "
                "faults.cut(after_chunks=N), faults.status(429), faults.delay(0.5), "
                "faults.malformed(after_chunks=N) or faults.timeout()"
            )
    return faults


KEYS: dict[str, _Key] = {
    "record_mode": _Key(None, _record_mode),
    "cassette": _Key(None, _given),
    "cassette_outside": _Key(False, _outside),
    "upstream": _Key(None, _given),
    "secrets": _Key((), _items),
    "normalize": _Key((True, ()), _normalize, "True"),
    "match": _Key("unordered", _given),
    "freeze_time": _Key(True, _given),
    "hosts": _Key((), _hosts),
    "intercept": _Key(True, _flag),
    "deterministic_ids": _Key(None, _given, "True"),
    "id_generators": _Key((), _generators),
    "record_errors": _Key(False, _flag),
    "ignore_hosts": _Key((), _host_list),
    "drop_hosts": _Key((), _host_list),
    "match_on": _Key(None, _rules),
    "match_ignore": _Key((), _texts),
    "compare_raw": _Key(False, _flag),
    "record_on_failure": _Key(None, _given, "False"),
    "faults": _Key((), _faults),
}

MARKER_DOC = (
    f"{MARKER}("
    + ", ".join(f"{name}={key.shown or repr(key.default)}" for name, key in KEYS.items())
    + "): agui-replay settings for this test; the marker wins over the command line and the "
    "conftest fixtures"
)
"""The marker's line in ``pytest --markers``."""


def marker_kwargs(item: pytest.Item) -> dict[str, Any]:
    """The keys the test's markers give, as written (the closest marker wins per key)."""
    kwargs: dict[str, Any] = {}
    names = ", ".join(KEYS)
    for marker in reversed(list(item.iter_markers(MARKER))):
        if marker.args:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} takes keyword arguments only ({names})"
            )
        unknown = sorted(set(marker.kwargs) - set(KEYS))
        if unknown:
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.{MARKER} got unknown argument(s) "
                f"{', '.join(unknown)}; it takes {names}"
            )
        kwargs.update(marker.kwargs)
    return kwargs


def read_marker(item: pytest.Item, keys: tuple[str, ...] = tuple(KEYS)) -> dict[str, Any]:
    """The settings the marker gives for ``keys``, each read by the table; a key left out (or
    ``None``) is its default. In the table's order, so the first bad value is the one
    reported."""
    given = marker_kwargs(item)
    read: dict[str, Any] = {}
    for name, key in KEYS.items():
        if name in keys:
            value = given.get(name)
            read[name] = key.default if value is None else key.read(value, item.nodeid)
    return read
