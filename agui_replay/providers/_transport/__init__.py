"""How requests reach a provider app: in process, over loopback, or intercepted.

* ``_loopback``: ``LoopbackServer``, a real HTTP server on 127.0.0.1 in front of an app;
* ``_httpx``, ``_aiohttp``, ``_urllib3`` and ``_urllib`` (``http.client``): in-process
  transports that hand a request to an app and stream its planned chunks back with no socket;
* ``_tape``: ``HttpTape``, the test's requests to other hosts (a tool's API), recorded
  and replayed chunk by chunk through a ``TapeRouter``;
* ``_routing``: for the span of a run, the patched transports of the HTTP libraries send every
  request for a known provider host (or the session's loopback server) to a ``Router``.

Private to ``agui_replay.providers``: the session seam (``_session``), the fake and the recorder
import each name from its module; users reach the loopback server through
``agui_replay.providers``.
"""
