"""Every code block in the docs runs here: ``docs/**/*.md`` and ``README.md``.

The convention (also what a docs writer needs to know):

* A ```` ```python ```` block runs as it is. The blocks of one page run in order, in one
  namespace, with a fresh temporary folder as the working directory (the page's "project"),
  on ``sys.path`` as it is for ``python script.py`` run there.
  A top-level ``test_*`` function the block defines that takes no arguments is called too, so a
  test shown on a page is a test that runs.
* A block whose first line is ``# file: PATH`` (any language with ``#`` comments: python, toml,
  ini...) is written to ``PATH`` in that folder instead of being run. Plain mkdocs does not
  accept attributes such as ``title="..."`` in a fence's info string (Python-Markdown's
  fenced_code then renders the block as broken text), so the marker is a comment the reader
  sees as the file name.
* A ```` ```console ```` block is a checked terminal session: every ``$ `` line is a command, and
  the lines after it are what it printed. ``$ pytest ...`` (or ``python -m pytest``) runs as a
  real pytest run in the page's folder (``pytester``, in process), as a reader's plain ``pytest``
  sees it: the folder is *not* on ``sys.path`` (``python -m pytest`` puts it there) and no module
  of the page imported by an earlier block is loaded; a page whose tests import a local module
  from a subfolder must show the ``pythonpath`` setting that makes that work.
  It must pass, unless the printed lines show pytest's summary: then the outcome counts must be
  those (``1 failed, 2 passed``), and every ``E   ...`` line shown must appear in the real
  output (``...`` matches anything). ``$ agui-replay ...`` runs the installed command and must
  exit 0. Any other command in a console block fails this test: a console block claims to be
  checked. ```` ```bash ```` blocks (installation, serving) are shown, never run.
* When a page writes a test file (``test_*.py`` or ``conftest.py``) and shows no pytest run
  after it, one plain ``pytest`` run ends the page and must pass.
* A block whose first line is ``# skip: REASON`` does not run; it is reported as a skipped test
  with that reason (``pytest -ra`` lists it), for examples of an API that is not built yet.

Each page is one test (``test_page[getting-started.md]``); a failure names the page and the
line of the block, and tracebacks point at the Markdown file's own line numbers.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import inspect
import os
import re
import shlex
import subprocess
import sys
import types
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# pytester restores sys.modules after each test; importing the heavy libraries the pages use
# here, once, keeps every page from paying for their import again.
_HEAVY = ("openai", "anthropic", "httpx", "httpx2", "hypothesis", "syrupy", "starlette")
# The frameworks of docs/frameworks.md, where installed: FastAPI apps built by a module that
# was imported twice (once per inner pytest run) answer 307 to each other's routes.
_FRAMEWORKS = (
    "fastapi",
    "langgraph.graph",
    "langchain_openai",
    "ag_ui_langgraph",
    "pydantic_ai",
    "agent_framework",
    "agent_framework_ag_ui",
)
for _name in (*_HEAVY, *_FRAMEWORKS):
    with contextlib.suppress(ImportError):
        importlib.import_module(_name)

ROOT = Path(__file__).resolve().parents[2]
PAGES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]

FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*)$")
MARKER = re.compile(r"^#\s*(?P<kind>file|skip):\s*(?P<value>.+?)\s*$")
SUMMARY_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the block's first content line
    lang: str
    text: str
    file: str | None = None
    skip: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def extract_blocks(page: Path) -> list[Block]:
    """The fenced code blocks of a Markdown page, with their markers read."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opener = FENCE.match(lines[i])
        if opener is None:
            i += 1
            continue
        fence, indent = opener["fence"], len(opener["indent"])
        lang = (opener["info"].split() or [""])[0].lower()
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            stripped = lines[j].strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                break
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        file = skip = None
        first = 0
        while first < len(body) and (marker := MARKER.match(body[first])):
            if marker["kind"] == "file":
                file = marker["value"]
            else:
                skip = marker["value"]
            first += 1
        blocks.append(Block(page, i + 2, lang, "\n".join(body) + "\n", file=file, skip=skip))
        i = j + 1
    return blocks


def _runs(block: Block) -> bool:
    return block.lang in {"python", "py", "console"} or block.file is not None


ALL_BLOCKS = [b for page in PAGES if page.exists() for b in extract_blocks(page)]
RUNNABLE_PAGES = sorted({b.page for b in ALL_BLOCKS if _runs(b) and b.skip is None})
SKIPPED = [b for b in ALL_BLOCKS if _runs(b) and b.skip is not None]


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT / "docs").as_posix() if "docs" in page.parts else page.name


def _pattern(shown: str) -> str:
    """An fnmatch pattern for a shown output line: literal text, ``...`` matching anything."""
    literal = [re.sub(r"([*?\[])", r"[\1]", part) for part in shown.split("...")]
    return "*" + "*".join(literal) + "*"


