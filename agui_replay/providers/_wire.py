"""Wire encoders: a turn's deltas -> the exact bytes OpenAI / Anthropic would send.

Each encoder returns a :class:`Plan`: status, headers and the body as a list of network writes.
One streamed frame is one write, so a client can see the script's chunk boundaries.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from agui_replay.errors import ProviderError
from agui_replay.providers._script import (
    Api,
    Block,
    Delta,
    ProviderRequest,
    ReasoningDelta,
    ScriptTurn,
    TextDelta,
    Usage,
    block_of,
    blocks,
    stable_id,
)

__all__ = ["Plan", "StreamCut", "encode_turn", "error_plan"]


class StreamCut(Exception):
    """Raised by a plan's body iterator: drop the connection here instead of ending the body."""


@dataclass
class Plan:
    """An HTTP response to send: the body is ``(delay_before, bytes)`` writes."""

    status: int
    headers: list[tuple[str, str]]
    body: Iterable[tuple[float, bytes]]
    streaming: bool
    cut: bool = False
    notes: list[str] = field(default_factory=list)

    def writes(self) -> Iterator[tuple[float, bytes]]:
        """The writes in order; raises :class:`StreamCut` at the end if the stream is cut."""
        yield from self.body
        if self.cut:
            raise StreamCut


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def url_target(url: Any) -> str:
    """The request target (path and query, as sent) of an ``httpx`` or ``httpx2`` URL."""
    raw = url.raw_path
    return raw.decode("ascii") if isinstance(raw, bytes) else str(raw)


def json_plan(status: int, obj: Any, headers: Iterable[tuple[str, str]] = ()) -> Plan:
    data = dumps(obj).encode()
    return Plan(
        status,
        [("content-type", "application/json"), *headers],
        [(0.0, data)],
        streaming=False,
    )


_ERROR_TYPES_OPENAI = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
}
_ERROR_TYPES_ANTHROPIC = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_plan(
    api: Api | None,
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Plan:
    """An error response in the provider's own error shape."""
    if api == "anthropic.messages":
        etype = error_type or _ERROR_TYPES_ANTHROPIC.get(status, "api_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": etype, "message": message}}
    else:
        etype = error_type or _ERROR_TYPES_OPENAI.get(status, "server_error")
        body = {"error": {"message": message, "type": etype, "param": None, "code": etype}}
    return json_plan(status, body, headers)


# --- shared -----------------------------------------------------------------------------------


@dataclass
class TurnContext:
    seed: int | str
    turn: int
    created: int
    request: ProviderRequest

    @property
    def model(self) -> str:
        return self.request.model or "fake-model"

    def ident(self, kind: str, *more: object, length: int = 24) -> str:
        return stable_id(self.seed, kind, self.turn, *more, length=length)


def _sse(data: str, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {data}\n\n".encode()


_SSE_HEADERS = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]

_FINISH = {
    # neutral / OpenAI chat name -> (chat, anthropic stop_reason, responses incomplete reason)
    "stop": ("stop", "end_turn", None),
    "end_turn": ("stop", "end_turn", None),
    "length": ("length", "max_tokens", "max_output_tokens"),
    "max_tokens": ("length", "max_tokens", "max_output_tokens"),
    "tool_calls": ("tool_calls", "tool_use", None),
    "tool_use": ("tool_calls", "tool_use", None),
    "content_filter": ("content_filter", "refusal", "content_filter"),
    "refusal": ("content_filter", "refusal", "content_filter"),
    "stop_sequence": ("stop", "stop_sequence", None),
}


def _finish(turn: ScriptTurn, deltas: list[Delta]) -> tuple[str, str, str | None]:
    reason = turn.finish_reason
    if reason is None:
        reason = "tool_calls" if any(_is_tool(d) for d in deltas) else "stop"
    if reason not in _FINISH:
        raise ProviderError(
            f"unknown finish_reason {reason!r}; use one of {', '.join(sorted(_FINISH))}"
        )
    return _FINISH[reason]


def _is_tool(d: Delta) -> bool:
    return not isinstance(d, (TextDelta, ReasoningDelta))


def _usage(turn: ScriptTurn, deltas: list[Delta]) -> Usage:
    return turn.usage if turn.usage is not None else Usage(10, max(1, len(deltas)))


