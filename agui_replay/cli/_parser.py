"""The ``agui-replay`` argument parser and :func:`main`, which dispatches to the commands."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import NoReturn, TextIO

from agui_replay import __version__
from agui_replay.cli._capture import _capture
from agui_replay.cli._check import _diff, _state, _verify
from agui_replay.cli._common import EXIT_OK, EXIT_USAGE, _UsageError
from agui_replay.cli._examples import _examples
from agui_replay.cli._review import _review
from agui_replay.cli._serve import _serve
from agui_replay.cli._show import _show
from agui_replay.cli._view import _view
from agui_replay.errors import AguiReplayError, CassetteError, InputFileError

__all__ = [
    "build_parser",
    "main",
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


_EPILOG = """\
inputs: a cassette (.json), an SSE capture (.sse/.txt, `data:` frames) or JSON lines
(.jsonl, one event per line). Event numbers #N count from 0 over the whole file.
exit codes: 0 ok, 1 protocol violation or difference found, 2 usage or input error.
"""


_FMT = argparse.RawDescriptionHelpFormatter


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and for tests of ``--help``)."""
    parser = _Parser(
        prog="agui-replay",
        description="Look at, check, compare and serve recorded AG-UI event streams.",
        epilog=_EPILOG,
        formatter_class=_FMT,
    )
    parser.add_argument("--version", action="version", version=f"agui-replay {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    commands.required = True
    _add_show(commands)
    _add_verify(commands)
    _add_diff(commands)
    _add_state(commands)
    _add_serve(commands)
    _add_view(commands)
    _add_capture(commands)
    _add_examples(commands)
    _add_review(commands)
    return parser


def _command(
    commands: argparse._SubParsersAction[_Parser],
    name: str,
    summary: str,
    description: str,
    epilog: str = _EPILOG,
) -> argparse.ArgumentParser:
    return commands.add_parser(
        name, help=summary, description=description, epilog=epilog, formatter_class=_FMT
    )


def _no_color(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--no-color",
        action="store_true",
        help="plain text even on a terminal (NO_COLOR=1 does the same)",
    )


def _number(sub: argparse.ArgumentParser, flag: str, help: str, default: int | None = None) -> None:
    """An integer option shown as ``N`` (``--run``, ``--at``, ``--context``...)."""
    sub.add_argument(flag, type=int, default=default, metavar="N", help=help)


def _listen(sub: argparse.ArgumentParser) -> None:
    """``--host`` and ``--port``, the same for the two commands that open a server."""
    sub.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1, loopback); another one, such as 0.0.0.0 for "
        "a browser in a container, lets other machines in, with a warning",
    )
    sub.add_argument("--port", type=int, default=0, help="port (default 0: a free one)")


_RECORDING = "cassette, SSE capture or JSON lines"
_FOLDER = "; a folder means every cassette (*.json) in it"


def _add_show(commands: argparse._SubParsersAction[_Parser]) -> None:
    show = _command(
        commands,
        "show",
        "print a readable timeline",
        "Print a recording as a timeline: runs, messages with their text assembled, tool calls "
        "with arguments and results, reasoning, the state after each change, interrupts and "
        "errors. With --interactions, a cassette's recorded HTTP requests instead: each "
        "provider interaction of each run, then the requests to other hosts (the http list), "
        "with status, size, what the request asked and what the response said.",
    )
    show.add_argument("file", help=_RECORDING)
    _number(show, "--run", "only run N (from 0)")
    show.add_argument("--full", action="store_true", help="do not shorten long values")
    show.add_argument(
        "--type",
        action="append",
        metavar="TYPE",
        help="only events of this type (repeatable; e.g. --type TEXT_MESSAGE_CONTENT)",
    )
    show.add_argument(
        "--types", action="append", metavar="A,B", help="only events of these types (A,B,...)"
    )
    show.add_argument(
        "--interactions",
        action="store_true",
        help="list the cassette's recorded HTTP requests and responses instead of its events",
    )
    _no_color(show)
    show.set_defaults(handler=_show)


def _add_verify(commands: argparse._SubParsersAction[_Parser]) -> None:
    verify = _command(
        commands,
        "verify",
        "check the AG-UI ordering rules (exit 1 on a violation)",
        "Check a recording against the AG-UI ordering rules. `client` mode accepts what the "
        "reference TypeScript client accepts; `strict` adds the server verifier's rules (tool "
        "results for known, ended calls; no stream ending inside a run).",
    )
    verify.add_argument("file", nargs="+", help="cassettes, SSE captures or JSON lines" + _FOLDER)
    verify.add_argument(
        "--mode",
        choices=["client", "strict"],
        default="client",
        help="which rules to apply (default: client)",
    )
    verify.add_argument("--json", action="store_true", help="print a machine-readable result")
    _number(verify, "--max-errors", "stop after N problems (default: 20)", 20)
    _no_color(verify)
    verify.set_defaults(handler=_verify)


