"""One error tree: every public exception is defined in agui_replay.errors and drawn there."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import agui_replay.errors as errors
from agui_replay.errors import AguiReplayError
from agui_replay.server import CancellationToken, run_agent_sync, run_input

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = [getattr(errors, name) for name in errors.__all__]


def _public_modules() -> list[str]:
    names = []
    for path in sorted((ROOT / "agui_replay").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts) and "cli" not in parts:
            names.append(".".join(parts))
    return names


def _exception_classes_defined_outside_errors() -> list[str]:
    """Exception classes that a public module exports but another module defines."""
    found = []
    for name in _public_modules():
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            value = getattr(module, attr)
            exception = inspect.isclass(value) and issubclass(value, BaseException)
            if exception and value.__module__ != "agui_replay.errors":
                found.append(f"{name}.{attr} (defined in {value.__module__})")
    return found


def test_every_public_exception_is_defined_in_errors() -> None:
    assert _exception_classes_defined_outside_errors() == []
    assert all(cls.__module__ == "agui_replay.errors" for cls in PUBLIC)


def test_exceptions_are_imported_from_errors_alone() -> None:
    # One rule for every unit: an exception is imported from agui_replay.errors, whichever unit
    # raises it; no other facade lists one.
    exported = [
        f"{name}.{attr}"
        for name in _public_modules()
        if name != "agui_replay.errors"
        for attr in getattr(importlib.import_module(name), "__all__", [])
        if inspect.isclass(value := getattr(importlib.import_module(name), attr))
        and issubclass(value, BaseException)
    ]
    assert exported == []


@pytest.mark.parametrize(
    ("facade", "name"),
    [
        ("agui_replay.verify", "SchemaViolation"),
        ("agui_replay.client", "EventPatchError"),
        ("agui_replay.recording", "MissingCassetteError"),
        ("agui_replay.recording", "ReplayMismatchError"),
    ],
)
def test_an_exception_a_facade_used_to_export_still_imports_with_a_warning(
    facade: str, name: str
) -> None:
    module = importlib.import_module(facade)
    with pytest.warns(DeprecationWarning, match=f"import {name} from agui_replay.errors"):
        value = getattr(module, name)
    assert value is getattr(errors, name)
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        module.Nothing  # noqa: B018


def test_every_public_exception_is_an_agui_replay_error() -> None:
    assert [cls.__name__ for cls in PUBLIC if not issubclass(cls, AguiReplayError)] == []


@pytest.mark.parametrize(
    "drawing",
    [errors.__doc__ or "", (ROOT / "docs/reference/errors.md").read_text(encoding="utf-8")],
    ids=["docstring", "reference page"],
)
def test_the_drawn_tree_names_every_class_under_its_parent(drawing: str) -> None:
    lines = [line for line in drawing.splitlines() if "── " in line]
    drawn = {line.split("── ", 1)[1].split()[0] for line in lines}
    assert drawn | {"AguiReplayError"} == set(errors.__all__)
    # each drawn child sits under a parent that it really derives from
    base = min(line.index("── ") for line in lines)
    parents: list[str] = ["AguiReplayError"]
    for line in lines:
        depth = (line.index("── ") - base) // 4
        name = line.split("── ", 1)[1].split()[0]
        parents = parents[: depth + 1]
        assert issubclass(getattr(errors, name), getattr(errors, parents[-1])), line
        parents.append(name)


def test_an_agents_except_exception_cannot_swallow_a_cancellation() -> None:
    reached_after = []

    def agent(ctx) -> None:  # type: ignore[no-untyped-def]
        ctx.cancellation.cancel()  # as a client disconnect would
        try:
            ctx.say("never sent")
        except Exception:  # an over-broad handler in agent code
            reached_after.append("swallowed")
        reached_after.append("went on")

    events = run_agent_sync(agent, run_input("t", "r"), cancellation=CancellationToken())
    assert reached_after == []
    assert [(event.type.value, getattr(event, "code", None)) for event in events] == [
        ("RUN_STARTED", None),
        ("RUN_ERROR", "CANCELLED"),
    ]


def test_the_driver_signature_still_takes_a_cancellation_token() -> None:
    assert "cancellation" in inspect.signature(run_agent_sync).parameters
