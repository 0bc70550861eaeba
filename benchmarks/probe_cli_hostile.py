"""Hostile input files through every file-reading CLI command: does any of them crash?

Run: ``python benchmarks/probe_cli_hostile.py`` (``--keep DIR`` keeps the files).

Each hostile file (deep nesting, huge integers, NaN / Infinity, an SSE ``retry:`` of thousands
of digits, wrong types where the format wants objects, NUL bytes, truncated documents, a
``meta.provider.base_path`` that is not a path...) is given, as a cassette, an SSE capture and
a JSON-lines file, to ``show``, ``verify``, ``diff``, ``state``, ``view`` and ``serve``, each
command run as a user runs it: a separate ``agui-replay`` process. A run is counted *clean*
when it exits 0, 1 or 2 and its stderr holds no Python traceback; the probe prints the count
of runs and of unclean ones, with the first lines of each unclean run's stderr. ``serve`` is
given a 3 s limit: a file it accepts is served (and then stopped), which is clean too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

DEPTH = 1_000


def _cassette(events: object, **extra: object) -> str:
    doc = {"version": 2, "library_version": "x", "recorded_at": "", **extra}
    doc["runs"] = [{"input": {"threadId": "t", "runId": "r"}, "events": events}]
    return json.dumps(doc)


def hostile_documents() -> dict[str, str]:
    """name -> the JSON text of a cassette (the SSE / JSON-lines forms are derived)."""
    start = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    end = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    deep = "[" * DEPTH + "]" * DEPTH
    docs = {
        "deep-array": _cassette([start, "@DEEP@", end]).replace('"@DEEP@"', deep),
        "deep-state": _cassette(
            [start, {"type": "STATE_SNAPSHOT", "snapshot": "@DEEP@"}, end]
        ).replace('"@DEEP@"', "[" * 500 + "]" * 500),
        "deep-broken": "{" + '"a": [' * DEPTH,
        "big-int": _cassette(
            [start, {"type": "STATE_SNAPSHOT", "snapshot": {"n": "@BIG@"}}, end]
        ).replace('"@BIG@"', "9" * 4_301),
        "nan": _cassette([start, {"type": "STATE_SNAPSHOT", "snapshot": {"n": "@N@"}}, end])
        .replace('"@N@"', "NaN"),
        "infinity": _cassette([start, {"type": "STATE_SNAPSHOT", "snapshot": "@N@"}, end])
        .replace('"@N@"', "-Infinity"),
        "events-not-a-list": _cassette({"type": "RUN_STARTED"}),
        "event-not-an-object": _cassette([start, 5, end]),
        "type-not-a-string": _cassette([start, {"type": ["x"]}, end]),
        "runs-not-a-list": json.dumps({"version": 2, "runs": "x"}),
        "top-level-array": "[1, 2, 3]",
        "top-level-string": '"just a string"',
        "truncated": _cassette([start, end])[:-7],
        "nul-bytes": _cassette([start, end]).replace('"t"', '"\\u0000t\\u0000"'),
        "raw-nul": _cassette([start, end])[:20] + "\x00" + _cassette([start, end])[20:],
        "bad-base-path": _cassette([start, end], meta={"provider": {"base_path": "x"}}),
        "version-huge": _cassette([start, end]).replace('"version": 2', '"version": ' + "9" * 50),
        "empty": "",
        "bom-garbage": "\ufeff\ufeff{]",
        "delta-not-a-string": _cassette(
            [start, {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": {"x": 1}}, end]
        ),
        "patch-deep-test": _cassette(
            [
                start,
                {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
                {"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/a", "value": "@D@"}]},
                end,
            ]
        ).replace('"@D@"', "[" * 400 + "]" * 400),
        "messages-wrong": _cassette([start, {"type": "MESSAGES_SNAPSHOT", "messages": [5]}, end]),
    }
    return docs


def _sse(doc: str) -> str:
    try:
        parsed = json.loads(doc)
        events = parsed["runs"][0]["events"]
        frames = [json.dumps(e) for e in events] if isinstance(events, list) else [doc]
    except Exception:  # a hostile document stays as it is
        frames = [doc.replace("\n", " ")]
    return "retry: " + "9" * 5_000 + "\n\n" + "".join(f"data: {f}\n\n" for f in frames)


def _jsonl(doc: str) -> str:
    try:
        events = json.loads(doc)["runs"][0]["events"]
        lines = [json.dumps(e) for e in events] if isinstance(events, list) else [doc]
    except Exception:
        lines = [doc.replace("\n", " ")]
    return "\n".join(lines) + "\n"


def write_files(folder: Path) -> list[Path]:
    paths = []
    for name, doc in hostile_documents().items():
        for suffix, text in ((".json", doc), (".sse", _sse(doc)), (".jsonl", _jsonl(doc))):
            path = folder / f"{name}{suffix}"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            paths.append(path)
    return paths


def commands(path: Path, good: Path, out: Path) -> list[list[str]]:
    return [
        ["show", str(path)],
        ["verify", str(path)],
        ["diff", str(good), str(path)],
        ["state", str(path)],
        ["view", str(path), "-o", str(out / (path.name + ".html"))],
        ["serve", str(path), "--port", "0", "--speed", "0"],
    ]


def run_one(argv: list[str]) -> tuple[list[str], int, str]:
    exe = shutil.which("agui-replay", path=str(Path(sys.executable).parent)) or "agui-replay"
    try:
        done = subprocess.run(
            [exe, *argv],
            capture_output=True,
            text=True,
            timeout=3 if argv[0] == "serve" else 120,
            env={**os.environ, "NO_COLOR": "1"},
            check=False,
        )
    except subprocess.TimeoutExpired as expired:
        err = expired.stderr.decode() if isinstance(expired.stderr, bytes) else expired.stderr
        return argv, 0, err or ""  # served: a file it accepted
    return argv, done.returncode, done.stderr


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="agui-hostile-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        good = folder / "good.json"
        good.write_text(
            _cassette(
                [
                    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
                ]
            ),
            encoding="utf-8",
        )
        runs = [argv for p in write_files(folder) for argv in commands(p, good, folder)]
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(run_one, runs))
        unclean = [
            (argv, code, err)
            for argv, code, err in results
            if code not in (0, 1, 2) or "Traceback (most recent call last)" in err
        ]
        print(f"{len(results)} runs, {len(unclean)} unclean (exit code not 0/1/2, or a traceback)")
        for argv, code, err in unclean[:20]:
            tail = err.strip().splitlines()[-1:] or [""]
            print(f"  agui-replay {' '.join(Path(a).name for a in argv)}: exit {code}: {tail[0]}")
        return 1 if unclean else 0
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
