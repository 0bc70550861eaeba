"""Helpers for the pytester projects of the plugin suites: a free loopback port for a stand-in
server, and the project's cassette files as bytes (to check a run left them untouched)."""

from __future__ import annotations

import socket
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cassette_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root/cassettes``, by its path relative to it, with its bytes."""
    folder = root / "cassettes"
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