class _Stream:
    """Collects SSE frames, counting script deltas so cut/malformed positions can apply."""

    def __init__(self, turn: ScriptTurn, delay: float) -> None:
        self.turn = turn
        self.delay = delay
        self.frames: list[bytes] = []
        self.deltas_sent = 0
        self.cut = False
        self.malformed_sent = False

    def frame(self, data: str, event: str | None = None) -> None:
        if not self.cut:
            self.frames.append(_sse(data, event))

    def _maybe_malformed(self, event: str | None) -> None:
        t = self.turn
        due = t.malformed_after is not None and self.deltas_sent == t.malformed_after
        if due and not self.malformed_sent:
            self.frames.append(_sse(t.malformed_data, event))
            self.malformed_sent = True

    def delta_frame(self, data: str, event: str | None = None) -> None:
        if self.cut:
            return
        self._maybe_malformed(event)
        if self.turn.cut_after is not None and self.deltas_sent >= self.turn.cut_after:
            self.cut = True
            return
        self.frames.append(_sse(data, event))
        self.deltas_sent += 1

    def end_deltas(self) -> None:
        """Called after the last delta: a cut or malformed frame scripted there happens now."""
        if self.cut:
            return
        self._maybe_malformed(None)
        if self.turn.cut_after is not None and self.deltas_sent >= self.turn.cut_after:
            self.cut = True

    def plan(self) -> Plan:
        return Plan(
            200,
            list(_SSE_HEADERS),
            [(self.delay, f) for f in self.frames],
            streaming=True,
            cut=self.cut,
        )


# --- OpenAI Chat Completions -----------------------------------------------------------------


def _chat_call_id(ctx: TurnContext) -> Any:
    return lambda n: "call_" + ctx.ident("call", n)


def openai_chat(ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float) -> Plan:
    chat_finish, _, _ = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    cid = "chatcmpl-" + ctx.ident("chatcmpl", length=29)
    fingerprint = "fp_" + ctx.ident("fp", length=10)
    usage_obj = {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }
    req = ctx.request.json
    if not ctx.request.stream:
        text = "".join(d.text for d in deltas if isinstance(d, TextDelta))
        reasoning = "".join(d.text for d in deltas if isinstance(d, ReasoningDelta))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text if text or not any(_is_tool(d) for d in deltas) else None,
            "refusal": None,
        }
        if reasoning:
            message["reasoning_content"] = reasoning
        calls = [b for b in blocks(deltas, _chat_call_id(ctx)) if b.kind == "tool"]
        if calls:
            message["tool_calls"] = [
                {
                    "id": b.call_id,
                    "type": "function",
                    "function": {"name": b.name, "arguments": b.text},
                }
                for b in calls
            ]
        body = {
            "id": cid,
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": chat_finish}
            ],
            "usage": usage_obj,
            "system_fingerprint": fingerprint,
        }
        return json_plan(200, body)

    opts = req.get("stream_options")
    include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
    s = _Stream(turn, delay)

    def chunk(choices: list[Any], usage_value: Any = None) -> str:
        obj: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            "system_fingerprint": fingerprint,
            "choices": choices,
        }
        if include_usage:
            obj["usage"] = usage_value
        return dumps(obj)

    def choice(delta: dict[str, Any], finish: str | None = None) -> list[Any]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]

    has_text = any(isinstance(d, TextDelta) for d in deltas)
    s.frame(chunk(choice({"role": "assistant", "content": "" if has_text else None})))
    tool_index = -1
    for _, d, blk, opens in block_of(deltas, _chat_call_id(ctx)):
        if isinstance(d, TextDelta):
            s.delta_frame(chunk(choice({"content": d.text})))
        elif isinstance(d, ReasoningDelta):
            s.delta_frame(chunk(choice({"reasoning_content": d.text})))
        elif opens:
            tool_index += 1
            call = {
                "index": tool_index,
                "id": blk.call_id,
                "type": "function",
                "function": {"name": blk.name, "arguments": d.args},
            }
            s.delta_frame(chunk(choice({"tool_calls": [call]})))
        else:
            call = {"index": tool_index, "function": {"arguments": d.args}}
            s.delta_frame(chunk(choice({"tool_calls": [call]})))
    s.end_deltas()
    s.frame(chunk(choice({}, chat_finish)))
    if include_usage:
        s.frame(chunk([], usage_obj))
    s.frame("[DONE]")
    return s.plan()


# --- Anthropic Messages ----------------------------------------------------------------------


def _anthropic_call_id(ctx: TurnContext) -> Any:
    return lambda n: "toolu_01" + ctx.ident("toolu", n, length=22)


def _signature(ctx: TurnContext, blk: Block, index: int) -> str:
    return blk.signature or ("sig_" + ctx.ident("signature", index, length=40))


