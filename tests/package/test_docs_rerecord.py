"""What docs/frameworks.md says a re-record does, done with the page's own project.

The page's "Record, replay, re-record" section makes claims about re-recording against a model
that draws new ids, and against one that answers the same in new chunks. Each claim is quoted
here (so an edit of the sentence fails this test until the claim is checked again) and done: the
page's conftest, apps and tests in a fresh folder, recorded against the page's stand-in, then
re-recorded against the same stand-in (new random ids) and against one that cuts its answer
into other pieces.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

# Imported once here: pytester drops the modules first imported inside its runs (a FastAPI app
# built by a module imported twice answers 307 to the other copy's routes).
pytest.importorskip("ag_ui_langgraph")
pytest.importorskip("langchain_openai")
pytest.importorskip("pydantic_ai")
import fastapi  # noqa: F401
import langgraph.graph  # noqa: F401
import pydantic_ai.ui.ag_ui  # noqa: F401

from tests.package.test_docs import extract_blocks

PAGE = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
FILES = ("conftest.py", "langgraph_app.py", "test_langgraph.py")
FILES += ("pydantic_ai_app.py", "test_pydantic_ai.py")
ARGS = ("-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest")

# What the page claims, in its words (whitespace aside).
NEW_IDS_AT_THE_TOP = (
    "so a re-record against a provider that answered the same leaves the cassette's events and "
    "your snapshots unchanged"
)
NEW_IDS = (
    "Re-recording draws new provider ids: the events stored in the cassettes and the snapshots "
    "stay as they were"
)
SNAPSHOT_FAILS = (
    "`agui_snapshot` holds every event, so the tests above fail the re-record, naming the first "
    "event that changed (with pydantic-ai, `TOOL_CALL_ARGS`, field `/delta`), and the cassette "
    "keeps the old recording"
)
FOLDED_HOLDS = (
    "with it the re-record passes and the cassette takes the new events. It holds only where no "
    "other event carries the chunks: ag-ui-langgraph copies each chunk into a `RAW` event and "
    "into the `rawEvent` field of the events it makes from it, unless the agent is built with "
    "`LangGraphAgent(..., emit_raw_events=False)`"
)


def _page_files() -> dict[str, str]:
    blocks = {b.file: b.text.split("\n", 1)[1] for b in extract_blocks(PAGE) if b.file}
    return {name: blocks[name] for name in FILES}


def _replaced(text: str, old: str, new: str) -> str:
    assert old in text, f"the page no longer has {old!r}: update this test"
    return text.replace(old, new)


def _rechunked(conftest: str) -> str:
    """The page's stand-in, answering the same in other pieces."""
    conftest = _replaced(conftest, "arguments[:10]", "arguments[:4]")
    conftest = _replaced(conftest, "arguments[10:]", "arguments[4:]")
    return _replaced(
        conftest,
        "yield f\"Done: {last['content']}\"",
        'yield "Do"\n        yield f"ne: {last[\'content\']}"',
    )


def _folded(files: dict[str, str], *, raw_events: bool = True) -> dict[str, str]:
    files = dict(files)
    for test in ("test_langgraph.py", "test_pydantic_ai.py"):
        files[test] = _replaced(files[test], "agui_snapshot", "agui_folded_snapshot")
    if not raw_events:
        files["langgraph_app.py"] = _replaced(
            files["langgraph_app.py"], 'name="weather",', 'name="weather", emit_raw_events=False,'
        )
    return files


class Project:
    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester

    def write(self, files: dict[str, str]) -> None:
        for name, text in files.items():
            (self.pytester.path / name).write_text(text, encoding="utf-8")

    def run(self, *args: str) -> pytest.RunResult:
        return self.pytester.runpytest(*ARGS, "--agui-record", *args)

    def snapshots(self) -> dict[str, bytes]:
        return {
            p.relative_to(self.pytester.path).as_posix(): p.read_bytes()
            for p in sorted((self.pytester.path / "__snapshots__").rglob("*.jsonl"))
        }

    def events(self, framework: str) -> list[Any]:
        cassette = self.pytester.path / "cassettes" / f"test_{framework}" / "test_weather.json"
        return [run["events"] for run in json.loads(cassette.read_text())["runs"]]


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.dont_write_bytecode", True)  # files rewritten within a second
    pytester.syspathinsert()
    return Project(pytester)


def test_the_page_says_what_a_re_record_does() -> None:
    text = " ".join(PAGE.read_text(encoding="utf-8").split())
    for claim in (NEW_IDS_AT_THE_TOP, NEW_IDS, SNAPSHOT_FAILS, FOLDED_HOLDS):
        assert claim in text, f"docs/frameworks.md no longer says: {claim}"


def test_new_ids_leave_the_cassettes_and_the_snapshots_as_they_were(project: Project) -> None:
    project.write(_page_files())
    project.run("--snapshot-update").assert_outcomes(passed=2)
    snapshots = project.snapshots()
    events = {f: project.events(f) for f in ("langgraph", "pydantic_ai")}
    project.run().assert_outcomes(passed=2)
    assert project.snapshots() == snapshots
    assert {f: project.events(f) for f in events} == events


def test_new_chunks_fail_agui_snapshot_and_keep_the_cassette(project: Project) -> None:
    files = _page_files()
    project.write(files)
    project.run("--snapshot-update").assert_outcomes(passed=2)
    events = {f: project.events(f) for f in ("langgraph", "pydantic_ai")}
    project.write({"conftest.py": _rechunked(files["conftest.py"])})
    rerecorded = project.run()
    rerecorded.assert_outcomes(failed=2)
    rerecorded.stdout.fnmatch_lines(
        ["*event streams differ at event #* (TOOL_CALL_ARGS): field /delta*"]
    )
    assert {f: project.events(f) for f in events} == events


@pytest.mark.parametrize("raw_events", [True, False], ids=["raw-events", "no-raw-events"])
def test_new_chunks_keep_agui_folded_snapshot(project: Project, raw_events: bool) -> None:
    files = _folded(_page_files(), raw_events=raw_events)
    project.write(files)
    project.run("--snapshot-update").assert_outcomes(passed=2)
    snapshots = project.snapshots()
    events = project.events("pydantic_ai")
    project.write({"conftest.py": _rechunked(files["conftest.py"])})
    rerecorded = project.run()
    if raw_events:  # ag-ui-langgraph's RAW events carry the chunks
        rerecorded.assert_outcomes(passed=1, failed=1)
        rerecorded.stdout.fnmatch_lines(["*FAILED test_langgraph.py::test_weather*"])
        assert re.search(r"differ at event #\d+ \(RAW\)", rerecorded.stdout.str())
    else:
        rerecorded.assert_outcomes(passed=2)
    assert project.snapshots() == snapshots
    # The cassette took the new events: the arguments in other pieces.
    assert project.events("pydantic_ai") != events
    project.pytester.runpytest(*ARGS).assert_outcomes(passed=2)  # and it replays
