"""The pytest plugin (entry point ``pytest11: agui_replay``).

Only this module (and ``agui_replay.providers.fixtures``, which it re-exports) imports pytest;
``import agui_replay`` never does.
"""

from __future__ import annotations

from agui_replay.providers.fixtures import *  # noqa: F403  (the provider fixtures, by __all__)
