"""Cassette paths through real pytest runs (pytester): contained, validated, short enough, tidy.

Each guards against a failure these paths once had: ``cassette="../../x"`` and absolute paths
wrote outside the cassette folder; a bad marker value was an INTERNALERROR that aborted the
session; over-long names failed with a raw ``OSError [Errno 36]``; a killed recording's
temporary files stayed for ever.
"""

from __future__ import annotations

import os
import textwrap
import time
from pathlib import Path

import pytest

import agui_replay.recording  # noqa: F401  (imported here: pytester drops modules first imported inside)
from agui_replay._files import (
    MAX_NAME_BYTES,
    atomic_write_text,
    contained_cassette_path,
    fit_file_name,
    is_temp_file,
    safe_file_name,
)
from agui_replay.errors import InvalidArgumentError
from tests.support.pytester_run import run

AGENT = textwrap.dedent(
    """
    import pytest

    def agent(ctx):
        ctx.say("hi")

    def test_fine(agui):
        assert agui.run(agent)[-1]["type"] == "RUN_FINISHED"
    """
)


def project(pytester: pytest.Pytester, test: str) -> pytest.Pytester:
    pytester.makepyfile(test_cases=AGENT + textwrap.dedent(test))
    return pytester


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


# --- contained in the cassette folder ----------------------------------------------------------


def test_dot_dot_leaving_the_folder_fails_that_test_and_writes_nothing(
    pytester: pytest.Pytester,
) -> None:
    project(
        pytester,
        """
        @pytest.mark.agui(cassette="../../escaped")
        def test_escape(agui):
            agui.run(agent)
        """,
    )
    before = files(pytester.path.parent)
    result = run(pytester, "--agui-record")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_escape*@pytest.mark.agui(cassette='../../escaped') leaves the cassette folder*"
            "cassette_outside=True*"
        ]
    )
    written = files(pytester.path.parent) - before
    assert {Path(p).name for p in written if p.endswith(".json")} == {"test_fine.json"}
    assert all(p.startswith(f"{pytester.path.name}/cassettes/") for p in written if ".json" in p)


def test_dot_dot_that_stays_inside_is_fine(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        """
        @pytest.mark.agui(cassette="shared/../kept/here")
        def test_inside(agui):
            agui.run(agent)
        """,
    )
    run(pytester, "--agui-record").assert_outcomes(passed=2)
    assert (pytester.path / "cassettes/kept/here.json").is_file()
    run(pytester).assert_outcomes(passed=2)


