"""``agui-replay view``: write the self-contained HTML viewer of a recording."""

from __future__ import annotations

import argparse
import sys
from contextlib import closing
from pathlib import Path
from typing import TextIO

from agui_replay.cassette import load_recording
from agui_replay.cli._common import EXIT_OK, _UsageError
from agui_replay.cli._progress import Progress


def _view(args: argparse.Namespace, out: TextIO) -> int:
    from agui_replay.cli._viewer import render_html, view_data

    recording = load_recording(args.file)
    total = len(recording.events)
    if args.at is not None and not (-total <= args.at < total):
        raise _UsageError(f"--at {args.at} is out of range: the file has {total} event(s)")
    selected = None if args.at is None else (args.at + total if args.at < 0 else args.at)
    with (
        closing(Progress("view", total)) as walking,
        closing(Progress("verify", total)) as verifying,
    ):
        data = view_data(recording, selected=selected, progress=walking, verify_progress=verifying)
    html = render_html(data)
    if args.output == "-":
        out.write(html)
        return EXIT_OK
    target = Path(args.output) if args.output else Path(recording.path.stem + ".html")
    from agui_replay._files import atomic_write_text

    atomic_write_text(target, [html])
    sys.stderr.write(f"wrote {target} ({len(html) // 1024 + 1} KiB); open it in a browser\n")
    return EXIT_OK
