"""Stale cassettes through real pytest runs (pytester): ini ``agui_max_age`` and
``agui_on_stale``.

A replayed cassette recorded longer ago than ``agui_max_age`` is listed with its age (warn), fails
the session (fail), or is recorded again with today's date when a provider key is set (record).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.plugin.test_plugin_refresh import CONFTEST, HELLO, TESTS, TWICE, _interaction_text

OLD = "2020-01-01T00:00:00Z"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_OFFLINE", "AGENT_STYLE", "AGENT_PROMPT", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    run(pytester, "--agui-record", "-k", "test_hello").assert_outcomes(passed=1, deselected=1)
    text = HELLO.read_text(encoding="utf-8")
    HELLO.write_text(re.sub(r'"recorded_at": "[^"]*"', f'"recorded_at": "{OLD}"', text))
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-k", "test_hello", *args
    )


def _ini(pytester: pytest.Pytester, **values: str) -> None:
    lines = "\n".join(f"{k} = {v}" for k, v in values.items())
    pytester.makeini(f"[pytest]\n{lines}\n")


def test_a_stale_cassette_is_listed_with_its_age(project: pytest.Pytester) -> None:
    _ini(project, agui_max_age="90d")
    result = run(project)
    result.assert_outcomes(passed=1, deselected=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*stale cassettes: 1 older than agui_max_age (90 days)*",
            "*stale:    cassettes/test_agent/test_hello.json (* days old)*",
        ]
    )


def test_a_young_cassette_or_no_max_age_is_not_stale(project: pytest.Pytester) -> None:
    assert "stale cassettes" not in run(project).stdout.str()  # no agui_max_age: never stale
    _ini(project, agui_max_age="600m")
    assert "stale cassettes" not in run(project).stdout.str()


def test_on_stale_fail_fails_the_session(project: pytest.Pytester) -> None:
    _ini(project, agui_max_age="12w", agui_on_stale="fail")
    result = run(project)
    result.assert_outcomes(passed=1, deselected=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*stale cassettes fail the session (agui_on_stale = fail)*"])


def test_on_stale_record_re_records_with_a_key_and_warns_without(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ini(project, agui_max_age="6m", agui_on_stale="record")
    before = _interaction_text(HELLO)
    run(project).stdout.fnmatch_lines(["*stale:    cassettes/test_agent/test_hello.json*"])
    assert json.loads(HELLO.read_bytes())["recorded_at"] == OLD  # no key: only warned

    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-stale0live0key0abcdef")
    result = run(project)
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*1 cassette(s) recorded*"])
    assert "stale:" not in result.stdout.str()
    assert json.loads(HELLO.read_bytes())["recorded_at"] != OLD  # the date is renewed
    assert _interaction_text(HELLO) == before
    monkeypatch.delenv("OPENAI_API_KEY")
    assert "stale cassettes" not in run(project).stdout.str()


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (
            {"agui_max_age": "90 days"},
            "*ini agui_max_age = '90 days' is not an age: use*90d, 12w, 6m*",
        ),
        (
            {"agui_on_stale": "ignore"},
            "*ini agui_on_stale = 'ignore' is not one of warn, fail, record*",
        ),
    ],
)
def test_bad_values_are_usage_errors(
    project: pytest.Pytester, values: dict[str, str], expected: str
) -> None:
    _ini(project, **values)
    result = run(project)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([expected])


PLUGIN_PAGE = Path(__file__).resolve().parents[2] / "docs" / "plugin.md"


def _page_ini(page: Path) -> str:
    """The ``# file: pytest.ini`` block of the page's stale-cassettes section, as written."""
    section = page.read_text(encoding="utf-8").split("### Stale cassettes", 1)[1]
    block = re.search(r"^```ini\n# file: pytest.ini\n(.*?)^```$", section, flags=re.S | re.M)
    assert block is not None, "plugin.md's stale-cassettes section shows no pytest.ini"
    return block[1]


def test_the_pages_stale_example_says_what_to_run_and_why_it_recorded(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plugin.md's example followed: two tests whose cassettes went stale."""
    for name in ("AGUI_TEST_OFFLINE", "AGENT_STYLE", "AGENT_PROMPT", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TESTS)
    base = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
    pytester.runpytest(*base, "--agui-record").assert_outcomes(passed=2)
    for cassette in (HELLO, TWICE):
        text = cassette.read_text(encoding="utf-8")
        cassette.write_text(re.sub(r'"recorded_at": "[^"]*"', f'"recorded_at": "{OLD}"', text))
    Path("pytest.ini").write_text(_page_ini(PLUGIN_PAGE), encoding="utf-8")

    # no key: listed, with the command that re-records them
    result = pytester.runpytest(*base)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "0 cassette(s) recorded, 2 replayed, 0 unused",
            "stale cassettes: 2 older than agui_max_age (90 days)",
            "  stale:    cassettes/test_agent/test_hello.json (* days old)",
            "  stale:    cassettes/test_agent/test_twice.json (* days old)",
            "re-record them with a provider key set (agui_on_stale = record), e.g. "
            "OPENAI_API_KEY=... pytest test_agent.py::test_hello test_agent.py::test_twice",
        ]
    )

    # the key set: both re-recorded, and the summary says it was for their age
    monkeypatch.setenv("OPENAI_API_KEY", "sk-proj-stale0live0key0abcdef")
    result = pytester.runpytest(*base)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "2 cassette(s) recorded (2 stale, agui_on_stale = record), 0 replayed, 0 unused",
            "  recorded: cassettes/test_agent/test_hello.json (stale, * days old; "
            "agui_on_stale = record)",
            "  recorded: cassettes/test_agent/test_twice.json (stale, * days old; "
            "agui_on_stale = record)",
        ]
    )
    assert "stale:    " not in result.stdout.str()


def test_warn_and_fail_say_to_record_the_stale_tests(project: pytest.Pytester) -> None:
    _ini(project, agui_max_age="90d", agui_on_stale="fail")
    result = run(project)
    result.stdout.fnmatch_lines(
        ["re-record them with `pytest test_agent.py::test_hello --agui-record`*"]
    )
    _ini(project, agui_max_age="90d")
    result = run(project)
    result.stdout.fnmatch_lines(
        ["re-record them with `pytest test_agent.py::test_hello --agui-record`*"]
    )
