"""Cassettes: the recorded runs of one test, as a versioned, diff-friendly JSON file."""

from agui_replay._facades import claim
from agui_replay.cassette._format import (
    Cassette,
    CassetteRun,
    dumps_cassette,
    load_cassette,
    loads_cassette,
    save_cassette,
)
from agui_replay.cassette._recordings import (
    RecordedRun,
    Recording,
    StreamWalk,
    initial_state,
    load_recording,
    state_at,
    verify_recording,
    walk,
)

__all__ = [
    "Cassette",
    "CassetteRun",
    "RecordedRun",
    "Recording",
    "StreamWalk",
    "dumps_cassette",
    "initial_state",
    "load_cassette",
    "load_recording",
    "loads_cassette",
    "save_cassette",
    "state_at",
    "verify_recording",
    "walk",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
