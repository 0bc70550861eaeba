"""A faulted replay's checks: each fault names a recorded request, each one hit a response, and
the agent's requests after a fault are still the recorded ones."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agui_replay.recording._modes import ReplayMismatchError

if TYPE_CHECKING:
    from agui_replay.cassette import CassetteRun
    from agui_replay.providers import FakeProvider
    from agui_replay.recording._runs import RunRecord

__all__ = ["FaultChecks"]


class FaultChecks:
    """The faults of one session (:mod:`agui_replay.faults`), and those that fired so far."""

    def __init__(self, faults: list[Any], path: Path) -> None:
        self.faults = faults
        self.path = path
        self.fired: list[Any] = []
        """The faults that changed a response so far."""

    @property
    def of_providers(self) -> list[Any]:
        """The faults of the model providers' responses (no ``host=``)."""
        return [f for f in self.faults if f.host is None]

    @property
    def of_hosts(self) -> list[Any]:
        """The faults of the test's other recorded requests (with ``host=``)."""
        return [f for f in self.faults if f.host is not None]

    def _note(self, fired: Sequence[Any]) -> None:
        for fault in fired:
            if not any(fault is seen for seen in self.fired):
                self.fired.append(fault)

    def check_targets(self, recorded_runs: Sequence[CassetteRun], tape: Any) -> None:
        """Each fault names a request the cassette recorded: a provider request (``request=``
        counted over its runs) or, with ``host=``, one of its ``http`` list (the tape's
        check); else :class:`ReplayMismatchError`, naming what the cassette holds."""
        __tracebackhide__ = True  # the error is the test's: show its line
        if not self.faults:
            return
        if tape is not None:
            tape.check_faults()
        held = [(n, i) for n, run in enumerate(recorded_runs) for i in run.interactions]
        for fault in self.faults:
            if fault.host is not None or fault.request < len(held):
                continue
            shown = []
            for i, (n, interaction) in enumerate(held[:10]):
                request = interaction.get("request") or {}
                who = f" ({interaction['provider']})" if interaction.get("provider") else ""
                shown.append(
                    f"request={i}: run #{n} {request.get('method')} {request.get('path')}{who}"
                )
            listing = "; ".join(shown) + ("; ..." if len(held) > 10 else "")
            holds = f"{len(held)} provider request(s), counted from 0 over its runs"
            raise ReplayMismatchError(
                f"{self.path}: {fault.describe()}: the cassette holds "
                + (f"{holds} ({listing})" if held else "no provider request")
                + ". Point request= at one of them, or name the host of a tool's recorded "
                "request with host=."
            )

    def check_run(self, index: int, fake: FakeProvider) -> None:
        """A faulted run: its events are the test's to check, not compared with the recording;
        a provider request that differs from the recorded ones still fails the run."""
        self._note(fake.fired)
        if fake.errors:
            shown = "\n".join(f"  {line}" for e in fake.errors for line in str(e).splitlines())
            raise ReplayMismatchError(
                f"{self.path}: run #{index} (replayed with faults) made a provider "
                f"request the recording does not have:\n{shown}\nA faulted replay serves only "
                "the recorded requests: after the fault, the agent must send what it sent when "
                "it was recorded, or stop (make the fault hit a later request, or record the "
                "conversation the agent has after the fault)."
            )

    def check_fired(
        self, tape: Any, runs: Sequence[RunRecord], recorded_runs: Sequence[CassetteRun]
    ) -> None:
        """Every fault changed a response: one that names a request the test never made
        says so."""
        self._note(tape.fired if tape is not None else ())
        unfired = [f for f in self.faults if not any(f is seen for seen in self.fired)]
        if not unfired:
            return
        listing = ", ".join(f.describe() for f in unfired)
        why = []
        if any(f.host is None for f in unfired):
            made = sum(len(r.interactions) for r in runs)
            held = sum(len(r.interactions) for r in recorded_runs)
            why.append(
                f"The test's {len(runs)} run(s) replay {made} recorded provider "
                f"request(s) (the cassette holds {held}, counted from 0 over its runs); point "
                "request= at one the test makes."
            )
        if any(f.host is not None for f in unfired):
            replayed = len(tape.recorded) - len(tape.unused) if tape is not None else 0
            why.append(
                f"A fault with host= hits the recorded request it names when the test makes "
                f"it (the test replayed {replayed} of the cassette's recorded requests besides "
                "the model providers'); point host= and request= at one the test makes."
            )
        raise ReplayMismatchError(
            f"{self.path}: {len(unfired)} fault(s) never hit a response: {listing}. "
            + " ".join(why)
        )
