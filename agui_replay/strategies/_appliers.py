"""Other clients' JSON Patch appliers, for :func:`agui_replay.strategies.assert_state_round_trip`.

A STATE_DELTA we publish must rebuild the same document in every client, not only ours:

- ``"jsonpatch"``: the Python ``jsonpatch`` package (what Python clients use), applied to a
  copy, as a client would;
- ``"fast-json-patch"``: the npm package the TypeScript client applies deltas with
  (``applyPatch(state, delta, true, false)``, as ``defaultApplyEvents`` does), run by Node in one
  long-lived helper process. It is found in ``$AGUI_REPLAY_FAST_JSON_PATCH`` (the package
  folder), in ``node_modules`` of ``$AGUI_REPLAY_JS_CACHE`` or of the folders under
  ``~/.cache/agui-replay/`` (where the test suite installs the reference client), or wherever
  Node resolves it from the working directory.

JavaScript has one number type: fast-json-patch's documents are compared with ``1`` and
``1.0`` (and ``-0.0`` and ``0``) taken as equal; the Python appliers are compared strictly.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agui_replay.errors import InvalidArgumentError

__all__ = ["APPLIERS", "Applier", "fast_json_patch_path", "get_applier", "js_number_view"]

Applier = Callable[[Any, list[dict[str, Any]]], Any]
APPLIERS = ("session", "jsonpatch", "fast-json-patch")

_SCRIPT = r"""
const patch = require(process.argv[1]);
const lines = require("readline").createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { doc, ops } = JSON.parse(line);
  let out;
  try {
    out = { doc: patch.applyPatch(doc, ops, true, false).newDocument };
  } catch (error) {
    out = { error: String(error && error.message ? error.message : error) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
"""


def fast_json_patch_path() -> Path | None:
    """The folder of an installed ``fast-json-patch`` npm package Node can load, or None."""
    if shutil.which("node") is None:
        return None
    candidates: list[Path] = []
    explicit = os.environ.get("AGUI_REPLAY_FAST_JSON_PATCH")
    if explicit:
        candidates.append(Path(explicit))
    cache = os.environ.get("AGUI_REPLAY_JS_CACHE")
    if cache:
        candidates.append(Path(cache) / "node_modules" / "fast-json-patch")
    home = Path.home() / ".cache" / "agui-replay"
    if home.is_dir():
        candidates.extend(sorted(home.glob("*/node_modules/fast-json-patch")))
    for candidate in candidates:
        if (candidate / "package.json").is_file():
            return candidate
    done = subprocess.run(
        ["node", "-e", "console.log(require.resolve('fast-json-patch/package.json'))"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0 and done.stdout.strip():
        return Path(done.stdout.strip()).parent
    return None


class _NodeApplier:
    """fast-json-patch in one Node process, fed one ``{doc, ops}`` line at a time."""

    def __init__(self, package: Path) -> None:
        self._process = subprocess.Popen(
            ["node", "-e", _SCRIPT, str(package)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        atexit.register(self.close)

    def __call__(self, doc: Any, ops: list[dict[str, Any]]) -> Any:
        process = self._process
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(json.dumps({"doc": doc, "ops": ops}) + "\n")
        process.stdin.flush()
        answer = json.loads(process.stdout.readline())
        if "error" in answer:
            raise ValueError(f"fast-json-patch refused the delta: {answer['error']}")
        return answer["doc"]

    def close(self) -> None:
        if self._process.poll() is None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(timeout=10)
        if self._process.stdout is not None:
            self._process.stdout.close()


_node: _NodeApplier | None = None


def _jsonpatch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    import jsonpatch  # the test extra; imported only when asked for

    return jsonpatch.apply_patch(doc, ops, in_place=False)


def get_applier(name: str) -> Applier:
    """The applier called ``name`` (``"jsonpatch"`` or ``"fast-json-patch"``)."""
    global _node
    if name == "jsonpatch":
        try:
            import jsonpatch  # noqa: F401
        except ImportError:
            raise InvalidArgumentError(
                'appliers=["jsonpatch"] needs the jsonpatch package (pip install jsonpatch, or '
                "the test extra)"
            ) from None
        return _jsonpatch
    if name == "fast-json-patch":
        if _node is None:
            package = fast_json_patch_path()
            if package is None:
                raise InvalidArgumentError(
                    'appliers=["fast-json-patch"] needs Node and the fast-json-patch npm '
                    "package: install it (npm install fast-json-patch) and point "
                    "AGUI_REPLAY_FAST_JSON_PATCH at its folder"
                )
            _node = _NodeApplier(package)
        return _node
    raise InvalidArgumentError(f"unknown applier {name!r}: use one of {APPLIERS}")


_SAFE = 2**53


def js_number_view(value: Any) -> Any:
    """``value`` as a JavaScript client holds it: one number type, so an integral float within
    2**53 is an integer (``-0.0`` is 0) and a number beyond it is a float."""
    kind = type(value)
    if kind is float:
        return int(value) if value.is_integer() and abs(value) < _SAFE else value
    if kind is int:
        return float(value) if abs(value) >= _SAFE else value
    if kind is dict:
        return {k: js_number_view(v) for k, v in value.items()}
    if kind is list:
        return [js_number_view(v) for v in value]
    return value
