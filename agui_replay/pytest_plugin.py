"""The pytest plugin (entry point ``pytest11: agui_replay``).

Only this module imports pytest; ``import agui_replay`` never does.
"""

from __future__ import annotations
