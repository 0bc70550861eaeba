"""The weather API the Strands agent's ``forecast`` tool calls with ``requests``.

A plain HTTP service (``GET /forecast?city=...``: tomorrow's forecast as JSON, or a 404 for a
city it does not know), written with the standard library. ``conftest.py`` serves it on
127.0.0.1 (port ``WEATHER_PORT`` of ``agent.py``) only while a test records; a replay answers
the tool's requests from the cassette, with the service stopped.

Imports nothing from Strands, so ``conftest.py`` loads it in any venv.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

__all__ = ["FORECASTS", "serve"]

FORECASTS = {
    "lisbon": {"sky": "sunny", "high_c": 24, "low_c": 16},
    "oslo": {"sky": "light snow", "high_c": -2, "low_c": -7},
}
"""What the API knows: tomorrow's forecast for two cities."""


class _WeatherAPI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self, status: int, body: dict[str, object]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        city = parse_qs(parts.query).get("city", [""])[0]
        if parts.path != "/forecast":
            self._answer(404, {"error": f"no such endpoint: {parts.path}"})
            return
        forecast = FORECASTS.get(city.strip().lower())
        if forecast is None:
            self._answer(404, {"error": f"no forecast for {city}"})
            return
        self._answer(200, {"city": city, **forecast})


@contextmanager
def serve(port: int) -> Iterator[ThreadingHTTPServer]:
    """The API on ``127.0.0.1:port`` in a thread of this process, until the block ends."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _WeatherAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
