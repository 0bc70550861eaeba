"""The cassette lifecycle through real pytest runs (pytester): a failed recording
writes nothing, two tests never write one cassette, an unchanged re-record is byte-identical.

The conftest's ``agui_upstream`` is chosen by ``$AGUI_TEST_UPSTREAM``: ``echo`` (default, a
FakeProvider with stable ids echoing the user's words), ``down`` (a loopback port nobody
listens on), or an HTTP status (a FakeProvider answering every request with it).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import httpcore2  # noqa: F401  (imported once here: pytester drops modules first imported
import httpx2  # noqa: F401  inside, and httpx2 maps only its own httpcore2's errors)
import openai
import pytest

import agui_replay.providers
import agui_replay.recording
import agui_replay.server  # noqa: F401
from tests.support.pytester_run import run

CONFTEST = textwrap.dedent(
    """
    import os, socket
    import openai, pytest
    from agui_replay.providers import FakeProvider

    def _echo(request):
        for word in request.messages[-1]["content"].split():
            yield " " + word

    def _closed_port():
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    @pytest.fixture
    def agui_upstream():
        kind = os.environ.get("AGUI_TEST_UPSTREAM", "echo")
        if kind == "down":
            yield f"http://127.0.0.1:{_closed_port()}/v1"
            return
        fake = FakeProvider(function=_echo)
        if kind != "echo":
            fake = FakeProvider()
            for _ in range(3):
                fake.error(int(kind), "the model is overloaded")
        with fake.serve() as server:
            yield server

    @pytest.fixture
    def agent(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="dummy", max_retries=0)

        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": ctx.last_user_text()}],
                stream=True,
            )
            with ctx.message("assistant") as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        return agent
    """
)

TEST_AGENT = textwrap.dedent(
    """
    import pytest

    def test_hello(agui, agent):
        events = agui.run(agent, "hello there")
        text = "".join(e.get("delta", "") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
        assert text == " hello there", "the stream has no assistant message with text"

    @pytest.mark.agui(record_errors=True)
    def test_on_purpose(agui, agent):
        events = agui.run(agent, "hello there")
        assert events[-1]["type"] == "RUN_ERROR"
    """
)

HELLO = Path("cassettes", "test_agent", "test_hello.json")
ON_PURPOSE = Path("cassettes", "test_agent", "test_on_purpose.json")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("AGUI_TEST_UPSTREAM", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=TEST_AGENT)
    return pytester


# --- a failed recording writes nothing ------------------------------------------------------


@pytest.mark.parametrize("upstream", ["down", "503", "429"])
def test_a_failed_recording_creates_no_cassette(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, upstream: str
) -> None:
    monkeypatch.setenv("AGUI_TEST_UPSTREAM", upstream)
    result = run(project, "--agui-record", "-k", "test_hello")
    result.assert_outcomes(failed=1, deselected=1)
    assert not HELLO.exists()
    out = result.stdout.str()
    # The upstream's error comes first, not the test body's assertion.
    assert "the stream has no assistant message with text" not in out
    result.stdout.fnmatch_lines(["*UpstreamError: *test_hello.json: run #0 was not recorded*"])
    if upstream == "down":
        result.stdout.fnmatch_lines(["*POST http://127.0.0.1:*/v1/chat/completions: Connect*"])
    else:
        result.stdout.fnmatch_lines(
            [f"*POST http://127.0.0.1:*/v1/chat/completions answered {upstream}*overloaded*"]
        )
    result.stdout.fnmatch_lines(["*API key*network*--agui-upstream*"])
    result.stdout.fnmatch_lines(
        [
            "*0 cassette(s) recorded, 0 replayed, 0 unused, 1 failed",
            "*failed:   cassettes/test_agent/test_hello.json (the upstream failed; nothing *)",
        ]
    )


def test_a_failed_recording_leaves_the_cassette_as_it_was(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(project, "--agui-record", "-k", "test_hello").assert_outcomes(passed=1, deselected=1)
    before = HELLO.read_bytes()
    monkeypatch.setenv("AGUI_TEST_UPSTREAM", "down")
    run(project, "--agui-record", "-k", "test_hello").assert_outcomes(failed=1, deselected=1)
    assert HELLO.read_bytes() == before
    # and it still replays
    monkeypatch.delenv("AGUI_TEST_UPSTREAM")
    run(project, "-k", "test_hello").assert_outcomes(passed=1, deselected=1)


def test_a_caught_upstream_error_still_fails_the_test_with_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.makepyfile(
        test_caught=(
            "def test_caught(agui, agent):\n"
            "    try:\n"
            "        agui.run(agent, 'hello')\n"
            "    except Exception:\n"
            "        pass\n"
            "    assert False, 'an unrelated assertion'\n"
        )
    )
    monkeypatch.setenv("AGUI_TEST_UPSTREAM", "500")
    result = run(project, "--agui-record", "test_caught.py")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*UpstreamError: *test_caught.json: run #0 was not recorded*"])
    assert "an unrelated assertion" not in result.stdout.str()
    assert not Path("cassettes", "test_caught", "test_caught.json").exists()


def test_record_errors_records_the_failure_on_purpose(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGUI_TEST_UPSTREAM", "503")
    result = run(project, "--agui-record", "-k", "test_on_purpose")
    result.assert_outcomes(passed=1, deselected=1)
    assert ON_PURPOSE.exists()
    result.stdout.fnmatch_lines(["*1 cassette(s) recorded*"])
    monkeypatch.delenv("AGUI_TEST_UPSTREAM")
    run(project, "-k", "test_on_purpose").assert_outcomes(passed=1, deselected=1)


def test_the_engine_writes_nothing_when_the_upstream_is_down(tmp_path: Path) -> None:
    import socket

    from agui_replay.errors import UpstreamError
    from agui_replay.recording import CassetteSession

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = tmp_path / "c.json"

    def agent(ctx: object) -> None:
        client = openai.OpenAI(base_url=session.provider.base_url, api_key="k", max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    session = CassetteSession(path, mode="rewrite", upstream=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(UpstreamError, match=r"ConnectError"), session:
        session.run(agent, "x")
    assert not path.exists()
    assert session.upstream_failures

    on_purpose = CassetteSession(
        path, mode="rewrite", upstream=f"http://127.0.0.1:{port}/v1", record_errors=True
    )
    with on_purpose:
        session = on_purpose
        on_purpose.run(agent, "x")
    assert path.exists()


# --- collisions refused ---------------------------------------------------------------------

SHARED = textwrap.dedent(
    """
    import pytest

    @pytest.mark.agui(cassette="shared")
    @pytest.mark.parametrize("n", range(4))
    def test_shared(agui, agent, n):
        agui.run(agent, f"number {n}")
    """
)


def _refusals(out: str) -> list[str]:
    # Each failure's own section, not the short summary: with CI set, pytest prints the
    # summary lines whole, and each refusal would be counted twice.
    return [
        line
        for line in out.splitlines()
        if "record the same cassette" in line and not line.startswith("FAILED ")
    ]


def test_two_tests_sharing_a_cassette_are_refused_naming_both(project: pytest.Pytester) -> None:
    project.makepyfile(test_shared=SHARED)
    result = run(project, "--agui-record", "test_shared.py")
    result.assert_outcomes(passed=1, failed=3)
    refusals = _refusals(result.stdout.str())
    assert len(refusals) == 3, refusals
    for n in (1, 2, 3):
        assert any(
            "cassettes/shared.json: test_shared.py::test_shared[0] (first) and "
            f"test_shared.py::test_shared[{n}]" in line
            for line in refusals
        ), refusals
    shared = Path("cassettes", "shared.json").read_text(encoding="utf-8")
    assert "number 0" in shared
    assert "number 1" not in shared
    assert not list(Path("cassettes").glob(".*.claim"))  # removed at the session's end
    # a later session records it again: the claim was this session's only
    run(project, "--agui-record", "test_shared.py", "-k", "0").assert_outcomes(
        passed=1, deselected=3
    )


def test_sharing_is_refused_across_xdist_workers(project: pytest.Pytester) -> None:
    project.makepyfile(test_shared=SHARED)
    result = project.runpytest_subprocess(
        "-p",
        "no:hypothesispytest",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--agui-record",
        "test_shared.py",
    )
    result.assert_outcomes(passed=1, failed=3)
    out = result.stdout.str()
    # xdist shows each failure's first line in its summary, one per refused test
    assert len({line.split("]")[0] for line in out.splitlines() if line.startswith("FAILED")}) == 3
    assert "(first) and test_shared.py::test_shared[" in out
    workers = {w for w in ("gw0", "gw1") if f"[{w}]" in out}
    assert workers == {"gw0", "gw1"}, out  # the tests ran on both workers
    assert not list(Path("cassettes").glob(".*.claim"))


PACKAGED = textwrap.dedent(
    """
    def test_one(agui, agent):
        agui.run(agent, "from {name}")
    """
)


def test_same_named_modules_in_two_packages_get_their_own_folders(
    project: pytest.Pytester,
) -> None:
    for package in ("pkg_a", "pkg_b"):
        project.mkpydir(package)
        Path(package, "test_same.py").write_text(PACKAGED.format(name=package), encoding="utf-8")
    result = run(project, "--agui-record", "pkg_a", "pkg_b")
    result.assert_outcomes(passed=2)
    for package in ("pkg_a", "pkg_b"):
        path = Path("cassettes", package, "test_same", "test_one.json")
        assert f"from {package}" in path.read_text(encoding="utf-8")
    assert not Path("cassettes", "test_same").exists()
    run(project, "pkg_a", "pkg_b", "--agui-fail-on-unused").assert_outcomes(passed=2)
    # a top-level module (no package) keeps cassettes/<module>/
    run(project, "--agui-record", "-k", "test_hello", "test_agent.py").assert_outcomes(
        passed=1, deselected=1
    )
    assert HELLO.exists()


def test_a_packaged_modules_former_cassette_replays_until_re_recorded(
    project: pytest.Pytester,
) -> None:
    project.mkpydir("pkg_a")
    Path("pkg_a", "test_same.py").write_text(PACKAGED.format(name="pkg_a"), encoding="utf-8")
    run(project, "--agui-record", "pkg_a").assert_outcomes(passed=1)
    new = Path("cassettes", "pkg_a", "test_same", "test_one.json")
    former = Path("cassettes", "test_same", "test_one.json")
    former.parent.mkdir(parents=True)
    new.rename(former)  # where earlier versions wrote it, without the package folder
    result = run(project, "pkg_a", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*replayed: cassettes/test_same/test_one.json"])
    run(project, "pkg_a", "--agui-record").assert_outcomes(passed=1)
    assert new.exists()  # --agui-record writes the new place


# --- byte-stable re-records -----------------------------------------------------------------


def test_re_recording_an_unchanged_agent_leaves_the_cassette_byte_identical(
    project: pytest.Pytester,
) -> None:
    project.makepyfile(
        test_two=(
            "import time\n\n"
            "def test_two(agui, agent):\n"
            "    agui.run(agent, 'hello there')\n"
            "    time.sleep(0.05)  # other timing: the offsets would differ\n"
            "    agui.run(agent, 'and again')\n"
        )
    )
    path = Path("cassettes", "test_two", "test_two.json")
    run(project, "--agui-record", "test_two.py").assert_outcomes(passed=1)
    first = path.read_bytes()
    text = first.decode("utf-8")
    assert '"date"' not in text  # volatile headers are not stored
    assert '"offset"' in text
    run(project, "--agui-record", "test_two.py").assert_outcomes(passed=1)
    assert path.read_bytes() == first
    # what did change is written (with a new recorded_at), the rest keeps its offsets
    project.makepyfile(
        test_two=(
            "def test_two(agui, agent):\n"
            "    agui.run(agent, 'hello there')\n"
            "    agui.run(agent, 'something else')\n"
        )
    )
    run(project, "--agui-record", "test_two.py").assert_outcomes(passed=1)
    changed = json.loads(path.read_text(encoding="utf-8"))
    before = json.loads(first)
    assert changed["runs"][0]["interactions"] == before["runs"][0]["interactions"]
    assert changed["runs"][1]["interactions"] != before["runs"][1]["interactions"]


def test_volatile_headers_are_dropped() -> None:
    from agui_replay.recording._steady import is_volatile_header, without_volatile

    for name in (
        "Date",
        "x-request-id",
        "openai-processing-ms",
        "x-ratelimit-remaining-tokens",
        "anthropic-ratelimit-requests-reset",
        "set-cookie",
        "cf-ray",
        "request-id",
    ):
        assert is_volatile_header(name), name
    for name in ("content-type", "retry-after", "x-should-retry", "openai-version"):
        assert not is_volatile_header(name), name
    kept = without_volatile(
        [{"request": {}, "response": {"status": 200, "headers": {"date": "x", "a": "b"}}}]
    )
    assert kept[0]["response"]["headers"] == {"a": "b"}


# --- every re-record hint names the test ----------------------------------------------------


@pytest.mark.parametrize(
    ("content", "says"),
    [("{not json", "not valid JSON"), ('{"version": 99, "runs": []}', "format version 99")],
)
def test_a_broken_cassettes_hint_names_the_test(
    project: pytest.Pytester, content: str, says: str
) -> None:
    HELLO.parent.mkdir(parents=True)
    HELLO.write_text(content, encoding="utf-8")
    result = run(project, "-k", "test_hello")
    # the agent fixture reads agui.provider first: an error in the setup
    result.assert_outcomes(errors=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            f"*CassetteError: *test_hello.json:1: *{says}*`pytest test_agent.py::test_hello "
            "--agui-record`*"
        ]
    )
