"""A RunAgentInput POSTed to one of the command's local servers (``serve``, ``capture``).

Both listen on loopback unless ``--host`` names another address (then with a warning saying who
can reach them), read the body up to one size cap, within the package's JSON limits
(no NaN, no nesting past them), and check it is a RunAgentInput before doing anything with it;
both stop on SIGINT and SIGTERM the same way.
"""

from __future__ import annotations

import ipaddress
import signal
import socket
import threading
from typing import Any, NamedTuple

from agui_replay._limits import JSONLimitError, loads_json
from agui_replay.cli._common import _UsageError

MAX_REQUEST_BYTES = 16 * 1024 * 1024
LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


class Posted(NamedTuple):
    """A posted RunAgentInput: the body's bytes as they came, and its JSON."""

    body: bytes
    data: dict[str, Any]


class Refusal(NamedTuple):
    """Why a posted body is refused: the HTTP status to answer and the message."""

    status: int
    message: str


async def read_run_input(receive: Any) -> Posted | Refusal | None:
    """The posted RunAgentInput, a :class:`Refusal` to answer (413 too large, 400 not an
    input), or ``None`` when the client went away first."""
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > MAX_REQUEST_BYTES:
            return Refusal(413, "the request body is too large")
        if not message.get("more_body"):
            break
    checked = check_run_input(bytes(body))
    return checked if isinstance(checked, Refusal) else Posted(bytes(body), checked)


def check_run_input(body: bytes) -> dict[str, Any] | Refusal:
    """``body`` as a RunAgentInput's JSON, or the 400 :class:`Refusal` saying what is wrong."""
    from pydantic import ValidationError

    from agui_replay._compat import input_model

    try:
        data = loads_json(body or b"null")
    except JSONLimitError as exc:
        return Refusal(400, f"the request body is not valid JSON: {exc}")
    if not isinstance(data, dict):
        return Refusal(400, "the request body must be a RunAgentInput JSON object")
    try:
        input_model(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return Refusal(400, f"not a valid RunAgentInput: {where}: {first['msg']}")
    return data


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach an address (``localhost``, ``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to any interface
        return False


def reach_warning(command: str, host: str, url: str, what: str) -> str | None:
    """The warning a server bound to ``host`` gets when that is not loopback (``None``: it is):
    who can reach it, and what they can do with it."""
    if is_loopback(host):
        return None
    everywhere = host.strip("[]") in ("0.0.0.0", "::")
    who = (
        "every machine that can reach this one on any of its network interfaces"
        if everywhere
        else f"every machine that can reach {host}"
    )
    return (
        f"agui-replay {command}: warning: --host {host} is not loopback: {who} can {what} at "
        f"{url} (no password, any origin); use it on a network you trust, and stop it when done\n"
    )


def listen(host: str, port: int) -> tuple[socket.socket, str]:
    """A socket listening on ``host`` (``localhost``: 127.0.0.1) and ``port`` (0: a free
    one), and its URL. It listens before the URL is printed: a client that connects at
    once is queued."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    host = "127.0.0.1" if host == "localhost" else host
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise _UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    port = sock.getsockname()[1]
    url = f"http://[{host}]:{port}/" if family == socket.AF_INET6 else f"http://{host}:{port}/"
    return sock, url


def uvicorn_server(app: Any) -> Any:
    """The uvicorn server both commands run ``app`` with (uvicorn is imported by then)."""
    import uvicorn

    config = uvicorn.Config(
        app, log_level="warning", lifespan="off", http="h11", ws="none", loop="asyncio"
    )
    return uvicorn.Server(config)


def run_until_signal(server: Any, sock: socket.socket) -> None:
    """Run uvicorn; SIGINT and SIGTERM stop it cleanly (uvicorn re-raises the signal it
    caught once it has shut down, so a quiet handler stands in for the default one)."""
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if main_thread else None
    if main_thread:
        signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        if main_thread and previous is not None:
            signal.signal(signal.SIGTERM, previous)
