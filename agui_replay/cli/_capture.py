"""``agui-replay capture``: record any AG-UI agent's runs through a loopback proxy.

The command checks its arguments, binds a loopback socket, prints the proxy's URL on stdout
(first, as ``serve`` does: tools read it) and runs the proxy (``_capture_proxy``) with uvicorn
until Ctrl-C or SIGTERM. Runs in flight when the signal comes are waited for (and recorded when
they complete); a second Ctrl-C stops at once. The cassette is written by ``_capture_file``.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import SplitResult, urlsplit, urlunsplit

from agui_replay.cassette import Cassette, load_cassette
from agui_replay.cli._capture_file import _CaptureFile
from agui_replay.cli._capture_proxy import _CaptureProxy
from agui_replay.cli._common import EXIT_OK, EXIT_USAGE, _UsageError
from agui_replay.cli._posted import (
    LOOPBACK_HOSTS,
    listen,
    reach_warning,
    run_until_signal,
    uvicorn_server,
)

__all__: list[str] = []

_EXAMPLE_TARGET = "http://127.0.0.1:8000/agent"


def _target_url(text: str) -> SplitResult:
    try:
        url = urlsplit(text)
        _port(url)  # a port that is no number raises ValueError here
    except ValueError as exc:
        raise _UsageError(
            f"--target {text!r} is not a URL ({exc}); e.g. {_EXAMPLE_TARGET}"
        ) from None
    if url.scheme.lower() not in ("http", "https") or not url.hostname:
        raise _UsageError(
            f"--target {text!r} is not an http:// or https:// URL: give the agent's AG-UI "
            f"endpoint, e.g. {_EXAMPLE_TARGET}"
        )
    return url


def _shown(url: SplitResult) -> str:
    """The target as logs and the cassette show it: no user, password or query (secrets)."""
    host = url.hostname or ""
    host = f"[{host}]" if ":" in host else host
    netloc = f"{host}:{url.port}" if url.port is not None else host
    return urlunsplit((url.scheme.lower(), netloc, url.path or "/", "", ""))


def _open_store(args: argparse.Namespace, target: str, warn: Any) -> _CaptureFile:
    path = Path(args.out)
    if path.suffix.lower() != ".json":
        raise _UsageError(
            f"--out {args.out}: a cassette file name ends in .json (e.g. captured.json)"
        )
    if path.is_dir():
        raise _UsageError(f"--out {args.out} is a folder; give a file name ending in .json")
    if path.exists():
        if args.append:
            cassette = load_cassette(path)  # a CassetteError names the file and line
        elif args.overwrite:
            cassette = Cassette()
        else:
            raise _UsageError(
                f"--out {args.out} exists: add --append to add the new runs to it, or "
                "--overwrite to replace it (with the first run recorded)"
            )
    else:
        cassette = Cassette()
    if not args.append or "capture" not in cassette.meta:
        cassette.meta = {**cassette.meta, "capture": {"target": target}}
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".{path.name}.{os.getpid()}.probe.tmp"
        probe.touch()
        probe.unlink()
    except OSError as exc:
        raise _UsageError(
            f"--out {args.out}: cannot write in {folder}: {exc.strerror or exc}"
        ) from None
    return _CaptureFile(path, cassette, warn=warn)


class _QuietIncompleteResponses(logging.Filter):
    """The proxy breaks a caller's response off on purpose when the agent's stream broke (and
    logs that in its own words); uvicorn's error line about it would only confuse."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing response" not in record.getMessage()


def _capture(args: argparse.Namespace, out: TextIO) -> int:
    url = _target_url(args.target)
    target = _shown(url)
    try:
        import httpx
        import uvicorn  # noqa: F401
    except ImportError:
        raise _UsageError(
            "`capture` needs uvicorn and httpx: pip install 'agui-replay[server,providers]'"
        ) from None

    def say(text: str) -> None:
        if not args.quiet:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def warn(text: str) -> None:  # a run that may be lost is said even with --quiet
        sys.stderr.write(f"agui-replay capture: {text}\n")
        sys.stderr.flush()

    store = _open_store(args, target, warn)
    if url.password:
        store.note_secret(url.password)
    sock, own = listen(args.host, args.port)
    try:
        host, port = sock.getsockname()[:2]
        if (url.hostname or "").lower() in {*LOOPBACK_HOSTS, host} and _port(url) == port:
            raise _UsageError(
                f"--target {target} is this proxy's own address; give the agent's endpoint"
            )
        client = httpx.AsyncClient(
            timeout=httpx.Timeout(connect=10.0, read=None, write=60.0, pool=None),
            follow_redirects=True,
            # HTTP(S)_PROXY from the environment, but never for an agent on this machine.
            trust_env=(url.hostname or "").lower() not in LOOPBACK_HOSTS,
        )
        proxy = _CaptureProxy(args.target, store, shown=target, client=client, say=say)
        server = uvicorn_server(proxy)
        logging.getLogger("uvicorn.error").addFilter(_QuietIncompleteResponses())
        out.write(f"{own}\n")
        out.flush()
        warning = reach_warning(
            "capture",
            args.host,
            own,
            f"run the agent at {target} and have the runs written to {store.path}",
        )
        if warning is not None:  # said even with --quiet
            sys.stderr.write(warning)
            sys.stderr.flush()
        say(f"capturing {target} into {store.path} at {own} — POST a RunAgentInput; Ctrl-C stops")
        _run_until_stopped(server, sock, proxy, say)
    finally:
        sock.close()
    if not store.flush():
        return EXIT_USAGE  # the warning said it: the runs could not be written
    if store.recorded:
        say(f"stopped: {store.recorded} run(s) recorded in {store.path}")
    else:
        say(f"stopped: no run recorded, {store.path} not written")
    return EXIT_OK


def _port(url: SplitResult) -> int:
    return url.port if url.port is not None else (443 if url.scheme.lower() == "https" else 80)


def _run_until_stopped(server: Any, sock: socket.socket, proxy: _CaptureProxy, say: Any) -> None:
    """Run uvicorn until SIGINT or SIGTERM; uvicorn waits for the responses in flight (their
    runs are recorded as they complete), and the first signal says how many there are."""
    handle_exit = server.handle_exit

    def on_signal(sig: int, frame: Any) -> None:
        first = not server.should_exit
        handle_exit(sig, frame)
        if first and proxy.in_flight:
            say(
                f"stopping: waiting for {proxy.in_flight} run(s) in flight to end (Ctrl-C again "
                "stops now, and they are not recorded)"
            )

    server.handle_exit = on_signal
    run_until_signal(server, sock)
