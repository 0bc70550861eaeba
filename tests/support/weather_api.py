"""A stand-in for a weather API, as the conftest text of a pytester project.

``WEATHER_CONFTEST`` starts it on 127.0.0.1:$WEATHER_PORT for the session when ``WEATHER_UP``
is set (left stopped otherwise, so a replay has only its cassettes): ``GET /weather?city=C``
answers ``{"city": C, "sky": "sunny", "celsius": 21}``; ``GET /forecast?city=C`` streams
``"C mon sunny;"``, ``"C tue rain;"``, ``"C wed snow;"``, each its own HTTP chunk.
"""

WEATHER_CONFTEST = """
import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest


class WeatherAPI(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        parts = urlsplit(self.path)
        city = parse_qs(parts.query).get("city", ["nowhere"])[0]
        if parts.path == "/weather":
            body = json.dumps({"city": city, "sky": "sunny", "celsius": 21}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        # /forecast: three days, each its own HTTP chunk, a moment apart
        self.send_response(200)
        self.send_header("content-type", "text/plain; charset=utf-8")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for day in ("mon sunny", "tue rain", "wed snow"):
            data = f"{city} {day};".encode()
            self.wfile.write(b"%x\\r\\n%s\\r\\n" % (len(data), data))
            self.wfile.flush()
            time.sleep(0.05)
        self.wfile.write(b"0\\r\\n\\r\\n")


@pytest.fixture(scope="session", autouse=True)
def weather_api():
    if not os.environ.get("WEATHER_UP"):
        yield None  # stopped: a replay must not need it
        return
    server = ThreadingHTTPServer(("127.0.0.1", int(os.environ["WEATHER_PORT"])), WeatherAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def anyio_backend():
    return "asyncio"
"""
