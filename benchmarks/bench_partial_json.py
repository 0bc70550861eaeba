"""Partial JSON for predictive state: our incremental parser against the two libraries at hand.

Run: ``.venv/bin/python benchmarks/bench_partial_json.py``

A tool call's argument text arrives in fragments and after each one the predicted value is
needed. Measured per whole stream, medians of repeated runs, in one process:

- ``PartialJSON.feed`` (agui_replay.server._predictive): each character scanned once, a changed
  value parsed by ``json.loads`` from the safe prefix plus closing brackets;
- ``jiter.from_json(..., partial_mode="trailing-strings")`` on the whole text so far, per fragment;
- ``partial_json_parser.loads`` on the whole text so far, per fragment;
- the baseline: ``orjson.loads`` of the *complete* document once per fragment (what a C parser
  costs for re-reading the text every time, without any partial handling).

Ratios are against the baseline. Also printed: whether each library ever shows a value that the
final document contradicts (a number that later grows, half a surrogate pair).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import jiter
import orjson
import partial_json_parser

from agui_replay.providers._chunking import by_char, by_size
from agui_replay.server._partial_json import PartialJSON
from examples.recipe.recipe import CARBONARA


def ours(fragments: list[str]) -> Any:
    parser = PartialJSON()
    for fragment in fragments:
        parser.feed(fragment)
    return parser.value


def with_jiter(fragments: list[str]) -> Any:
    text, value = "", None
    for fragment in fragments:
        text += fragment
        value = jiter.from_json(text.encode(), partial_mode="trailing-strings")
    return value


def with_partial_json_parser(fragments: list[str]) -> Any:
    text, value = "", None
    for fragment in fragments:
        text += fragment
        value = partial_json_parser.loads(text)
    return value


def baseline(fragments: list[str]) -> Any:
    whole = "".join(fragments).encode()
    value = None
    for _ in fragments:
        value = orjson.loads(whole)
    return value


def median_seconds(fn: Callable[[list[str]], Any], fragments: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(fragments)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def contradictions(fn: Callable[[str], Any], text: str, final: Any) -> int:
    """How many prefixes of ``text`` give a value with a number the final one does not have
    (or a string that is not a prefix of the final one)."""

    def fits(p: Any, f: Any) -> bool:
        if isinstance(p, str):
            return isinstance(f, str) and f.startswith(p) and "\ud83c" not in p
        if isinstance(p, dict):
            return isinstance(f, dict) and all(k in f and fits(v, f[k]) for k, v in p.items())
        if isinstance(p, list):
            return isinstance(f, list) and all(fits(v, f[i]) for i, v in enumerate(p))
        return bool(p == f)

    bad = 0
    for end in range(1, len(text) + 1):
        try:
            value = fn(text[:end])
        except Exception:
            continue
        if value is not PartialJSON.NOTHING and not fits(value, final):
            bad += 1
    return bad


def main() -> None:
    big = {**CARBONARA, "instructions": [f"Step {i}: stir {i * 7} times" for i in range(300)]}
    documents = {
        "example recipe": {"recipe": CARBONARA, "serves": 4},
        "300 steps": {"recipe": big, "serves": 4},
    }
    for name, document in documents.items():
        text = json.dumps(document, ensure_ascii=True)
        for chunking, fragments in (("8-char", by_size(text, 8)), ("1-char", by_char(text))):
            repeat = 5 if len(fragments) > 2000 else 20
            base = median_seconds(baseline, fragments, repeat)
            print(f"{name} ({len(text)} chars, {len(fragments)} fragments, {chunking})")
            print(f"  baseline orjson.loads x{len(fragments)}: {base * 1000:8.2f} ms  (1.0)")
            for label, fn in (
                ("PartialJSON (ours)", ours),
                ("jiter partial mode", with_jiter),
                ("partial-json-parser", with_partial_json_parser),
            ):
                if fn is with_partial_json_parser and len(fragments) > 2000:
                    repeat = 1
                seconds = median_seconds(fn, fragments, repeat)
                print(f"  {label:22s}: {seconds * 1000:8.2f} ms  ({seconds / base:6.1f}x)")

    text = json.dumps({"recipe": CARBONARA, "serves": 12}, ensure_ascii=True)
    final = json.loads(text)

    def ours_once(prefix: str) -> Any:
        parser = PartialJSON()
        parser.feed(prefix)
        return parser.value

    print("prefixes whose value the final document contradicts (of", len(text), "):")
    for label, fn in (
        ("PartialJSON (ours)", ours_once),
        (
            "jiter partial mode",
            lambda t: jiter.from_json(t.encode(), partial_mode="trailing-strings"),
        ),
        ("partial-json-parser", partial_json_parser.loads),
    ):
        print(f"  {label:22s}: {contradictions(fn, text, final)}")


if __name__ == "__main__":
    main()
