"""Deterministic ids at the source: agui_replay.recording._ids.DeterministicIds."""

from __future__ import annotations

import os
import secrets
import sys
import textwrap
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from uuid import uuid4 as imported_uuid4

import pytest

from agui_replay.errors import InvalidArgumentError
from agui_replay.recording._ids import STANDARD_GENERATORS, DeterministicIds

T = TypeVar("T")


def _draw() -> list[object]:
    return [uuid.uuid4(), imported_uuid4(), uuid.uuid1(), uuid.uuid4()]


def _in_run(ids: DeterministicIds, index: int, draw: Callable[[], T]) -> T:
    # Record and replay run the same code: the same call sites. Each test draws through here
    # so that its two runs call the generators from the same lines too.
    with ids.run(index):
        return draw()


def test_each_run_replays_the_same_ids_and_runs_differ() -> None:
    ids = DeterministicIds("cassettes/test_x/test_y.json")
    first, again, second_run = (_in_run(ids, i, _draw) for i in (0, 0, 1))
    assert first == again
    assert first[0] != second_run[0]
    assert len({str(v) for v in first}) == len(first)  # no repeats within a run


def test_another_cassette_gets_other_ids() -> None:
    with DeterministicIds("a.json").run(0):
        a = uuid.uuid4()
    with DeterministicIds("b.json").run(0):
        b = uuid.uuid4()
    assert a != b


def test_the_values_keep_their_uuid_version_and_variant() -> None:
    with DeterministicIds("c.json").run(0):
        v4, v1 = uuid.uuid4(), uuid.uuid1()
    assert (v4.version, v1.version) == (4, 1)
    assert v4.variant == v1.variant == uuid.RFC_4122


def test_outside_a_run_the_generators_are_random_again() -> None:
    ids = DeterministicIds("d.json")
    with ids.run(0):
        inside = uuid.uuid4()
    outside = {uuid.uuid4() for _ in range(3)}
    assert inside not in outside
    assert len(outside) == 3
    assert uuid.uuid4.__code__.co_filename.endswith("uuid.py")  # the real code is back


def test_each_call_site_counts_on_its_own() -> None:
    # A framework that mints an id once per process (a graph built on first use) must not
    # shift the ids the run itself mints.
    def mint() -> uuid.UUID:
        return uuid.uuid4()

    def warm_up() -> uuid.UUID:
        return uuid.uuid4()

    ids = DeterministicIds("e.json")
    cold = _in_run(ids, 0, lambda: (warm_up(), mint())[1])
    warm = _in_run(ids, 0, lambda: (None, mint())[1])
    assert cold == warm


def test_security_randomness_is_never_touched() -> None:
    with DeterministicIds("f.json").run(0):
        tokens = {secrets.token_hex(8) for _ in range(4)}
        raw = {os.urandom(8) for _ in range(4)}
    with DeterministicIds("f.json").run(0):
        tokens_again = {secrets.token_hex(8) for _ in range(4)}
    assert len(tokens) == len(raw) == 4
    assert tokens.isdisjoint(tokens_again)


def test_a_python_helper_named_by_the_user_keeps_its_shape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_ids.py").write_text(
        textwrap.dedent(
            """
            import os

            def new_call_id(prefix="af-call-"):
                return prefix + os.urandom(16).hex()
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_ids  # type: ignore[import-not-found]
    from my_ids import new_call_id as imported_copy  # type: ignore[import-not-found]

    ids = DeterministicIds("g.json", ["my_ids.new_call_id"])

    def draw() -> list[str]:
        return [my_ids.new_call_id(), imported_copy(prefix="x-")]

    a, b = _in_run(ids, 0, draw), _in_run(ids, 0, draw)
    assert a == b
    assert a[0].startswith("af-call-")
    assert len(a[0]) == len("af-call-") + 32
    assert all(c in "0123456789abcdef" for c in a[0][len("af-call-") :])
    assert my_ids.new_call_id() != my_ids.new_call_id()  # random again after the run
    sys.modules.pop("my_ids", None)


def test_a_builtin_generator_is_replaced_wherever_it_is_referenced() -> None:
    uuid_utils = pytest.importorskip("uuid_utils")
    ids = DeterministicIds("h.json", ["uuid_utils.uuid4"])

    def draw() -> object:
        return uuid_utils.uuid4()  # looked up at call time: the run's replacement

    a, b = _in_run(ids, 0, draw), _in_run(ids, 0, draw)
    assert str(a) == str(b)
    assert uuid_utils.uuid4() != uuid_utils.uuid4()


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("uuid4", "not a dotted name"),
        ("no_such_module_here.fn", "cannot import"),
        ("uuid.no_such_function", "names no function"),
    ],
)
def test_a_bad_generator_name_is_refused_naming_it(name: str, said: str) -> None:
    with pytest.raises(InvalidArgumentError, match=said):
        DeterministicIds("i.json", [name])


def test_the_standard_generators_are_the_ones_python_has() -> None:
    assert "uuid.uuid4" in STANDARD_GENERATORS
    assert "uuid.uuid1" in STANDARD_GENERATORS
    assert ("uuid.uuid7" in STANDARD_GENERATORS) == hasattr(uuid, "uuid7")


def test_a_loaded_module_that_takes_no_weak_reference_is_passed_over() -> None:
    # cffi's compiled libraries register a module object in sys.modules that cannot be
    # weakly referenced (zstandard's, once something imports it): reading the loaded modules
    # for references to a builtin generator must step over it, not fail the run.
    pytest.importorskip("zstandard._cffi")
    uuid_utils = pytest.importorskip("uuid_utils")
    assert any(type(module).__name__ == "Lib" for module in list(sys.modules.values()))
    ids = DeterministicIds("lib.json", ["uuid_utils.uuid4"])

    def draw() -> object:
        return uuid_utils.uuid4()

    assert str(_in_run(ids, 0, draw)) == str(_in_run(ids, 0, draw))
