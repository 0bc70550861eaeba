"""The module map's rules, read from the code's own import statements (docs/architecture.md).

- no circle of imports between the modules of ``agui_replay`` (imports under
  ``if TYPE_CHECKING:`` aside; an import inside a function counts: it runs too);
- nothing outside ``agui_replay/cli/`` imports the command line (``agui_replay/__main__.py``,
  the ``python -m agui_replay`` entry point, aside);
- no module imports a private module or name of another package (the shared private
  modules at the top of ``agui_replay/`` aside).

A package's ``__init__`` importing its own submodules is no circle: a submodule importing a
sibling does not import the package again, so only the module an import names is an edge.
"""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "agui_replay"
CLI = "agui_replay.cli"
CLI_ENTRY_POINTS = {"agui_replay.__main__"}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = [root.name, *path.relative_to(root).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs (at import time or in a function), in source order."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
        return
    if isinstance(node, ast.If) and _is_type_checking(node.test):
        children: list[ast.AST] = list(node.orelse)
    else:
        children = list(ast.iter_child_nodes(node))
    for child in children:
        yield from _runtime_imports(child)


def imported_modules(
    source: str, name: str, is_package: bool, known: set[str]
) -> Iterator[tuple[str, int]]:
    """The ``agui_replay`` modules a module's source imports, with the line of each import."""
    package = name if is_package else name.rpartition(".")[0]
    for node in _runtime_imports(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    yield alias.name, node.lineno
            continue
        if node.level:
            base_parts = package.split(".")
            base_parts = base_parts[: len(base_parts) - (node.level - 1)]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        for alias in node.names:
            submodule = f"{base}.{alias.name}"
            if submodule in known:  # `from package import submodule`
                yield submodule, node.lineno
            elif base in known:
                yield base, node.lineno


def import_graph(root: Path = PACKAGE) -> dict[str, dict[str, int]]:
    """module -> {imported module: line of the first such import} for every file under root."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    known = set(files)
    graph: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges: dict[str, int] = {}
        source = path.read_text(encoding="utf-8")
        for target, line in imported_modules(source, name, path.name == "__init__.py", known):
            if target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def find_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One circle through each strongly connected group of modules (Tarjan, then a path)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_circle_in(graph, set(group)) for group in groups]


def _circle_in(graph: dict[str, dict[str, int]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to it, through the group (BFS)."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [*reversed(path), start]
                if target in group and target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no circle in {sorted(group)}")  # pragma: no cover


def describe(graph: dict[str, dict[str, int]], circle: list[str]) -> str:
    steps = [f"{a} (line {graph[a][b]}) -> {b}" for a, b in itertools.pairwise(circle)]
    return " ; ".join(steps)


def test_no_module_is_part_of_an_import_circle() -> None:
    graph = import_graph()
    assert len(graph) > 50  # the walk found the package
    circles = [describe(graph, circle) for circle in find_cycles(graph)]
    assert circles == [], "import circles (break them, see docs/architecture.md):\n" + "\n".join(
        circles
    )


def test_nothing_outside_the_cli_package_imports_it() -> None:
    graph = import_graph()
    offending = [
        f"{module} line {line} imports {target}"
        for module, edges in graph.items()
        if not (module == CLI or module.startswith(CLI + ".")) and module not in CLI_ENTRY_POINTS
        for target, line in edges.items()
        if target == CLI or target.startswith(CLI + ".")
    ]
    assert offending == [], "only the command line imports agui_replay.cli:\n" + "\n".join(
        offending
    )


def _unit(module: str) -> str:
    """The unit a module belongs to: ``agui_replay`` and the first name below it."""
    return ".".join(module.split(".")[:2])


def private_imports(root: Path = PACKAGE) -> list[str]:
    """Imports that take another unit's private module or private name.

    A unit is one package or module right under ``agui_replay`` (``providers``, ``verify``,
    ``snapshot``...). A module or name whose last part starts with ``_`` belongs to its unit,
    and only modules of that unit may import it. The private modules at the top of the package
    (``agui_replay._compat``, ``_limits``, ...) are shared infrastructure: any module may
    import them.
    """
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    found = []
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not base.startswith(f"{root.name}."):
                continue
            for alias in node.names:
                target = f"{base}.{alias.name}"
                parts = target.split(".")
                private = [
                    part for part in parts[2:] if part.startswith("_") and not part.startswith("__")
                ]
                if private and _unit(target) != _unit(name):
                    found.append(f"{name}:{node.lineno} takes {target}")
    return found


def test_no_module_takes_another_units_private_module_or_name() -> None:
    assert private_imports() == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "agui_replay"
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source, encoding="utf-8")
    return root


def test_a_circle_through_a_function_local_import_is_found_and_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "from .b import thing\n",
            "b.py": "def thing():\n    from . import c\n",
            "c.py": "import agui_replay.a\n",
            "d.py": "from .a import thing\n",
        },
    )
    graph = import_graph(root)
    assert graph["agui_replay.b"] == {"agui_replay.c": 2}
    circles = find_cycles(graph)
    assert circles == [["agui_replay.a", "agui_replay.b", "agui_replay.c", "agui_replay.a"]]
    assert describe(graph, circles[0]) == (
        "agui_replay.a (line 1) -> agui_replay.b ; agui_replay.b (line 2) -> agui_replay.c ; "
        "agui_replay.c (line 1) -> agui_replay.a"
    )


def test_type_checking_imports_and_package_init_re_exports_are_no_circle(
    tmp_path: Path,
) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "pkg/__init__.py": "from .one import A\nfrom .two import B\n",
            "pkg/one.py": "from .two import B\n",
            "pkg/two.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from .one import A\n"
                "else:\n    from ..other import C\n"
            ),
            "other.py": "import json\n",
        },
    )
    graph = import_graph(root)
    assert graph["agui_replay.pkg.two"] == {"agui_replay.other": 5}
    assert graph["agui_replay.pkg"] == {"agui_replay.pkg.one": 1, "agui_replay.pkg.two": 2}
    assert find_cycles(graph) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from agui_replay.cli import main\n", {"agui_replay.cli": 1}),
        ("from .cli.serve import replay_app\n", {"agui_replay.cli.serve": 1}),
        ("from . import cli\n", {"agui_replay.cli": 1}),
        ("def f():\n    import agui_replay.cli.show\n", {"agui_replay.cli.show": 2}),
    ],
)
def test_every_spelling_of_an_import_of_the_cli_is_seen(
    tmp_path: Path, source: str, expected: dict[str, int]
) -> None:
    root = _tree(
        tmp_path,
        {
            "__init__.py": "",
            "viewer.py": source,
            "cli/__init__.py": "",
            "cli/serve.py": "",
            "cli/show.py": "",
        },
    )
    assert import_graph(root)["agui_replay.viewer"] == expected


def test_the_cli_and_the_viewer_share_the_recordings_layer() -> None:
    # In a fresh interpreter: pytester (tests/package/test_docs.py) restores sys.modules after each
    # inner run, so in this process a module imported there may be imported again later, and
    # then two copies of one class are not the same object whatever the CLI does.
    check = (
        "from agui_replay import cassette\n"
        "from agui_replay.cli import _show\n"
        "assert _show.load_recording is cassette.load_recording\n"
        "assert _show.walk is cassette.walk\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_no_two_modules_share_a_name_or_differ_only_by_a_plural() -> None:
    # A name says one concern: `_session` in three packages, or `_interaction` beside
    # `_interactions`, sent a reader to the wrong file.
    seen: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.stem in ("__init__", "__main__"):
            continue
        key = path.stem.lstrip("_").removesuffix("s")
        seen.setdefault(key, []).append(str(path.relative_to(PACKAGE)))
    assert {key: paths for key, paths in seen.items() if len(paths) > 1} == {}
