"""``agui-replay show --interactions`` and ``agui-replay diff --interactions``: a cassette's
recorded HTTP exchanges (the provider interactions of each run, then the ``http`` list of the
requests to other hosts), listed or compared in order."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from agui_replay._jsondiff import describe, first_difference
from agui_replay.cli._common import EXIT_DIFFERENT, EXIT_OK, _UsageError
from agui_replay.cli._exchange_reader import (
    Exchange,
    load_exchanges,
    request_summary,
    response_summary,
    response_value,
)
from agui_replay.cli._style import _Style, _terminal_width, _want_color

__all__ = ["diff_interactions", "show_interactions"]

_NOT_COMPARED = "headers, chunk boundaries and timing not compared"


def show_interactions(args: argparse.Namespace, out: TextIO) -> int:
    if args.type or args.types:
        raise _UsageError(
            "--type/--types choose events; --interactions lists HTTP requests: use one or the other"
        )
    cassette, found = load_exchanges(args.file)
    color = _Style(_want_color(args, out))
    width = None if args.full else max(40, _terminal_width(out) - 20)
    runs = len(cassette.runs)
    if args.run is not None:
        if not -runs <= args.run < runs:
            raise _UsageError(
                f"--run {args.run} is out of range: {args.file} has {runs} run(s)"
                + (f", 0–{runs - 1}" if runs else "")
            )
        prefix = f"runs[{args.run % runs}]."
        found = [e for e in found if e.where.startswith(prefix)]
    providers = sum(1 for e in found if e.where.startswith("runs["))
    others = len(found) - providers
    out.write(
        color.bold(str(args.file))
        + f": {providers} provider interaction(s)"
        + ("" if args.run is not None else f" in {runs} run(s)")
        + (f", {others} request(s) to other hosts" if others else "")
        + "\n"
    )
    section = None
    for exchange in found:
        heading = _section(exchange)
        if heading != section:
            section = heading
            out.write(color.bold(heading) + "\n")
        _write_exchange(exchange, out, color, width)
    if not found:
        out.write("  (no recorded HTTP requests)\n")
    return EXIT_OK


def _section(exchange: Exchange) -> str:
    if exchange.where.startswith("http["):
        return "requests to other hosts (http):"
    run = exchange.where.split("]", 1)[0].removeprefix("runs[")
    return f"run #{run}:"


def _write_exchange(exchange: Exchange, out: TextIO, color: _Style, width: int | None) -> None:
    size = len(exchange.content())
    count = len(exchange.chunks)
    body = f"{count} chunk(s), {size} bytes" if count else f"body of {size} bytes"
    status = exchange.status
    shown = color.red(str(status)) if isinstance(status, int) and status >= 400 else str(status)
    out.write(
        f"  #{exchange.index} {color.cyan(exchange.who)} {exchange.method} {exchange.target} "
        f"→ {shown}, {body}  {color.dim(exchange.where)}\n"
    )
    out.write(f"      asks: {request_summary(exchange, width)}\n")
    out.write(f"      answer: {response_summary(exchange, width)}\n")


# --- diff ---------------------------------------------------------------------------------------


def diff_interactions(args: argparse.Namespace, out: TextIO) -> int:
    if args.raw:
        raise _UsageError(
            "--raw compares events as they are; --interactions compares the recorded requests "
            "and responses: use one or the other"
        )
    _, left = load_exchanges(args.a)
    _, right = load_exchanges(args.b)
    color = _Style(_want_color(args, out))
    for a, b in zip(left, right, strict=False):
        found = first_difference(_comparable(a), _comparable(b), numbers="value")
        if found is None:
            continue
        places = a.where if a.where == b.where else f"{a.where} in A, {b.where} in B"
        out.write(
            color.red(f"interactions differ at #{a.index}")
            + f" ({places}: {a.who} {a.method} {a.target})"
            + color.dim(f"  ({_NOT_COMPARED})")
            + "\n"
        )
        out.write(describe(found, f"A ({args.a})", f"B ({args.b})") + "\n")
        if len(left) != len(right):
            out.write(f"  A has {len(left)} interaction(s), B {len(right)}\n")
        return EXIT_DIFFERENT
    if len(left) != len(right):
        longer, name, other = (left, "A", "B") if len(left) > len(right) else (right, "B", "A")
        extra = longer[min(len(left), len(right))]
        out.write(
            color.red(f"{name} has {len(longer) - min(len(left), len(right))} more interaction(s)")
            + f": the first, #{extra.index} ({extra.where}: {extra.who} {extra.method} "
            f"{extra.target}), is not in {other}; the {min(len(left), len(right))} before it "
            "are the same\n"
        )
        return EXIT_DIFFERENT
    providers = sum(1 for e in left if e.where.startswith("runs["))
    out.write(
        color.green("same") + f": {len(left)} interaction(s), {providers} to providers and "
        f"{len(left) - providers} to other hosts (method, URL, body, status and response; "
        f"{_NOT_COMPARED})\n"
    )
    return EXIT_OK


def _comparable(exchange: Exchange) -> dict[str, Any]:
    request = exchange.request
    target = "url" if exchange.where.startswith("http[") else "path"
    return {
        "provider" if target == "path" else "host": exchange.who,
        "request": {
            "method": request.get("method"),
            target: request.get(target),
            "body": request.get("body"),
        },
        "response": {"status": exchange.status, **response_value(exchange)},
    }
