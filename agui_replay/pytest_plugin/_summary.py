"""The ``agui-replay`` section of pytest's terminal summary: the counts, then each cassette that
needs a look (recorded, failed, not written, pending, stale, unused), then what to do next.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agui_replay.pytest_plugin._ledger import Ledger
from agui_replay.pytest_plugin._options import SessionOptions
from agui_replay.pytest_plugin._unused import rename_hints

Line = tuple[str, bool]
"""A summary line and whether it is shown red."""


@dataclass
class Cleanup:
    """What the controller found and removed at the session's start and end."""

    unused: list[str]
    pruned: list[str]
    stale_removed: list[str]


def summary_lines(
    options: SessionOptions,
    ledger: Ledger,
    cleanup: Cleanup,
    *,
    verbose: bool,
    kept_snapshots: list[str],
) -> list[Line]:
    """The section's lines (none: the section is left out). ``kept_snapshots`` are the lines
    about the snapshots syrupy kept."""
    if not (
        ledger.recorded
        or ledger.replayed
        or ledger.ignored
        or ledger.refreshed
        or ledger.failed
        or ledger.discarded
        or ledger.mismatched
        or cleanup.unused
        or cleanup.pruned
        or cleanup.stale_removed
        or ledger.pending
        or ledger.stale
        or ledger.kept_snapshots
        or ledger.background
        or ledger.large
    ):
        return []
    lines: list[Line] = [
        (
            f"  removed a stale temporary file of an interrupted write: {options.shown(Path(p))}",
            False,
        )
        for p in cleanup.stale_removed
    ]
    lines += _counts(options, ledger, cleanup)
    lines += _cassettes(ledger, verbose=verbose)
    lines += _stale(options, ledger)
    lines += [(line, False) for line in kept_snapshots]
    lines += _unused(options, ledger, cleanup)
    return lines


def _counts(options: SessionOptions, ledger: Ledger, cleanup: Cleanup) -> list[Line]:
    renewed = f" ({len(ledger.renewed)} stale, agui_on_stale = record)" if ledger.renewed else ""
    counts = (
        f"{len(ledger.recorded - ledger.unchanged)} cassette(s) recorded{renewed}, "
        + (f"{len(ledger.unchanged)} re-recorded unchanged, " if ledger.unchanged else "")
        + (f"{len(ledger.refreshed)} refreshed, " if options.refresh else "")
        + f"{len(ledger.replayed)} replayed, {len(cleanup.unused)} unused"
        + (f", {len(cleanup.pruned)} deleted" if cleanup.pruned else "")
        + (f", {len(ledger.failed)} failed" if ledger.failed else "")
        + (f", {len(ledger.discarded)} not written" if ledger.discarded else "")
        + (f", {len(ledger.mismatched)} did not replay" if ledger.mismatched else "")
    )
    lines = [(counts, False)]
    if ledger.ignored:
        tests = "test" if len(ledger.ignored) == 1 else "tests"
        lines.append(
            (f"replayed with ignored fields: {len(ledger.ignored)} {tests} (match_ignore)", False)
        )
    if ledger.faulted:
        tests = "test" if len(ledger.faulted) == 1 else "tests"
        lines.append((f"replayed with faults: {len(ledger.faulted)} {tests}", False))
    return lines + _background(ledger)


def _background(ledger: Ledger) -> list[Line]:
    """Background requests answered locally, and recorded exchanges worth dropping."""
    lines: list[Line] = []
    if ledger.background:
        hosts = ", ".join(f"{h} ({n})" for h, n in sorted(ledger.background.items()))
        total = sum(ledger.background.values())
        lines.append((f"background requests answered locally: {total} ({hosts})", False))
    lines += [
        (f"  large:    {note}: an exchange over 256 KB (drop_hosts drops it)", False)
        for note in sorted(ledger.large)
    ]
    return lines


def _cassettes(ledger: Ledger, *, verbose: bool) -> list[Line]:
    # a renewed entry is "path (N days old)": its recorded line says why it was recorded
    ages = dict(entry.removesuffix(")").rsplit(" (", 1) for entry in ledger.renewed)
    lines = [
        (f"  recorded: {p} (stale, {ages[p]}; agui_on_stale = record)", False)
        if p in ages
        else (f"  recorded: {p}", False)
        for p in sorted(ledger.recorded - ledger.unchanged)
    ]
    lines += [
        (f"  refreshed: {p} (events changed; interactions kept)", False)
        for p in sorted(ledger.refreshed)
    ]
    lines += [
        (f"  failed:   {p} (the upstream failed; nothing written)", True)
        for p in sorted(ledger.failed)
    ]
    lines += [
        (f"  did not replay: {p} (its test says why)", True) for p in sorted(ledger.mismatched)
    ]
    lines += [
        (f"  not written: {p} (its test failed; record_on_failure=True keeps it)", True)
        for p in sorted(ledger.discarded)
    ]
    if verbose:
        lines += [(f"  replayed: {p}", False) for p in sorted(ledger.replayed)]
        lines += [(f"  replayed with ignored fields: {t}", False) for t in sorted(ledger.ignored)]
        lines += [(f"  replayed with faults: {t}", False) for t in sorted(ledger.faulted)]
    if ledger.pending:
        lines.append(
            (f"pending changes: {len(ledger.pending)} (review with agui-replay review)", False)
        )
        lines += [(f"  pending:  {p}", False) for p in sorted(ledger.pending)]
    return lines


def _stale(options: SessionOptions, ledger: Ledger) -> list[Line]:
    if not ledger.stale:
        return []
    fail = options.on_stale == "fail"
    limit = f"older than agui_max_age ({options.max_age} days)"
    lines = [(f"stale cassettes: {len(ledger.stale)} {limit}", fail)]
    lines += [(f"  stale:    {entry}", False) for entry in sorted(ledger.stale)]
    if fail:
        lines.append(("stale cassettes fail the session (agui_on_stale = fail)", True))
    tests = " ".join(sorted(ledger.stale_tests))
    if options.on_stale == "record":
        lines.append(
            (
                "re-record them with a provider key set (agui_on_stale = record), e.g. "
                f"OPENAI_API_KEY=... pytest {tests}",
                False,
            )
        )
    else:
        command = f"pytest {tests} --agui-record"
        lines.append((f"re-record them with `{command}` (against the real provider)", False))
    return lines


def _unused(options: SessionOptions, ledger: Ledger, cleanup: Cleanup) -> list[Line]:
    lines = [(f"  deleted:  {p} (unused; --agui-prune-unused)", False) for p in cleanup.pruned]
    lines += [(f"  unused:   {p}", False) for p in cleanup.unused]
    lines += [(hint, False) for hint in rename_hints(ledger.missing, cleanup.unused)]
    if not cleanup.unused:
        return lines
    if options.fail_on_unused:
        lines.append(("unused cassettes fail the session (--agui-fail-on-unused)", True))
    elif options.prune:
        lines.append(
            (
                "the unused cassettes left could not be deleted (see their permissions)",
                False,
            )
        )
    else:
        lines.append(
            (
                "delete unused cassettes with --agui-prune-unused, or fail on them with "
                "--agui-fail-on-unused",
                False,
            )
        )
    return lines