def test_an_absolute_path_fails_unless_opted_in(pytester: pytest.Pytester, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "abs"
    project(
        pytester,
        f"""
        @pytest.mark.agui(cassette={str(outside)!r})
        def test_absolute(agui):
            agui.run(agent)

        @pytest.mark.agui(cassette={str(outside) + "-ok"!r}, cassette_outside=True)
        def test_absolute_opted_in(agui):
            agui.run(agent)

        @pytest.mark.agui(cassette="../beside", cassette_outside=True)
        def test_dot_dot_opted_in(agui):
            agui.run(agent)
        """,
    )
    result = run(pytester, "--agui-record")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*test_absolute*is an absolute path*cassette_outside=True*"])
    assert not outside.with_suffix(".json").exists()
    assert Path(str(outside) + "-ok.json").is_file()
    assert (pytester.path / "beside.json").is_file()
    run(pytester, "-k", "opted_in").assert_outcomes(passed=2, deselected=2)


# --- a bad marker value fails that test only -----------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"x\\x00y"', "contains a NUL character"),
        ('""', "names no file"),
        ('"."', "names no file"),
        ('"a/.."', "names no file"),
        ("5", "not int"),
        ('b"x"', "not bytes"),
        ('["a"]', "not list"),
    ],
    ids=["nul", "empty", "dot", "folder", "int", "bytes", "list"],
)
def test_a_bad_marker_value_fails_that_test_only(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    project(
        pytester,
        f"""
        @pytest.mark.agui(cassette={value})
        def test_bad(agui):
            agui.run(agent)

        def test_after():
            pass
        """,
    )
    result = run(pytester, "--agui-record")
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([f"*test_bad*@pytest.mark.agui(cassette=*{message}*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED


def test_a_bad_cassette_outside_value_fails_that_test(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        """
        @pytest.mark.agui(cassette="x", cassette_outside="yes")
        def test_bad(agui):
            agui.run(agent)
        """,
    )
    result = run(pytester, "--agui-record")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*cassette_outside=...) takes True or False, not 'yes'*"])


def test_a_bad_marker_value_is_no_internal_error_in_replay_either(
    pytester: pytest.Pytester,
) -> None:
    # replay reads the claimed paths at collection (for the unused report): no crash there
    project(
        pytester,
        """
        @pytest.mark.agui(cassette="x\\x00y")
        def test_bad(agui):
            agui.run(agent)
        """,
    )
    run(pytester, "--agui-record", "-k", "fine").assert_outcomes(passed=1, deselected=1)
    result = run(pytester)
    result.assert_outcomes(passed=1, errors=1)
    assert "INTERNALERROR" not in result.stdout.str()


# --- over-long names ----------------------------------------------------------------------------


def test_an_over_long_marker_name_is_shortened_with_a_hash(pytester: pytest.Pytester) -> None:
    long_folder, long_name = "f" * 300, "n" * 400
    project(
        pytester,
        f"""
        @pytest.mark.agui(cassette="{long_folder}/{long_name}")
        def test_long(agui):
            agui.run(agent)

        @pytest.mark.agui(cassette="{long_folder}/{long_name}x")
        def test_long_other(agui):
            agui.run(agent)
        """,
    )
    result = run(pytester, "--agui-record")
    result.assert_outcomes(passed=3)
    assert "Errno 36" not in result.stdout.str()
    written = sorted((pytester.path / "cassettes").rglob("n*.json"))
    assert len(written) == 2  # distinct names stay distinct
    for path in written:
        assert len(path.name.encode()) <= MAX_NAME_BYTES
        assert len(path.parent.name.encode()) <= MAX_NAME_BYTES
        assert path.parent.name.startswith("f" * 200)
    run(pytester).assert_outcomes(passed=3)  # and the replay finds them


def test_an_over_long_test_name_gets_a_short_default_file(pytester: pytest.Pytester) -> None:
    # identifiers may be non-ASCII and pytest keeps them in the node id: 3 bytes a character
    # here, so 120 characters (the old cap) were 360 bytes: OSError [Errno 36]
    name = "test_" + "\u6f22" * 150
    project(
        pytester,
        f"""
        def {name}(agui):
            agui.run(agent)

        @pytest.mark.parametrize("x", ["a" * 400])
        def test_param(agui, x):
            agui.run(agent)
        """,
    )
    result = run(pytester, "--agui-record")
    result.assert_outcomes(passed=3)
    written = list((pytester.path / "cassettes/test_cases").glob("*.json"))
    assert len(written) == 3
    assert all(len(p.name.encode()) <= MAX_NAME_BYTES - 22 for p in written)  # room for the tmp
    run(pytester).assert_outcomes(passed=3)


def test_file_name_helpers_count_bytes() -> None:
    assert fit_file_name("short") == "short"
    fitted = fit_file_name("\u00e9" * 200)
    assert len(fitted.encode()) <= MAX_NAME_BYTES
    assert fitted != fit_file_name("\u00e9" * 201)
    assert fit_file_name("\u00e9" * 200, max_bytes=20).startswith("\u00e9" * 5)
    assert len(safe_file_name("\u00e9" * 150).encode()) <= MAX_NAME_BYTES - 22 - len(".json")
    assert safe_file_name("test_ok[1-2]") == "test_ok[1-2]"  # unchanged names stay unchanged
    with pytest.raises(InvalidArgumentError, match="leaves the cassette folder"):
        contained_cassette_path("/c", "a/../../b")
    assert contained_cassette_path("/c", "a/b.json").as_posix() == "/c/a/b.json"
    assert contained_cassette_path("/c", Path("a")).as_posix() == "/c/a.json"


# --- stale temporary files -----------------------------------------------------------------------


def test_stale_temp_files_of_ours_are_removed_at_session_start(pytester: pytest.Pytester) -> None:
    project(pytester, "")
    folder = pytester.path / "cassettes" / "test_cases"
    folder.mkdir(parents=True)
    old = time.time() - 120
    stale = folder / ".test_fine.json.4242.0a1b2c3d.tmp"
    fresh = folder / ".test_fine.json.4243.0a1b2c3e.tmp"  # a write in progress elsewhere
    not_ours = [folder / ".notes.tmp", folder / "data.tmp", folder / ".x.json.12.nothex.tmp"]
    for path in [stale, fresh, *not_ours]:
        path.write_text("{")
    for path in [stale, *not_ours]:
        os.utime(path, (old, old))
    link = folder / ".link.json.1.0a1b2c3d.tmp"
    link.symlink_to(not_ours[0])
    os.utime(link, (old, old), follow_symlinks=False)

    result = run(pytester, "--agui-record")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*removed a stale temporary file of an interrupted write: "
            "cassettes/test_cases/.test_fine*"
        ]
    )
    assert not stale.exists()
    assert fresh.exists()
    assert all(path.exists() for path in not_ours)
    assert link.is_symlink()


def test_the_temp_file_test_knows_the_writers_temp_files(tmp_path: Path) -> None:
    seen: list[str] = []

    def pieces() -> object:
        yield "{"
        seen.extend(os.listdir(tmp_path))  # the temporary file, while it is being written
        yield "}"

    atomic_write_text(tmp_path / "test_x[a-b].json", pieces())  # type: ignore[arg-type]
    (name,) = seen
    assert is_temp_file(name), name
    assert not is_temp_file("test_x[a-b].json")
    assert len(name.encode()) - len(b"test_x[a-b].json") <= 22  # the room left for it
