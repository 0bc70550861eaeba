"""``agui-replay show``: a recording as a readable timeline."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, TextIO

from agui_replay._text import clip
from agui_replay.cassette import RecordedRun, StreamWalk, load_recording, walk
from agui_replay.cli._common import EXIT_OK, _select_runs, _UsageError
from agui_replay.cli._progress import Progress
from agui_replay.cli._review import cassette_age
from agui_replay.cli._style import (
    _compact,
    _describe_ops,
    _quoted,
    _raw_parts,
    _Style,
    _terminal_width,
    _text_of,
    _want_color,
)
from agui_replay.cli._viewer import summarize_event
from agui_replay.events import EVENT_TYPES, event_type
from agui_replay.patch import diff as state_diff


@dataclass
class _Block:
    """A message, reasoning message or tool call, assembled from its whole stream."""

    kind: str  # text | reasoning | tool
    ident: str
    first: int
    last: int
    name: str = ""
    role: str = ""
    parts: list[str] = field(default_factory=list)


_TEXT_TYPES = {
    "TEXT_MESSAGE_START": ("text", "start"),
    "TEXT_MESSAGE_CONTENT": ("text", "content"),
    "TEXT_MESSAGE_END": ("text", "end"),
    "TEXT_MESSAGE_CHUNK": ("text", "chunk"),
    "REASONING_MESSAGE_START": ("reasoning", "start"),
    "REASONING_MESSAGE_CONTENT": ("reasoning", "content"),
    "REASONING_MESSAGE_END": ("reasoning", "end"),
    "REASONING_MESSAGE_CHUNK": ("reasoning", "chunk"),
    "TOOL_CALL_START": ("tool", "start"),
    "TOOL_CALL_ARGS": ("tool", "content"),
    "TOOL_CALL_END": ("tool", "end"),
    "TOOL_CALL_CHUNK": ("tool", "chunk"),
}


def _assemble(run: RecordedRun) -> tuple[dict[int, _Block], set[int]]:
    """Blocks keyed by the index of their first event, and the indices they swallow."""
    open_blocks: dict[tuple[str, str], _Block] = {}
    last_chunk: dict[str, str] = {}
    first_of: dict[int, _Block] = {}
    swallowed: set[int] = set()
    for offset, event in enumerate(run.events):
        index = run.start + offset
        kind_step = _TEXT_TYPES.get(event_type(event))
        if kind_step is None:
            continue
        kind, step = kind_step
        id_field = "toolCallId" if kind == "tool" else "messageId"
        ident = event.get(id_field)
        if step == "chunk" and not isinstance(ident, str):
            ident = last_chunk.get(kind)
        if not isinstance(ident, str):
            continue
        if step == "chunk":
            last_chunk[kind] = ident
        block = open_blocks.get((kind, ident))
        if block is None or step == "start":
            block = _Block(kind, ident, index, index)
            open_blocks[(kind, ident)] = block
            first_of[index] = block
        else:
            swallowed.add(index)
        block.last = index
        if step in ("start", "chunk"):
            block.name = event.get("toolCallName") or block.name
            block.role = event.get("role") or block.role
        if step in ("content", "chunk") and isinstance(event.get("delta"), str):
            block.parts.append(event["delta"])
        if step == "end":
            del open_blocks[(kind, ident)]
    return first_of, swallowed


def _input_summary(
    run_input: dict[str, Any], width: int | None, open_interrupts: list[str]
) -> list[str]:
    lines = []
    messages = run_input.get("messages") or []
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    said = (
        f", last user message {_quoted(_text_of(users[-1].get('content')), width)}" if users else ""
    )
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if last.get("role") == "tool":
        # A resumed run: the tool result the client sends back is what drives it.
        result = _quoted(_text_of(last.get("content")), width)
        said += f", ending with the tool result for {last.get('toolCallId')} → {result}"
    lines.append(f"input: {len(messages)} message(s){said}")
    tools = [t.get("name", "?") for t in run_input.get("tools") or [] if isinstance(t, dict)]
    if tools:
        lines.append(f"tools: {', '.join(tools)}")
    if run_input.get("state") not in (None, {}):
        lines.append(f"state: {clip(_compact(run_input.get('state')), width)}")
    resume = run_input.get("resume") or []
    for answer in resume if isinstance(resume, list) else []:
        if isinstance(answer, dict):
            payload = f" {_compact(answer['payload'])}" if "payload" in answer else ""
            ident = _resume_id(answer.get("interruptId"), open_interrupts)
            lines.append(f"resume: {ident} {answer.get('status')}{payload}")
    return lines


def _resume_id(ident: Any, open_interrupts: list[str]) -> str:
    """The interrupt a resume entry answers, said when it answers none of those open."""
    if not open_interrupts or ident in open_interrupts:
        return str(ident)
    return f"{ident} (answers none of the interrupts open: {', '.join(open_interrupts)})"


def _interrupt_ids(event: dict[str, Any]) -> list[str]:
    outcome = event.get("outcome")
    interrupts = outcome.get("interrupts") if isinstance(outcome, dict) else None
    if not isinstance(interrupts, list):
        return []
    return [str(i.get("id")) for i in interrupts if isinstance(i, dict) and "id" in i]


def _show(args: argparse.Namespace, out: TextIO) -> int:
    if getattr(args, "interactions", False):
        from agui_replay.cli._exchanges import show_interactions

        return show_interactions(args, out)
    only = _wanted_types(args)
    recording = load_recording(args.file)
    runs = _select_runs(recording, args.run)
    color = _Style(_want_color(args, out))
    width: int | None = None if args.full else max(60, _terminal_width(out) - 14)
    kinds = {"cassette": "cassette", "sse": "SSE capture", "jsonl": "JSON lines", "json": "JSON"}
    out.write(
        color.bold(str(recording.path))
        + color.dim(
            f"  {kinds[recording.kind]}, {len(recording.runs)} run(s), "
            f"{len(recording.events)} event(s)"
        )
        + "\n"
    )
    out.write(color.dim(cassette_age(recording.path)) if recording.kind == "cassette" else "")
    progress = Progress("show", len(recording.events))
    blocks: dict[int, _Block] = {}
    swallowed: set[int] = set()
    results: dict[str, list[str]] = {}
    seen_errors = 0
    current_run: RecordedRun | None = None
    open_interrupts: list[str] = []
    for step in walk(recording, runs=runs):
        progress.tick(step.index)
        run, i = step.run, step.index
        if run is not current_run:
            current_run = run
            blocks, swallowed = _assemble(run)
            seen_errors = 0
            first = run.events[0] if run.events else {}
            ids = ""
            if first.get("type") == "RUN_STARTED":
                ids = f" · thread {first.get('threadId')} · run {first.get('runId')}"
            name = f" {run.name}" if run.name else ""
            out.write(
                "\n"
                + color.bold(f"── run {run.index}{name}{ids}")
                + color.dim(f" · {len(run.events)} event(s), #{run.start}–#{run.end - 1}")
                + "\n"
            )
            if run.input is not None:
                for line in _input_summary(run.input, width, open_interrupts):
                    out.write("   " + color.dim(line) + "\n")
            open_interrupts = []
        if step.event.get("type") == "RUN_FINISHED":
            open_interrupts = _interrupt_ids(step.event)
        errors = step.session.errors
        if only is not None and event_type(step.event) not in only:
            seen_errors = len(errors)
            continue
        if only is not None and event_type(step.event) in _TEXT_TYPES:
            # Filtered: each event of a message or call on its own line, not assembled.
            kind = event_type(step.event)
            lines = [f"{color.dim(kind)} {clip(summarize_event(step.event), width)}"]
        else:
            lines = _show_event(step, blocks, swallowed, results, color, width)
        for line in lines:
            out.write(f"  {color.dim(f'#{i:<4}')} {line}\n")
        for error in errors[seen_errors:]:
            out.write(f"  {color.dim(f'#{i:<4}')} {color.red('! ' + str(error))}\n")
        seen_errors = len(errors)
    progress.close()
    return EXIT_OK


def _wanted_types(args: argparse.Namespace) -> set[str] | None:
    """The event types ``--type``/``--types`` ask for (``None``: every type)."""
    asked = [*(args.type or []), *(t for group in args.types or [] for t in group.split(","))]
    asked = [t.strip().upper() for t in asked if t.strip()]
    if not asked:
        return None
    unknown = sorted({t for t in asked if t not in EVENT_TYPES})
    if unknown:
        raise _UsageError(
            f"--type {', '.join(unknown)}: not an AG-UI event type; "
            f"use one of {', '.join(sorted(EVENT_TYPES))}"
        )
    return set(asked)


def _show_event(
    step: StreamWalk,
    blocks: dict[int, _Block],
    swallowed: set[int],
    results: dict[str, list[str]],
    c: _Style,
    width: int | None,
) -> list[str]:
    event, i = step.event, step.index
    kind = event_type(event)
    if i in swallowed:
        return []
    block = blocks.get(i)
    span = "" if block is None or block.last == i else c.dim(f" (#{block.first}–#{block.last})")
    if block is not None and block.kind == "text":
        role = block.role or "assistant"
        return [
            f"{c.cyan(role)} {c.dim(block.ident)}{span}: {_quoted(''.join(block.parts), width)}"
        ]
    if block is not None and block.kind == "reasoning":
        return [
            f"{c.magenta('reasoning')} {c.dim(block.ident)}{span}: "
            + _quoted("".join(block.parts), width)
        ]
    if block is not None and block.kind == "tool":
        args = "".join(block.parts)
        return [
            f"{c.yellow('tool call')} {c.bold(block.name or '?')} {c.dim(block.ident)}{span} "
            + clip(args, width)
        ]
    if kind == "TOOL_CALL_RESULT":
        content = _text_of(event.get("content"))
        return [
            f"{c.yellow('tool result')} {c.dim(str(event.get('toolCallId')))} → "
            + clip(content, width)
        ]
    if kind in ("STATE_SNAPSHOT", "STATE_DELTA"):
        return _state_lines(step, kind, c, width)
    if kind == "STEP_STARTED":
        return [f"{c.green('step')} {event.get('stepName')} ▸"]
    if kind == "STEP_FINISHED":
        return [f"{c.green('step')} {event.get('stepName')} ◂"]
    if kind == "RUN_STARTED":
        return [c.bold("RUN_STARTED")]
    if kind == "RUN_FINISHED":
        return _run_finished_lines(event, c, width)
    if kind == "RUN_ERROR":
        code = f" [{event['code']}]" if event.get("code") else ""
        return [c.red(f"RUN_ERROR{code} {event.get('message', '')}")]
    if kind in ("REASONING_START", "REASONING_END"):
        return [c.dim(f"{kind.lower().replace('_', ' ')} {event.get('messageId', '')}")]
    if kind == "MESSAGES_SNAPSHOT":
        return [f"{c.cyan('messages snapshot')} {len(event.get('messages') or [])} message(s)"]
    if kind == "CUSTOM":
        label = event.get("name") or ""
        return [f"{c.dim('custom')} {label} {clip(_compact(event.get('value')), width)}"]
    if kind == "RAW":
        inner, rest = _raw_parts(event)
        source = f" [{event['source']}]" if event.get("source") else ""
        head = f"{c.dim('raw')}{source} {c.bold(inner) if inner else ''}".rstrip()
        return [f"{head} {clip(_compact(rest), width)}"]
    if kind in ("ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA"):
        return [
            f"{c.dim(kind.lower())} {event.get('activityType', '')} {event.get('messageId', '')}"
        ]
    rest = {k: v for k, v in event.items() if k not in ("type", "timestamp")}
    return [f"{kind} {clip(_compact(rest), width)}"]


def _state_lines(step: StreamWalk, kind: str, c: _Style, width: int | None) -> list[str]:
    if not step.state_changed:
        return [f"{c.blue('state')} unchanged ({kind})"]
    new = clip(_compact(step.session.state), width)
    if step.previous_state is None:
        return [f"{c.blue('state =')} {new}"]
    ops = state_diff(step.previous_state, step.session.state)
    if not ops:
        return [f"{c.blue('state')} unchanged ({kind})"]
    how = "snapshot" if kind == "STATE_SNAPSHOT" else "delta"
    return [
        f"{c.blue('state')} {how}: {_describe_ops(ops, width)}",
        f"      {c.blue('=')} {new}",
    ]


def _run_finished_lines(event: dict[str, Any], c: _Style, width: int | None) -> list[str]:
    outcome = event.get("outcome") or {}
    kind_of = outcome.get("type", "success") if isinstance(outcome, dict) else "success"
    lines = [
        c.bold("RUN_FINISHED")
        + f" {c.green(kind_of) if kind_of == 'success' else c.yellow(kind_of)}"
    ]
    if "result" in event:
        lines[0] += f" result {clip(_compact(event['result']), width)}"
    for interrupt in (outcome.get("interrupts") or []) if isinstance(outcome, dict) else []:
        message = f' "{interrupt.get("message")}"' if interrupt.get("message") else ""
        call = f" tool call {interrupt['toolCallId']}" if interrupt.get("toolCallId") else ""
        lines.append(
            f"      {c.yellow('interrupt')} {interrupt.get('id')} ({interrupt.get('reason')})"
            f"{call}{message}"
        )
    return lines
