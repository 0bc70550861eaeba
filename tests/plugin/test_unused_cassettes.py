"""What "unused" means, one definition for the listing, ``--agui-fail-on-unused`` and
``--agui-prune-unused`` (pytester, as a user meets it).

The story: the front-end how-to (docs/howto/test-your-front-end.md) writes a cassette with a
script, under ``cassettes/``, and its pytest run serves it. No test of the plugin recorded that
file, so it is no test's to lose: it is never listed unused, never fails the session, never
pruned. A cassette the plugin recorded for a test that is gone (a renamed test, a deleted
module when the whole suite runs) is unused, fails the session under
``--agui-fail-on-unused`` and is deleted by ``--agui-prune-unused``: the three agree.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import httpx  # noqa: F401  (imported once here: pytester drops modules first imported inside)
import openai  # noqa: F401
import pytest

import agui_replay.recording  # noqa: F401
from tests.plugin.test_plugin_modes import CONFTEST, HELLO, TEST_AGENT
from tests.support.pytester_run import run

PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "test-your-front-end.md"
SCRIPTED = Path("cassettes", "test_deploy", "test_approve.json")


def page_blocks(page: Path) -> list[str]:
    """The page's ```` ```python ```` blocks, as written."""
    text = page.read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


@pytest.fixture
def front_end(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The how-to followed literally: its recording script run in a fresh folder, its conftest
    and test written."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    script, *blocks = page_blocks(PAGE)
    exec(compile(script, str(PAGE), "exec"), {"__name__": "front_end_script"})
    assert SCRIPTED.exists()
    # the page's first front end: its conftest and its one test (the later sections play a
    # conversation and loop over faults, with files of their own)
    wanted = ("# file: conftest.py", "# file: test_front_end.py")
    files = [block for block in blocks if block.startswith(wanted)]
    assert [block.partition("\n")[0] for block in files] == list(wanted)
    for block in files:
        first, _, body = block.partition("\n")
        Path(first.removeprefix("# file: ")).write_text(body, encoding="utf-8")
    return pytester


def test_a_cassette_a_script_wrote_is_no_tests_and_never_unused(
    front_end: pytest.Pytester,
) -> None:
    for flags in ((), ("--agui-fail-on-unused",), ("--agui-prune-unused",)):
        result = run(front_end, *flags)
        result.assert_outcomes(passed=1)
        assert result.ret == pytest.ExitCode.OK, flags
        assert "unused:" not in result.stdout.str()
        assert "delete them by hand" not in result.stdout.str()
        assert SCRIPTED.exists()


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AGUI_TEST_TAG", "AGUI_TEST_NO_UPSTREAM", "AGUI_TEST_RUNS", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TEST_AGENT)
    run(pytester, "--agui-record").assert_outcomes(passed=2)
    return pytester


def _recorded_for(project: pytest.Pytester, nodeid: str, *parts: str) -> Path:
    """A cassette the plugin recorded for the test ``nodeid``, at ``cassettes/<parts>``."""
    data = json.loads((project.path / HELLO).read_bytes())
    data["name"] = nodeid
    target = project.path.joinpath("cassettes", *parts)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data), encoding="utf-8")
    return target


def test_listing_failing_and_pruning_agree_on_a_deleted_modules_cassette(
    project: pytest.Pytester,
) -> None:
    gone = _recorded_for(project, "test_gone.py::test_x", "test_gone", "test_x.json")
    renamed = _recorded_for(project, "test_agent.py::test_old", "test_agent", "test_old.json")
    # a collected module's cassette left at another place (a packaged module's former one)
    moved = _recorded_for(project, "test_agent.py::test_hello", "former", "test_hello.json")

    listed = run(project)
    listed.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 2 replayed, 3 unused*",
            "*unused:   cassettes/former/test_hello.json*",
            "*unused:   cassettes/test_agent/test_old.json*",
            "*unused:   cassettes/test_gone/test_x.json*",
            "*delete unused cassettes with --agui-prune-unused*",
        ]
    )
    failed = run(project, "--agui-fail-on-unused")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED

    pruned = run(project, "--agui-prune-unused", "--agui-fail-on-unused")
    pruned.assert_outcomes(passed=2)
    assert pruned.ret == pytest.ExitCode.OK
    pruned.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 2 replayed, 0 unused, 3 deleted*",
            "*deleted:  cassettes/former/test_hello.json (unused; --agui-prune-unused)*",
            "*deleted:  cassettes/test_agent/test_old.json (unused; --agui-prune-unused)*",
            "*deleted:  cassettes/test_gone/test_x.json (unused; --agui-prune-unused)*",
        ]
    )
    assert "by hand" not in pruned.stdout.str()
    assert not gone.exists()
    assert not gone.parent.exists()  # the folder it left empty
    assert not renamed.exists()
    assert not moved.exists()
    assert (project.path / HELLO).exists()


def test_a_cassette_whose_test_module_is_on_disk_but_not_collected_is_kept(
    project: pytest.Pytester,
) -> None:
    """``testpaths`` leaves a folder of tests out of the whole suite: their cassettes are not
    known to be unused, so none is listed, failed on, or deleted."""
    project.path.joinpath("slow").mkdir()
    project.path.joinpath("slow", "test_slow.py").write_text(
        textwrap.dedent(
            """
            def test_lisbon(agui):
                pass
            """
        )
    )
    kept = _recorded_for(project, "slow/test_slow.py::test_lisbon", "test_slow", "test_lisbon.json")
    project.makeini("[pytest]\ntestpaths = test_agent.py\n")
    result = run(project, "--agui-prune-unused", "--agui-fail-on-unused")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert "test_lisbon" not in result.stdout.str()
    assert kept.exists()
