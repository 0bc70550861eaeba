"""The size limits of issue 40: no function over 80 lines, no module over 800 lines.

A function's length runs from its ``def`` line to its last line, docstring and nested
functions included (a nested function is measured on its own too); a module's is its line
count. Each offender is named as ``file:line`` so the message says where to cut.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "agui_replay"
MAX_FUNCTION_LINES = 80
MAX_MODULE_LINES = 800


def oversized(root: Path = PACKAGE) -> list[str]:
    """Every function and module under ``root`` over its limit, as ``file:line`` lines."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            found.append(f"{where}:1 module of {lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(
                        f"{where}:{node.lineno} function {node.name} of {length} lines "
                        f"(at most {MAX_FUNCTION_LINES})"
                    )
    return sorted(found)


def test_no_function_or_module_in_the_package_is_over_its_size_limit() -> None:
    offenders = oversized()
    assert not offenders, "over the size limits of issue 40:\n" + "\n".join(offenders)


def test_a_long_function_and_a_long_module_are_named_with_file_and_line(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    lines = [f"x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES)]
    # def line + 79 body lines: exactly at the limit; def line + 80: one over.
    (root / "fits.py").write_text("def short():\n" + "".join("    " + x for x in lines[:-1]))
    method = "class C:\n    async def m(self):\n" + "".join("        " + x for x in lines)
    (root / "long.py").write_text('"""Doc."""\n\n\n' + method)
    (root / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (root / "sub" / "edge.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    assert oversized(root) == [
        f"pkg/big.py:1 module of {MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})",
        f"pkg/long.py:5 function m of {MAX_FUNCTION_LINES + 1} lines "
        f"(at most {MAX_FUNCTION_LINES})",
    ]