def _add_diff(commands: argparse._SubParsersAction[_Parser]) -> None:
    diff = _command(
        commands,
        "diff",
        "compare two recordings event by event (exit 1 when they differ)",
        "Compare two recordings event by event. Ids and timestamps are normalized first (ids "
        "renamed in order of appearance, timestamps dropped) so two runs of one agent compare "
        "equal; --raw compares them as they are. With --interactions, two cassettes' recorded "
        "HTTP requests and responses instead, in order: the first that differs, with the path "
        "of the difference (headers, chunk boundaries and timing are not compared).",
    )
    diff.add_argument("a", help="the expected recording")
    diff.add_argument("b", help="the actual recording")
    diff.add_argument("--raw", action="store_true", help="compare without normalizing")
    diff.add_argument(
        "--interactions",
        action="store_true",
        help="compare the cassettes' recorded HTTP requests and responses instead of events",
    )
    _number(diff, "--context", "events of context around the first difference (default: 2)", 2)
    _no_color(diff)
    diff.set_defaults(handler=_diff)


def _add_state(commands: argparse._SubParsersAction[_Parser]) -> None:
    state = _command(
        commands,
        "state",
        "print the client state (final, or after event N) as JSON",
        "Print the state a client holds after the whole recording, after event N (--at), or "
        "at the end of run N (--run), as JSON.",
    )
    state.add_argument("file", help=_RECORDING)
    _number(state, "--at", "the state right after event #N (negative counts from the end)")
    _number(state, "--run", "the state at the end of run N")
    state.add_argument("--compact", action="store_true", help="one line of JSON")
    state.set_defaults(handler=_state)


_SERVE = (
    "Serve a recording, or a folder of cassettes, as an AG-UI endpoint: POST a "
    "RunAgentInput and the recorded run whose input matches it streams back as SSE. Inputs "
    "match on their messages and resume, ids normalized (renamed in order of first "
    "appearance, as the normalize module does), so a front end's own thread, run and "
    "message ids do not matter (the stream names the messages it posted by its ids, so "
    "a conversation plays turn after turn); among matching runs the posted thread's recorded "
    "conversation comes first, then file order. An input no run matches gets a 404 naming "
    "the closest run and the first difference. Recordings without inputs (SSE captures, "
    "JSON lines), and inputs with no messages, are served in order: the n-th request "
    "gets run n. Events with timestamps keep their recorded pacing, scaled by --speed. "
    "Faults for a front end's error states: --cut-after drops the connection, "
    "--error-after sends a RUN_ERROR, --delay holds the first event; a request's "
    "X-AGUI-Replay-Fault header (cut-after=N, error-after=N, delay=S, drop=N, "
    "duplicate=N, garble=N) chooses its own. GET /_agui/runs lists the runs. Prints the "
    "URL on stdout; Ctrl-C or SIGTERM stops it."
)


def _seconds(sub: argparse.ArgumentParser, flag: str, default: float, help: str) -> None:
    sub.add_argument(flag, type=float, default=default, metavar="SECONDS", help=help)


def _add_serve(commands: argparse._SubParsersAction[_Parser]) -> None:
    serve = _command(
        commands, "serve", "serve recordings as a live AG-UI endpoint on loopback", _SERVE
    )
    serve.add_argument("file", help=_RECORDING + _FOLDER)
    _listen(serve)
    serve.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="timing factor: 1 as recorded, 10 ten times faster, 0 instant",
    )
    _seconds(serve, "--max-gap", 5.0, "cap on any one pause between events (default: 5)")
    _number(
        serve,
        "--run",
        "always serve run N, whatever is posted (a folder's runs count across its files)",
    )
    serve.add_argument(
        "--in-order",
        action="store_true",
        help="ignore the posted input: the n-th request gets run n (wrapping around)",
    )
    _seconds(
        serve, "--delay", 0.0, "wait this long before the first event of every run (a slow agent)"
    )
    _number(
        serve,
        "--cut-after",
        "drop the connection after N events: the client's fetch fails mid-stream",
    )
    _number(
        serve,
        "--error-after",
        "send a RUN_ERROR (code INJECTED_FAULT) after N events and end the stream",
    )
    serve.add_argument(
        "--quiet", action="store_true", help="print only the URL line (no banner, no request log)"
    )
    serve.set_defaults(handler=_serve)


def _add_view(commands: argparse._SubParsersAction[_Parser]) -> None:
    view = _command(
        commands,
        "view",
        "write a self-contained HTML viewer",
        "Write one self-contained HTML page (no network): the timeline of events, the "
        "messages as a chat and the state at any event, with the changes highlighted. "
        "Select an event with the mouse or the arrow keys; the URL hash #event=N selects one.",
    )
    view.add_argument("file", help=_RECORDING)
    view.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="where to write (default: <input name>.html here; - for stdout)",
    )
    _number(view, "--at", "preselect event #N")
    view.set_defaults(handler=_view)