def _parse_tool_input(blk: Block) -> Any:
    try:
        return json.loads(blk.text) if blk.text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"tool call {blk.name!r}: its arguments {blk.text!r} are not JSON ({exc}); a "
            "non-streamed Anthropic/Responses reply needs parseable arguments"
        ) from None


def anthropic_messages(
    ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float
) -> Plan:
    _, stop_reason, _ = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    mid = "msg_01" + ctx.ident("msg", length=22)
    call_id = _anthropic_call_id(ctx)
    if not ctx.request.stream:
        content: list[Any] = []
        for i, blk in enumerate(blocks(deltas, call_id)):
            if blk.kind == "text":
                content.append({"type": "text", "text": blk.text})
            elif blk.kind == "reasoning":
                content.append(
                    {"type": "thinking", "thinking": blk.text, "signature": _signature(ctx, blk, i)}
                )
            else:
                content.append(
                    {
                        "type": "tool_use",
                        "id": blk.call_id,
                        "name": blk.name,
                        "input": _parse_tool_input(blk),
                    }
                )
        body = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        }
        return json_plan(200, body)

    s = _Stream(turn, delay)

    def ev(event: str, obj: dict[str, Any], *, delta: bool = False) -> None:
        data = dumps({"type": event, **obj})
        if delta:
            s.delta_frame(data, event)
        else:
            s.frame(data, event)

    ev(
        "message_start",
        {
            "message": {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": ctx.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": usage.input_tokens, "output_tokens": 1},
            }
        },
    )
    open_block: tuple[int, Block] | None = None

    def close() -> None:
        if open_block is None:
            return
        idx, blk = open_block
        if blk.kind == "reasoning":
            sig = {"type": "signature_delta", "signature": _signature(ctx, blk, idx)}
            ev("content_block_delta", {"index": idx, "delta": sig})
        ev("content_block_stop", {"index": idx})

    first = True
    for idx, d, blk, opens in block_of(deltas, call_id):
        if opens:
            close()
            open_block = (idx, blk)
            if blk.kind == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
            elif blk.kind == "reasoning":
                start = {"type": "thinking", "thinking": "", "signature": ""}
            else:
                start = {"type": "tool_use", "id": blk.call_id, "name": blk.name, "input": {}}
            ev("content_block_start", {"index": idx, "content_block": start})
            if first:
                # the real API sends one ping after the first block opens
                ev("ping", {})
                first = False
        if isinstance(d, TextDelta):
            dd: dict[str, Any] = {"type": "text_delta", "text": d.text}
        elif isinstance(d, ReasoningDelta):
            dd = {"type": "thinking_delta", "thinking": d.text}
        else:
            dd = {"type": "input_json_delta", "partial_json": d.args}
        ev("content_block_delta", {"index": idx, "delta": dd}, delta=True)
    s.end_deltas()
    close()
    ev(
        "message_delta",
        {
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": usage.output_tokens},
        },
    )
    ev("message_stop", {})
    return s.plan()


# --- OpenAI Responses ------------------------------------------------------------------------