def _is_test_file(path: str) -> bool:
    name = Path(path).name
    return name == "conftest.py" or (name.startswith("test_") and name.endswith(".py"))


class PageRun:
    """Runs one page's blocks in order in a pytester folder."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        # A real module, so dataclasses, pydantic and pickle find the page's classes by name;
        # pytester restores sys.modules after the test.
        module = types.ModuleType("docs_page")
        sys.modules[module.__name__] = module
        self.namespace: dict[str, Any] = module.__dict__
        self.unrun_tests: list[str] = []

    def run(self, block: Block) -> None:
        if block.file is not None:
            target = self.pytester.path / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text.split("\n", 1)[1], encoding="utf-8")
            if _is_test_file(block.file):
                self.unrun_tests.append(block.file)
        elif block.lang in {"python", "py"}:
            self.run_python(block)
        else:
            self.run_console(block)

    def run_python(self, block: Block) -> None:
        folder = str(self.pytester.path)
        sys.path.insert(0, folder)  # what `python script.py` in the folder has
        try:
            self._exec(block)
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(folder)

    def _exec(self, block: Block) -> None:
        before = set(self.namespace)
        # Padding makes traceback line numbers those of the Markdown file.
        source = "\n" * (block.line - 1) + block.text
        # dont_inherit: this file's `from __future__ import annotations` must not leak into pages.
        code = compile(source, str(block.page), "exec", dont_inherit=True)
        exec(code, self.namespace)
        for name, value in list(self.namespace.items()):
            if (
                name not in before
                and name.startswith("test_")
                and inspect.isfunction(value)
                and not inspect.signature(value).parameters
            ):
                value()

    def run_console(self, block: Block) -> None:
        commands: list[tuple[str, list[str]]] = []
        for line in block.text.splitlines():
            if line.startswith("$ "):
                commands.append((line[2:].strip(), []))
            elif commands:
                commands[-1][1].append(line)
        for command, shown in commands:
            argv = shlex.split(command)
            if argv[0] == "pytest":
                self.run_pytest(argv[1:], shown, block)
            elif argv[:3] == ["python", "-m", "pytest"]:
                self.run_pytest(argv[3:], shown, block, module=True)
            elif argv[0] == "agui-replay":
                self.run_cli(argv[1:], block)
            else:
                pytest.fail(
                    f"{block.where}: a console block runs its commands, and this harness "
                    f"does not know {argv[0]!r}; show it in a ```bash block instead"
                )

    def _forget_page_modules(self) -> None:
        """Unload the modules imported from the page's folder: a new `pytest` process has none."""
        folder = str(self.pytester.path)
        for name, module in list(sys.modules.items()):
            where = getattr(module, "__file__", None) or ""
            if where.startswith(folder + os.sep):
                del sys.modules[name]

    def run_pytest(
        self, args: list[str], shown: list[str], block: Block, *, module: bool = False
    ) -> None:
        self.unrun_tests.clear()
        self._forget_page_modules()
        folder = str(self.pytester.path)
        if module:  # `python -m pytest` puts the current folder first on sys.path
            sys.path.insert(0, folder)
        try:
            result = self.pytester.runpytest(*args)
        finally:
            if module:
                with contextlib.suppress(ValueError):
                    sys.path.remove(folder)
        self._forget_page_modules()
        output = "\n".join(result.outlines + result.errlines)
        summary = [line for line in shown if SUMMARY_COUNT.search(line)]
        if summary:
            counts = {kind: int(n) for n, kind in SUMMARY_COUNT.findall(summary[-1])}
            if "error" in counts:
                counts["errors"] = counts.pop("error")
            try:
                result.assert_outcomes(**counts)
            except AssertionError:
                pytest.fail(
                    f"{block.where}: `pytest {shlex.join(args)}` should end with "
                    f"{summary[-1].strip()!r}; it printed:\n{output}"
                )
            patterns = [_pattern(line[1:].strip()) for line in shown if line.startswith("E ")]
            if patterns:
                try:
                    result.stdout.fnmatch_lines(patterns)
                except pytest.fail.Exception as missing:
                    pytest.fail(f"{block.where}: a shown `E` line is not in the output: {missing}")
        elif result.ret != 0:
            pytest.fail(f"{block.where}: `pytest {shlex.join(args)}` failed:\n{output}")

    def run_cli(self, args: list[str], block: Block) -> None:
        command = Path(sys.executable).with_name("agui-replay")
        done = subprocess.run(
            [str(command), *args],
            cwd=self.pytester.path,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "NO_COLOR": "1"},
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(
                f"{block.where}: `agui-replay {shlex.join(args)}` exited {done.returncode}:\n"
                f"{done.stdout}{done.stderr}"
            )


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=_page_id)
def test_page(page: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # The page's folder is not put on sys.path: a `pytest` run sees what a reader's does.
    while str(pytester.path) in sys.path:
        sys.path.remove(str(pytester.path))
    # A recording made on a page must never need a real key; make sure none leaks in.
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # A page may rewrite a module within one second at the same size; a cached .pyc would hide
    # the change.
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    runner = PageRun(pytester)
    try:
        with _tolerant_hypothesis():
            _run_page(page, runner)
    finally:
        # Pages show SDK clients the short way, without closing them. Collect what this page
        # left behind now, so that an unclosed socket's ResourceWarning is not raised inside
        # (and blamed on) whichever page happens to run when the collector next gets to it.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@contextlib.contextmanager
def _tolerant_hypothesis() -> Iterator[None]:
    """Pages set their own ``max_examples``; a loaded machine must not fail them on a health check.

    ``@settings(...)`` on a page only overrides the fields it names, so the rest come from the
    profile loaded here, for the page's own blocks and its in-process pytest runs alike.
    """
    from hypothesis import HealthCheck, settings

    previous = getattr(settings, "_current_profile", None) or "default"
    settings.register_profile(
        "agui-replay-docs",
        parent=settings.get_profile(previous),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        deadline=None,
    )
    settings.load_profile("agui-replay-docs")
    try:
        yield
    finally:
        settings.load_profile(previous)


def _run_page(page: Path, runner: PageRun) -> None:
    for block in extract_blocks(page):
        if not _runs(block) or block.skip is not None:
            continue
        try:
            runner.run(block)
        except pytest.fail.Exception:
            raise
        except BaseException as error:
            raise AssertionError(f"{block.where}: the block failed: {error!r}") from error
    if runner.unrun_tests:
        runner.run_pytest([], [], Block(page, 0, "console", ""))


if SKIPPED:  # only then: an empty parametrize would show as a skip of its own

    @pytest.mark.parametrize("block", SKIPPED, ids=[b.where for b in SKIPPED])
    def test_skipped_block(block: Block) -> None:
        pytest.skip(f"{block.where}: {block.skip}")


def test_the_harness_reads_fences_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "text\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "~~~~console\n"
        "$ pytest -q\n"
        "```python\n"  # a shorter or other fence inside does not close it
        "~~~~\n"
        "   ```python\n"
        "   # file: tests/test_a.py\n"
        "   def test_a(): pass\n"
        "   ```\n"
        "```python\n"
        "# skip: not built yet\n"
        "```\n",
        encoding="utf-8",
    )
    blocks = extract_blocks(page)
    assert [(b.line, b.lang, b.file, b.skip) for b in blocks] == [
        (3, "python", None, None),
        (6, "console", None, None),
        (10, "python", "tests/test_a.py", None),
        (14, "python", None, "not built yet"),
    ]
    assert blocks[1].text == "$ pytest -q\n```python\n"
    assert blocks[2].text == "# file: tests/test_a.py\ndef test_a(): pass\n"


