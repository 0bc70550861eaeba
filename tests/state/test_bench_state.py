"""benchmarks/bench_state.py runs: a quick smoke run (it checks outcomes, not timings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "benchmarks" / "bench_state.py"


def test_the_state_benchmark_runs_quickly_and_prints_both_tables() -> None:
    # The script asserts the outcome of every publish it times (Delta or Snapshot) and that a
    # stream applies without errors, so a run that exits 0 checked those too.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for row in (
        "| publish, one field -> Delta |",
        "| publish, 1% of the objects -> Delta |",
        "| publish, every object -> Delta |",
        "| publish, a new document -> Snapshot |",
        "| publish, a new document after a delta -> Snapshot |",
        "| publish, a new document, then one field -> Snapshot, Delta |",
        "| `patch.diff`, one field",
        "| `jsonpatch.make_patch`, every object |",
        "| append `add /log/-` |",
        "| replace `/count` |",
    ):
        assert row in out, (row, out)
    assert "growth exponent" in out


def test_the_isolated_table_prints_every_row() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--no-stream", "--isolated"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| publish, a new document -> Snapshot |" in done.stdout
    assert "| publish, a new document, then one field -> Snapshot, Delta |" in done.stdout
    assert "growth exponent" not in done.stdout


def test_one_cell_alone_prints_its_two_ratios() -> None:
    # What --isolated runs in a fresh interpreter for every cell: its ratios as JSON.
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--cell", "publish", "a new document", "84", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    ratios = json.loads(done.stdout)  # a publish's and jsonpatch's; no timing is judged here
    assert len(ratios) == 2
    assert all(isinstance(r, float) and r > 0 for r in ratios), ratios


def test_the_splice_comparison_runs_and_prints_both_arms() -> None:
    script = SCRIPT.with_name("bench_state_splice.py")
    done = subprocess.run(
        [sys.executable, str(script), "84", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for label in ("one field: spliced ", "1% of the objects: spliced "):
        assert label in done.stdout, done.stdout
    assert done.stdout.count("encoded ") == 2
