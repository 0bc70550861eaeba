"""agui_replay: test AG-UI agents offline, deterministically, with readable failures.

Each concern is one facade, and each public name has one import path:

* ``agui_replay.events`` and ``agui_replay.sse``: AG-UI events as wire dicts, and their SSE
  framing;
* ``agui_replay.client``: a client-side ``Session`` that folds a stream into state and
  messages; ``agui_replay.verify``: the ordering verifier; ``agui_replay.patch`` and
  ``agui_replay.state``: JSON Patch and the ``StateManager``;
* ``agui_replay.server``: the toolkit for writing an AG-UI agent in Python;
* ``agui_replay.providers``: fake model providers and the recorder of real ones;
* ``agui_replay.cassette``, ``agui_replay.normalize``, ``agui_replay.scrub``: stored
  recordings, what makes two recordings comparable, and what keeps secrets out of them;
* ``agui_replay.recording``: record and replay outside pytest (the plugin's engine);
* ``agui_replay.assertions``, ``agui_replay.snapshot`` and ``agui_replay.strategies``: what a
  test asserts with (the last needs the ``strategies`` extra);
* ``agui_replay.errors``: every exception the package raises.

Importing this package imports none of its submodules, so the pytest plugin, loaded in every
pytest run, costs next to nothing until a test uses it.
"""

from __future__ import annotations

__version__ = "0.1.0.dev0"

__all__ = ["__version__"]
