"""The replay side of a session: a run served from its recorded interactions, its input checked
against the recorded one, and its stream and requests judged at its end (or, refreshing, its
new events kept)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import orjson

from agui_replay._jsondiff import json_diff
from agui_replay.cassette import CassetteRun
from agui_replay.normalize import Normalizer
from agui_replay.recording._comparison import (
    check_replayed,
    compared,
    converted_mismatch,
    matches_recording,
    short,
)
from agui_replay.recording._modes import MissingCassetteError, RecordMode, ReplayMismatchError
from agui_replay.recording._refresh import same_but_names
from agui_replay.recording._runs import canonical

if TYPE_CHECKING:
    from agui_replay.recording._fault_checks import FaultChecks
    from agui_replay.recording._pending_change import PendingChange
    from agui_replay.recording._refresh import Refresh
    from agui_replay.recording._runs import PendingRun, RunRecord
    from agui_replay.recording._session import CassetteSession

__all__ = ["Replayer"]

_log = logging.getLogger("agui_replay.session")


class Replayer:
    """Replays a session's runs from its cassette, one run at a time."""

    def __init__(
        self,
        session: CassetteSession,
        *,
        faults: FaultChecks,
        refresh: Refresh,
        pending: PendingChange,
    ) -> None:
        self.session = session
        self.faults = faults
        self.refreshing = refresh
        self.pending = pending
        # The runs as recorded, read in order by one normalizer (as the live runs are by
        # another), so ids carried from run to run keep one name across the cassette.
        self.recorded_ids = Normalizer(rules=session.normalizers)

    def begin(self, pending: PendingRun) -> None:
        """Start replaying run ``pending``: check its input, set the provider to serve it."""
        __tracebackhide__ = True  # the error is the test's: show its line
        session = self.session
        recorded_runs = session.recorded_runs
        pending.recorded = self._recorded_run(pending.index, recorded_runs)
        self._check_input(pending)
        self.faults.check_targets(recorded_runs, session.tape)
        session.provider._replay(
            pending.recorded.interactions,
            session.match,
            session.match_ignore,
            faults=self.faults.of_providers,
            first_request=sum(len(r.interactions) for r in recorded_runs[: pending.index]),
        )

    def _recorded_run(self, index: int, recorded_runs: list[CassetteRun]) -> CassetteRun:
        __tracebackhide__ = True  # the error is the test's: show its line
        if index < len(recorded_runs):
            return recorded_runs[index]
        command = self.session.record_command
        if self.session.mode is RecordMode.ONCE:
            how = (
                "record mode 'once' never changes an existing cassette: append the new run "
                f"with `{command.replace('--agui-record', '--agui-record-mode=new')}`"
                f" or re-record it all with `{command}`"
            )
        else:
            how = f"re-record it with `{command}`"
        raise MissingCassetteError(
            f"run #{index} (agui.run call {index + 1}) is not in the cassette, which holds "
            f"{len(recorded_runs)} run(s); {how}.",
            path=str(self.session.path),
        )

    def _check_input(self, pending: PendingRun) -> None:
        __tracebackhide__ = True  # the error is the test's: show its line
        session = self.session
        assert pending.recorded is not None
        recorded = pending.recorded.input
        if session.normalize:
            # Both sides normalized: an input built from the raw events of the run before (with
            # the ids minted then) and one built from the normalized events both match.
            recorded = self.recorded_ids.input(recorded)
        now = pending.normalized_input
        if canonical(now) == canonical(recorded):
            return
        renamed = same_but_names(recorded, now)
        if renamed and session.refresh:
            # only the names normalization gives ids moved (a new naming rule): the same
            # question, stored with the new names
            self.refreshing.renamed_inputs.add(pending.index)
            _log.debug("%s: run #%d input read with new id names", session.path, pending.index)
            return
        diffs = json_diff(recorded, now)
        shown = "\n".join(
            f"  {p or '/'}: recorded {short(a)} != now {short(b)}" for p, a, b in diffs
        )
        where, command = session.path, session.record_command
        if renamed:
            refresh = command.replace("--agui-record", "--agui-refresh")
            raise ReplayMismatchError(
                f"{where}: run #{pending.index} starts from the recorded input with its ids "
                f"named otherwise (the cassette was normalized under an older naming rule):\n"
                f"{shown}\nStore the new names offline with `{refresh}` (no API key, no "
                "network; the recorded interactions are kept)."
            )
        if session.refresh:
            first = (diffs[0][0] if diffs else "") or "/"
            raise self.refreshing.refuse(
                pending.index,
                f"it starts from another input than the recorded one (first differing "
                f"field: {first})",
                shown,
            )
        raise ReplayMismatchError(
            f"{where}: run #{pending.index} starts from another input than the recorded "
            f"one:\n{shown}\nRe-record with `{command}` if the change is intended."
        )

    def stand_in_mismatches(self, pending: PendingRun) -> list[str]:
        """What the stand-ins answered with a mismatch during run ``pending``: the provider's
        request differences (a replayed run), then the requests the tape matched to nothing."""
        session = self.session
        fake = session.provider.fake if pending.replay else None
        found = [str(e) for e in fake.errors] if fake is not None else []
        tape = session.tape
        if tape is not None:
            found += list(tape.errors[pending.tape_errors_before :])
        return found

    def failed_on_mismatch(
        self, pending: PendingRun, failure: BaseException | None
    ) -> ReplayMismatchError | None:
        """The :class:`ReplayMismatchError` of run ``pending`` when a stand-in answered one of
        its requests with a mismatch (``None``: none did): raised in place of ``failure``, the
        error the agent or its framework made of that answer."""
        found = self.stand_in_mismatches(pending)
        if not found:
            return None
        session = self.session
        return converted_mismatch(
            str(session.path),
            pending.index,
            found,
            failure,
            record_command=session.record_command,
        )

    def served(self, pending: PendingRun) -> list[dict[str, Any]]:
        """At the run's end: the recorded interactions it was served from (a copy, so a test
        reads the same on replay as when it recorded, and cannot change the cassette)."""
        session = self.session
        fake = pending.fake = session.provider.fake
        if fake is not None:
            session.ignored_matches += [f"run #{pending.index} {what}" for what in fake.ignored]
        if pending.recorded is None:
            return []
        copied: list[dict[str, Any]] = orjson.loads(orjson.dumps(pending.recorded.interactions))
        return copied

    def expect(self, pending: PendingRun, normalized: list[Any]) -> None:
        """Note the recorded events (normalized as today) and whether the new stream already
        equals them; the recording is stored normalized, so only the new stream needed it."""
        recorded = pending.recorded
        if recorded is None:
            return
        if self.session.normalize:
            # Normalizing is idempotent: a recording stored normalized comes out as it was,
            # one stored by an older version gets today's rules, like the new stream.
            recorded.events = self.recorded_ids.events(recorded.events)
        raw = self.session.compare_raw
        pending.expected = canonical(compared(recorded.events, raw=raw))
        pending.same = canonical(compared(normalized, raw=raw)) == pending.expected

    def judge(self, pending: PendingRun, record: RunRecord) -> None:
        """The replayed run against its recording: faults checked, a refresh's events kept,
        or a difference raised as :class:`ReplayMismatchError`."""
        __tracebackhide__ = True  # the error is the test's: show its line
        session = self.session
        fake = pending.fake
        assert fake is not None
        if self.faults.faults:
            self.faults.check_run(pending.index, fake)
            return
        assert pending.recorded is not None
        raw = session.compare_raw
        same = matches_recording(pending, record, session.secrets, raw=raw)
        if session.refresh:  # a difference of the stream is what a refresh stores
            self.refreshing.judge(pending.index, fake, same)
            return
        mismatch = check_replayed(
            str(session.path),
            pending,
            record,
            fake,
            same,
            record_command=session.record_command,
            kept_in=self.pending.kept_in,
            raw=raw,
        )
        if mismatch is not None:
            if mismatch.events_only:
                self.pending.events_changed = True
            raise mismatch.error
