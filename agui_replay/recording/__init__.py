"""Record an agent's AG-UI stream with the provider chunks that drove it; replay it offline.

This is the engine behind the pytest plugin's ``agui`` fixture, and it does not import pytest:
use it from any script as well::

    from agui_replay.recording import CassetteSession

    with CassetteSession("cassettes/demo.json", mode="once") as agui:
        client = openai.OpenAI(base_url=agui.provider.base_url, api_key=key)
        events = agui.run(my_agent, "What is the weather in Paris?")

A :class:`CassetteSession` holds one cassette file. Each :meth:`~CassetteSession.run` is one
run in it: the session either *records* it (the agent's SDK talks to ``agui.provider``, a
loopback proxy in front of the real provider that captures every request and each response
chunk, scrubbed of secrets) or *replays* it (``agui.provider`` serves the recorded chunks one by
one, and the agent's new stream, normalized, must equal the recorded one). Which of the two
depends on the :class:`RecordMode` and on what the cassette already holds:

==========  ===========================  ==================================================
mode        cassette exists              cassette missing
==========  ===========================  ==================================================
``none``    replay every run             fail, naming the file and the command to record it
``once``    replay every run             record every run
``rewrite`` record every run (the old    record every run
            runs are dropped)
``new``     replay the recorded runs,    record every run
            record the runs beyond them
==========  ===========================  ==================================================

While a session only replays, its network guard (``session.guard``) refuses every connection
that is not to a loopback address (and every name lookup other than ``localhost``), so a replay
can never reach a real provider by accident.
"""

from __future__ import annotations

from agui_replay._facades import claim, moved_errors
from agui_replay.recording._modes import (
    DEFAULT_SECRET_ENV,
    RecordMode,
    secrets_from_env,
)
from agui_replay.recording._runs import RunRecord
from agui_replay.recording._session import CassetteSession

__all__ = [
    "DEFAULT_SECRET_ENV",
    "CassetteSession",
    "RecordMode",
    "RunRecord",
    "secrets_from_env",
]

claim(__name__, [globals()[name] for name in __all__ if name in globals()])
__getattr__ = moved_errors(
    __name__,
    [
        "MissingCassetteError",
        "NetworkBlockedError",
        "RecordModeError",
        "ReplayMismatchError",
        "TargetError",
        "UpstreamError",
    ],
)
