"""The plugin's parts without a pytest run: the ledger xdist workers merge, the marker's key
table, and the settings value a test's cassette session is built from."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections import Counter
from dataclasses import dataclass, field

import pytest

from agui_replay.pytest_plugin._ledger import Ledger
from agui_replay.pytest_plugin._marker import KEYS, MARKER_DOC
from agui_replay.pytest_plugin._settings import CassetteSettings
from agui_replay.recording import CassetteSession


def _filled(tag: str) -> Ledger:
    """A ledger with every field set (a set holds ``tag``), whatever its fields are."""
    ledger = Ledger()
    for f in dataclasses.fields(ledger):
        value = getattr(ledger, f.name)
        if isinstance(value, bool):
            setattr(ledger, f.name, True)
        elif isinstance(value, Counter):
            setattr(ledger, f.name, Counter({f"{f.name}:{tag}": 1}))
        else:
            setattr(ledger, f.name, {f"{f.name}:{tag}"})
    return ledger


def test_a_ledger_survives_the_trip_from_a_worker_to_the_controller() -> None:
    sent = json.loads(json.dumps(_filled("w1").to_json()))
    controller = Ledger()
    controller.merge(sent)
    assert controller == _filled("w1")


def test_merged_ledgers_add_up_field_by_field() -> None:
    controller = _filled("w1")
    controller.merge(_filled("w2").to_json())
    controller.merge(Ledger().to_json())  # a worker that ran nothing changes nothing
    for f in dataclasses.fields(controller):
        value = getattr(controller, f.name)
        both = {f"{f.name}:w1", f"{f.name}:w2"}
        assert value is True or value in (both, Counter(both)), f.name


@dataclass
class _Counting(Ledger):
    runs: list[str] = field(default_factory=list)
    chunks: Counter[str] = field(default_factory=Counter)


def test_lists_extend_and_counters_add_when_merged() -> None:
    controller = _Counting(runs=["a"], chunks=Counter(a=2))
    controller.merge(_Counting(runs=["b"], chunks=Counter(a=1, b=1)).to_json())
    assert controller.runs == ["a", "b"]
    assert controller.chunks == Counter(a=3, b=1)


def test_a_field_without_a_merge_rule_is_refused() -> None:
    @dataclass
    class Odd(Ledger):
        count: int = 0

    with pytest.raises(TypeError, match="a Ledger field holds int, which has no merge rule"):
        Odd().merge({"count": 1})


def test_the_markers_line_shows_every_key_of_the_table_with_its_default() -> None:
    signature = MARKER_DOC.partition("(")[2].partition("):")[0]
    shown = [part.partition("=")[0] for part in signature.split(", ")]
    assert shown == list(KEYS)
    assert "normalize=True" in signature  # the default as a user writes it, not as read
    assert "deterministic_ids=True" in signature  # an ini-backed key: the ini's default
    assert MARKER_DOC.startswith("agui(record_mode=None, cassette=None, ")


def _required(f: dataclasses.Field[object]) -> bool:
    return f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING


def test_every_setting_handed_on_is_a_keyword_of_the_cassette_session() -> None:
    keywords = {
        name
        for name, param in inspect.signature(CassetteSession).parameters.items()
        if param.kind is inspect.Parameter.KEYWORD_ONLY
    }
    required = [f.name for f in dataclasses.fields(CassetteSettings) if _required(f)]
    settings = CassetteSettings(**dict.fromkeys(required, ()))
    handed = settings.session_options()
    assert set(handed) <= keywords
    assert "record_on_failure" not in handed  # the plugin's own
    assert handed["keep_pending"] is True
    assert handed["secrets"] == []  # sequences go as lists, as the session has always had them