def test_a_failing_block_or_a_wrong_outcome_fails_the_page(pytester: pytest.Pytester) -> None:
    page = ROOT / "docs" / "example.md"
    runner = PageRun(pytester)
    runner.run(Block(page, 3, "python", "x = 1\n"))
    with pytest.raises(AssertionError):
        runner.run(Block(page, 7, "python", "assert x == 2\n"))
    runner.run(
        Block(
            page,
            10,
            "python",
            "# file: test_one.py\ndef test_one():\n    pass\n",
            file="test_one.py",
        )
    )
    assert runner.unrun_tests == ["test_one.py"]
    runner.run(Block(page, 14, "console", "$ pytest -q\n1 passed in 0.01s\n"))
    assert runner.unrun_tests == []
    with pytest.raises(pytest.fail.Exception, match="should end with '1 failed"):
        runner.run(Block(page, 18, "console", "$ pytest -q\n1 failed in 0.01s\n"))
    with pytest.raises(pytest.fail.Exception, match="does not know 'pip'"):
        runner.run(Block(page, 22, "console", "$ pip install agui-replay\n"))


def test_page_test_files_do_not_share_a_name_with_a_project_test_module() -> None:
    # pytest imports test files by basename (rootdir-less "prepend" mode): a page's
    # tests/test_x.py run in the same worker as our own test_x.py fails with "import file
    # mismatch". Pages must pick names the project does not use.
    ours = {p.name for p in ROOT.glob("tests/**/test_*.py")} | {
        p.name for p in ROOT.glob("examples/**/test_*.py")
    }
    clashes = sorted(
        f"{b.where}: {b.file}"
        for b in ALL_BLOCKS
        if b.file is not None and Path(b.file).name in ours
    )
    assert clashes == [], "rename these page files: " + ", ".join(clashes)