def openai_responses(ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float) -> Plan:
    _, _, incomplete = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    rid = "resp_" + ctx.ident("resp", length=48)
    req = ctx.request.json
    call_id = lambda n: "call_" + ctx.ident("call", n)  # noqa: E731

    def item_id(blk: Block, idx: int) -> str:
        prefix = {"text": "msg_", "reasoning": "rs_", "tool": "fc_"}[blk.kind]
        return prefix + ctx.ident("item", idx, length=48)

    def item(blk: Block, idx: int, *, done: bool) -> dict[str, Any]:
        iid = item_id(blk, idx)
        status = "completed" if done else "in_progress"
        if blk.kind == "text":
            content = [_output_text(blk.text)] if done else []
            return {
                "id": iid,
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": content,
            }
        if blk.kind == "reasoning":
            summary = [{"type": "summary_text", "text": blk.text}] if done else []
            return {"id": iid, "type": "reasoning", "summary": summary}
        return {
            "id": iid,
            "type": "function_call",
            "status": status,
            "arguments": blk.text if done else "",
            "call_id": blk.call_id,
            "name": blk.name,
        }

    def response(status: str, output: list[Any]) -> dict[str, Any]:
        obj: dict[str, Any] = {
            "id": rid,
            "object": "response",
            "created_at": ctx.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": req.get("instructions"),
            "max_output_tokens": req.get("max_output_tokens"),
            "model": ctx.model,
            "output": output,
            "parallel_tool_calls": req.get("parallel_tool_calls", True),
            "previous_response_id": req.get("previous_response_id"),
            "temperature": req.get("temperature", 1.0),
            "tool_choice": req.get("tool_choice", "auto"),
            "tools": req.get("tools", []),
            "top_p": req.get("top_p", 1.0),
            "metadata": req.get("metadata") or {},
            "usage": None,
        }
        if status != "in_progress":
            obj["usage"] = {
                "input_tokens": usage.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": usage.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": usage.total_tokens,
            }
        if status == "incomplete":
            obj["incomplete_details"] = {"reason": incomplete}
        return obj

    final_status = "incomplete" if incomplete else "completed"
    all_blocks = blocks(deltas, call_id)
    if not ctx.request.stream:
        for blk in all_blocks:
            if blk.kind == "tool":
                _parse_tool_input(blk)
        output = [item(b, i, done=True) for i, b in enumerate(all_blocks)]
        return json_plan(200, response(final_status, output))

    s = _Stream(turn, delay)
    seq = 0

    def ev(event: str, obj: dict[str, Any], *, delta: bool = False) -> None:
        nonlocal seq
        data = dumps({"type": event, **obj, "sequence_number": seq})
        seq += 1
        if delta:
            s.delta_frame(data, event)
        else:
            s.frame(data, event)

    ev("response.created", {"response": response("in_progress", [])})
    ev("response.in_progress", {"response": response("in_progress", [])})
    done_items: list[Any] = []
    open_block: tuple[int, Block] | None = None

    def close() -> None:
        if open_block is None:
            return
        idx, blk = open_block
        iid = item_id(blk, idx)
        where = {"item_id": iid, "output_index": idx}
        if blk.kind == "text":
            ev(
                "response.output_text.done",
                {**where, "content_index": 0, "text": blk.text, "logprobs": []},
            )
            ev(
                "response.content_part.done",
                {**where, "content_index": 0, "part": _output_text(blk.text)},
            )
        elif blk.kind == "reasoning":
            ev(
                "response.reasoning_summary_text.done",
                {**where, "summary_index": 0, "text": blk.text},
            )
            part = {"type": "summary_text", "text": blk.text}
            ev("response.reasoning_summary_part.done", {**where, "summary_index": 0, "part": part})
        else:
            ev(
                "response.function_call_arguments.done",
                {**where, "name": blk.name, "arguments": blk.text},
            )
        done = item(blk, idx, done=True)
        done_items.append(done)
        ev("response.output_item.done", {"output_index": idx, "item": done})

    for idx, d, blk, opens in block_of(deltas, call_id):
        iid = item_id(blk, idx)
        where = {"item_id": iid, "output_index": idx}
        if opens:
            close()
            open_block = (idx, blk)
            ev(
                "response.output_item.added",
                {"output_index": idx, "item": item(blk, idx, done=False)},
            )
            if blk.kind == "text":
                ev(
                    "response.content_part.added",
                    {**where, "content_index": 0, "part": _output_text("")},
                )
            elif blk.kind == "reasoning":
                part = {"type": "summary_text", "text": ""}
                ev(
                    "response.reasoning_summary_part.added",
                    {**where, "summary_index": 0, "part": part},
                )
        if isinstance(d, TextDelta):
            ev(
                "response.output_text.delta",
                {**where, "content_index": 0, "delta": d.text, "logprobs": []},
                delta=True,
            )
        elif isinstance(d, ReasoningDelta):
            ev(
                "response.reasoning_summary_text.delta",
                {**where, "summary_index": 0, "delta": d.text},
                delta=True,
            )
        else:
            ev("response.function_call_arguments.delta", {**where, "delta": d.args}, delta=True)
    s.end_deltas()
    close()
    final = "response.incomplete" if incomplete else "response.completed"
    ev(final, {"response": response(final_status, done_items)})
    return s.plan()


def _output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


ENCODERS = {
    "openai.chat": openai_chat,
    "openai.responses": openai_responses,
    "anthropic.messages": anthropic_messages,
}


def encode_turn(
    api: Api, ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float
) -> Plan:
    """The response for ``turn`` to ``ctx.request`` in the wire format of ``api``."""
    if turn.status >= 400:
        hdrs = list(turn.headers.items())
        msg = turn.error_message or f"scripted error {turn.status}"
        return error_plan(api, turn.status, msg, error_type=turn.error_type, headers=hdrs)
    plan = ENCODERS[api](ctx, turn, deltas, delay)
    plan.headers.extend(turn.headers.items())
    return plan
