"""Every docs page names what it needs beyond the README's install line.

A reader who ran the README's ``pip install`` and then copies a page's code must not meet an
``ImportError`` the page did not warn about. For each page: every module its Python blocks
import (``# file:`` blocks included) is in the standard library, is the page's own (a file the
page writes), or comes with a distribution that the README's line installs or that a
``pip install`` on the page names, with everything those require.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import shlex
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from tests.package.test_docs import PAGES, ROOT, extract_blocks

PIP_INSTALL = re.compile(r"pip install ([^`\n]+)")


def _requested(line: str) -> list[tuple[str, frozenset[str]]]:
    """The distributions (name, extras) one ``pip install`` line asks for."""
    wanted = []
    try:
        tokens = shlex.split(line, comments=True)
    except ValueError:  # a line that ends inside a string of the page's code
        tokens = line.split()
    for token in tokens:
        if token.startswith("-") or "$(" in token:
            continue
        token = token.strip("\"',;:)").rstrip(".")
        if token.startswith("./") or token.startswith("."):  # a clone: ./agui_replay[extras]
            token = token.lstrip("./")
        try:
            requirement = Requirement(token)
        except InvalidRequirement:
            continue
        wanted.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return wanted


def _installs(text: str) -> list[tuple[str, frozenset[str]]]:
    return [want for line in PIP_INSTALL.findall(text) for want in _requested(line)]


def _applies(marker: Marker | None, extras: Iterable[str]) -> bool:
    if marker is None:
        return True
    return any(marker.evaluate({"extra": extra}) for extra in (*extras, ""))


@cache
def _closure(name: str, extras: frozenset[str]) -> frozenset[str]:
    """``name`` with ``extras`` and every distribution it requires, as installed here."""
    seen: set[str] = set()
    todo = [(name, extras)]
    while todo:
        dist_name, dist_extras = todo.pop()
        key = f"{dist_name}{sorted(dist_extras)}"
        if key in seen:
            continue
        seen.add(key)
        seen.add(dist_name)
        try:
            requires = metadata.requires(dist_name) or []
        except metadata.PackageNotFoundError:
            continue
        for spec in requires:
            requirement = Requirement(spec)
            if _applies(requirement.marker, dist_extras):
                todo.append((canonicalize_name(requirement.name), frozenset(requirement.extras)))
    return frozenset(n for n in seen if "[" not in n)


def _provided(wanted: Iterable[tuple[str, frozenset[str]]]) -> set[str]:
    return {dist for name, extras in wanted for dist in _closure(name, extras)}


@cache
def _distributions_of() -> dict[str, set[str]]:
    return {
        module: {canonicalize_name(d) for d in dists}
        for module, dists in metadata.packages_distributions().items()
    }


def _imports(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


README_DISTS = _provided(
    [want for want in _installs((ROOT / "README.md").read_text()) if want[0] != "setuptools"]
)
DOCS = [page for page in PAGES if page.name != "README.md"]


def _missing(page: Path) -> dict[str, str]:
    """The modules the page imports that neither the README's line nor the page installs."""
    blocks = extract_blocks(page)
    own = {Path(b.file).parts[0].removesuffix(".py") for b in blocks if b.file}
    provided = README_DISTS | _provided(_installs(page.read_text()))
    missing = {}
    for block in blocks:
        python = block.lang in {"python", "py"} or (block.file or "").endswith(".py")
        if not python:
            continue
        for module in _imports(block.text):
            top = module.split(".")[0]
            if top in sys.stdlib_module_names or top in own or top == "agui_replay":
                continue
            if not _brought(module, provided):
                missing[module] = block.where
    return missing


def _brought(module: str, provided: set[str]) -> bool:
    """Whether ``module`` (dotted) comes with one of the ``provided`` distributions."""
    top = module.split(".")[0]
    dists = _distributions_of().get(top)
    if dists and dists & provided:
        return True
    # Not installed here (a page's framework), or a namespace package (google.adk): named by
    # its distribution (agent_framework: agent-framework-ag-ui; google.adk: google-adk).
    names = [".".join(module.split(".")[:2])] + ([top] if dists is None else [])
    prefixes = {canonicalize_name(name) for name in names if "." in name or dists is None}
    return any(d == p or d.startswith(p + "-") for d in provided for p in prefixes)


def test_the_readme_line_is_read() -> None:
    assert {"agui-replay", "openai", "starlette", "httpx", "syrupy", "pytest"} <= README_DISTS
    assert "requests" not in README_DISTS


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.relative_to(ROOT / "docs").as_posix())
def test_a_page_names_what_it_needs_beyond_the_readme(page: Path) -> None:
    missing = _missing(page)
    assert not missing, (
        f"{page.relative_to(ROOT)} imports what the README's install line does not bring and "
        f"the page names in no `pip install`: "
        + ", ".join(f"{m} ({where})" for m, where in sorted(missing.items()))
    )
