"""How requests reach an answer: in process, over loopback, or intercepted.

* ``_loopback``: ``LoopbackServer``, a real HTTP server on 127.0.0.1 in front of an app;
* ``_httpx``, ``_aiohttp``, ``_urllib3`` and ``_urllib`` (``http.client``): one module per HTTP
  library, each the in-process transport that hands a request to an app and streams its
  planned chunks back with no socket, the ``install`` that patches its library during a run,
  and the ``Library`` that names the library's exceptions;
* ``_tape``: ``HttpTape``, the test's requests to other hosts (a tool's API), recorded
  and replayed chunk by chunk through a ``TapeRouter``;
* ``_routing``: for the span of a run, every library's patch sends each request for a known
  provider host (or the session's loopback server) to a ``Router``; ``_transports`` lists the
  library modules.

Private to ``agui_replay.providers``: the session seam (``_session``), the fake and the recorder
import each name from its module; users reach the loopback server through
``agui_replay.providers``.
"""