def _add_capture(commands: argparse._SubParsersAction[_Parser]) -> None:
    capture = _command(
        commands,
        "capture",
        "record any AG-UI agent's runs through a loopback proxy",
        "Stand in front of an AG-UI agent (any language, any framework) at "
        "--target: each RunAgentInput POSTed to the printed URL goes to the agent, its event "
        "stream comes back unchanged as it arrives, and each completed run (its input and "
        "events) is added to the cassette --out FILE, written whole and atomically after every "
        "run. An answer other than a 200 event stream, or a stream that breaks off, is passed "
        "on and not recorded (the log says why). Request headers go to the agent, never into "
        "the file. Prints the URL on stdout; Ctrl-C or SIGTERM stops it once the runs in "
        "flight have ended (a second Ctrl-C at once).",
        "the cassette verifies, shows, views and serves like any other: agui-replay "
        "verify --mode strict FILE, show FILE, view FILE, serve FILE.\n"
        "exit codes: 0 stopped by Ctrl-C or SIGTERM, 2 a wrong command line (target, host, "
        "port, FILE) or runs that could not be written to FILE.",
    )
    capture.add_argument(
        "--target",
        required=True,
        metavar="URL",
        help="the agent's AG-UI endpoint, http:// or https:// (e.g. http://127.0.0.1:8000/agent)",
    )
    capture.add_argument(
        "--out", required=True, metavar="FILE", help="the cassette to write (a .json file)"
    )
    existing = capture.add_mutually_exclusive_group()
    existing.add_argument(
        "--append", action="store_true", help="FILE exists: add the new runs after its own"
    )
    existing.add_argument(
        "--overwrite", action="store_true", help="FILE exists: replace it at the first run"
    )
    _listen(capture)
    capture.add_argument(
        "--quiet",
        action="store_true",
        help="print only the URL line (and a failure to write FILE): no banner, no request log",
    )
    capture.set_defaults(handler=_capture)


def _add_examples(commands: argparse._SubParsersAction[_Parser]) -> None:
    examples = _command(
        commands,
        "examples",
        "replay every example's cassettes offline and report",
        "Run the cassette tests under PATH (default: examples/ here) with pytest, "
        "in this process, replay only: no network, no API key, nothing written. Prints per "
        "example folder each test, the cassette it replayed with its runs and events, and a "
        "total. A cassette no test replays fails the run too.",
        "exit codes: 0 every test passed, 1 a test failed (or none ran, or a cassette "
        "is unused), 2 PATH does not exist.",
    )
    examples.add_argument(
        "path", nargs="?", metavar="PATH", help="the examples folder (default: ./examples)"
    )
    examples.add_argument(
        "--all",
        action="store_true",
        help="also run the tests that use no cassette (property tests and the like)",
    )
    _number(
        examples, "--max-lines", "first lines of each failure shown (default: 30; 0 for all)", 30
    )
    _no_color(examples)
    examples.set_defaults(handler=_examples)


def _add_review(commands: argparse._SubParsersAction[_Parser]) -> None:
    review = _command(
        commands,
        "review",
        "accept or reject the changed events replays kept beside their cassettes",
        "Walk the pending changes under PATH (NAME.json.pending, kept by a replay "
        "whose provider requests all matched but whose events changed), show each run's diff "
        "and ask: a accepts (the cassette gets the new events; its interactions stay byte for "
        "byte), r rejects (the pending file is deleted), s skips, q quits. Answers are read "
        "line by line from standard input; end of input quits.",
        "exit codes: 0 done (or nothing pending), 1 a pending change was refused (its "
        "cassette changed since), 2 PATH does not exist.",
    )
    review.add_argument(
        "path", nargs="?", metavar="PATH", help="cassette folder or file (default: cassettes/)"
    )
    every = review.add_mutually_exclusive_group()
    every.add_argument("--accept-all", action="store_true", help="accept every pending change")
    every.add_argument("--reject-all", action="store_true", help="reject every pending change")
    review.set_defaults(handler=_review)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out = sys.stdout
    try:
        code: int = args.handler(args, out)
    except (InputFileError, CassetteError, _UsageError) as error:
        return _fail(args, out, str(error))
    except AguiReplayError as error:
        # Any other refusal of the input (an event that cannot be applied, a patch...).
        return _fail(args, out, f"{type(error).__name__}: {error}")
    except BrokenPipeError:
        # `agui-replay show big.json | head`: the reader left; not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except (RecursionError, MemoryError, ValueError, TypeError, LookupError) as error:
        # The backstop: a bug, not the user's fault, but still one message, not a traceback.
        return _fail(
            args,
            out,
            f"could not process the input ({type(error).__name__}: {str(error)[:200]}); "
            "this is a bug in agui-replay, please report it with the file",
        )
    return code


def _fail(args: argparse.Namespace, out: TextIO, message: str) -> int:
    if getattr(args, "json", False):
        out.write(json.dumps({"ok": False, "error": message}, ensure_ascii=False) + "\n")
    sys.stderr.write(f"agui-replay {args.command}: error: {message}\n")
    return EXIT_USAGE
