"""``agui-replay examples``: replays a project's example cassettes offline and reports.

A small project is built in a temporary folder (an agent calling the real ``openai`` SDK at
``agui.provider.base_url``, a scripted upstream in its conftest), recorded once with
``pytest --agui-record``, then checked through the command as a user runs it: in a subprocess,
from the project's root. The last test runs the command on this repository's own examples.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agui_replay.cli._parser import build_parser

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = textwrap.dedent(
    """
    import pytest
    from agui_replay.providers import FakeProvider

    @pytest.fixture
    def agui_upstream():
        fake = FakeProvider()
        fake.reply("Hello", " from", " the", " recording")
        with fake.serve() as server:
            yield server
    """
)

TEST_HELLO = textwrap.dedent(
    """
    import openai

    def test_hello(agui):
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key="sk-x", max_retries=0)

        def agent(ctx):
            stream = client.chat.completions.create(
                model="gpt-4o", stream=True,
                messages=[{"role": "user", "content": ctx.last_user_text()}],
            )
            with ctx.assistant_message() as message:
                for chunk in stream:
                    if chunk.choices and chunk.choices[0].delta.content:
                        message.delta(chunk.choices[0].delta.content)

        events = agui.run(agent, "hi")
        assert events[-1]["type"] == "RUN_FINISHED"

    def test_plain():
        assert True  # uses no cassette: only run with --all
    """
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "AGUI_"))}
    env["AGUI_REPLAY_NO_PROGRESS"] = "1"
    return env


def _run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def examples(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(cwd, "-m", "agui_replay.cli", "examples", *args)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with one example folder, its cassette recorded."""
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nfilterwarnings = ["error"]\n', encoding="utf-8"
    )
    hello = root / "examples" / "hello"
    hello.mkdir(parents=True)
    (hello / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    (hello / "test_hello.py").write_text(TEST_HELLO, encoding="utf-8")
    recorded = _run(root, "-m", "pytest", "examples", "--agui-record", "-p", "no:cacheprovider")
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    assert (root / "cassettes" / "test_hello" / "test_hello.json").is_file()
    return root


def _cassette(project: Path) -> Path:
    return project / "cassettes" / "test_hello" / "test_hello.json"


def test_a_recorded_project_replays_with_a_report_and_exit_code_0(project: Path) -> None:
    before = _cassette(project).read_bytes()
    result = examples(project)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout

    (run,) = json.loads(before)["runs"]
    count = len(run["events"])
    assert "replaying the cassettes under examples offline" in out.splitlines()[0]
    assert "hello  1/1 test passed  ok" in out
    assert "  pass  test_hello.py::test_hello" in out
    assert f"cassettes/test_hello/test_hello.json  (1 run, {count} events)" in out
    assert "test_plain" not in out  # no cassette: deselected by default
    total = out.strip().splitlines()[-1]
    assert total.startswith(
        f"total: 1 test, 1 passed, 0 failed · 1 cassette replayed: 1 run, {count} events"
    )
    # Replay only: nothing written, not even pytest's cache.
    assert _cassette(project).read_bytes() == before
    assert not (project / ".pytest_cache").exists()


def test_all_runs_the_tests_without_cassettes_too(project: Path) -> None:
    result = examples(project, "examples", "--all")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hello  2/2 tests passed  ok" in result.stdout
    assert "  pass  test_hello.py::test_plain" in result.stdout


def test_a_cassette_that_no_longer_replays_fails_with_the_reason(
    project: Path, tmp_path: Path
) -> None:
    path = _cassette(project)
    original = path.read_text(encoding="utf-8")
    cassette = json.loads(original)
    # The agent now hears another word from the "model": its stream must differ.
    for chunk in cassette["runs"][0]["interactions"][0]["response"]["chunks"]:
        chunk["data"] = chunk["data"].replace("recording", "tampering")
    path.write_text(json.dumps(cassette), encoding="utf-8")
    try:
        result = examples(project)
    finally:
        path.write_text(original, encoding="utf-8")
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "hello  0/1 test passed  FAILED" in out
    assert "  FAIL  test_hello.py::test_hello" in out
    assert "does not replay as recorded" in out
    assert out.strip().splitlines()[-1].startswith("total: 1 test, 0 passed, 1 failed")


def test_an_unused_cassette_fails_the_command(project: Path) -> None:
    stray = project / "cassettes" / "test_hello" / "test_gone.json"
    stray.write_bytes(_cassette(project).read_bytes())
    try:
        result = examples(project)
    finally:
        stray.unlink()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "unused cassette (no test replays it): cassettes/test_hello/test_gone.json" in (
        result.stdout
    )


def test_a_missing_folder_is_a_usage_error_and_an_empty_one_fails(
    project: Path, tmp_path: Path
) -> None:
    missing = examples(tmp_path)  # no examples/ here
    assert missing.returncode == 2
    assert "examples does not exist" in missing.stderr
    assert "agui-replay examples PATH" in missing.stderr

    empty = tmp_path / "nothing"
    empty.mkdir()
    result = examples(tmp_path, str(empty))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no cassette tests under" in result.stdout


def test_help_names_the_subcommand() -> None:
    parser = build_parser()
    assert "examples" in parser.format_help()
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["examples", "--help"])
    assert exit_info.value.code == 0


def _digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            sha.update(path.relative_to(folder).as_posix().encode())
            sha.update(path.read_bytes())
    return sha.hexdigest()


def test_the_repository_examples_replay_offline() -> None:
    """The README's main job: every example's cassettes replay, nothing changes on disk."""
    before = (_digest(ROOT / "cassettes"), _digest(ROOT / "examples"))
    result = examples(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for example in ("pydantic_ai_agent", "recipe", "task_board"):
        assert f"\n{example}  " in out
    assert " 0 failed · " in out.strip().splitlines()[-1]
    assert "FAIL" not in out
    assert (_digest(ROOT / "cassettes"), _digest(ROOT / "examples")) == before
