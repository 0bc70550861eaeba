"""Wire encoders: a turn's deltas -> the exact bytes OpenAI / Anthropic would send.

Each encoder returns a :class:`Plan`: status, headers and the body as a list of network writes.
One streamed frame is one write, so a client can see the script's chunk boundaries.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from agui_replay.errors import ProviderError
from agui_replay.providers._plan import Plan, json_plan
from agui_replay.providers._script import (
    Api,
    Block,
    BlockWalker,
    Delta,
    ProviderRequest,
    ReasoningDelta,
    ScriptTurn,
    TextDelta,
    Usage,
    blocks,
    stable_id,
)

__all__ = ["StreamEncoder", "encode_turn", "error_plan", "stream_encoder"]


def dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


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


def _check_finish(turn: ScriptTurn) -> None:
    # before the first byte: a streamed turn only learns its default reason at the end
    _finish(turn, [])


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

    def take(self) -> list[bytes]:
        """The frames produced since the last call."""
        out, self.frames = self.frames, []
        return out

    def plan(self) -> Plan:
        return Plan(
            200,
            list(_SSE_HEADERS),
            [(self.delay, f) for f in self.frames],
            streaming=True,
            cut=self.cut,
        )


class StreamEncoder:
    """Encodes a streamed turn as its deltas arrive: ``start()``, ``feed(d)``..., ``end(usage)``.

    Frames pile up in the stream until :meth:`take`; a scripted turn feeds all its deltas at once,
    a function-driven turn one at a time as its generator yields them.
    """

    def __init__(self, ctx: TurnContext, turn: ScriptTurn, delay: float) -> None:
        _check_finish(turn)
        self.ctx = ctx
        self.turn = turn
        self.s = _Stream(turn, delay)
        self.seen: list[Delta] = []

    @property
    def cut(self) -> bool:
        return self.s.cut

    def take(self) -> list[bytes]:
        return self.s.take()

    @property
    def delay(self) -> float:
        return self.s.delay

    def lazy_plan(
        self,
        body: Iterable[tuple[float, bytes]] = (),
        abody: AsyncIterator[tuple[float, bytes]] | None = None,
    ) -> Plan:
        """The response whose writes ``body`` (or ``abody``) produces while it is sent."""
        headers = [*_SSE_HEADERS, *self.turn.headers.items()]
        return Plan(200, headers, body, streaming=True, abody=abody)

    def start(self) -> None:
        raise NotImplementedError

    def feed(self, d: Delta) -> None:
        self.seen.append(d)
        self._feed(d)

    def _feed(self, d: Delta) -> None:
        raise NotImplementedError

    def end(self, usage: Usage | None) -> None:
        """Close the stream; ``usage`` is the turn's final usage (None: the default)."""
        self.s.end_deltas()
        self._end(usage if usage is not None else Usage(10, max(1, len(self.seen))))

    def _end(self, usage: Usage) -> None:
        raise NotImplementedError


def _eager(enc: StreamEncoder, deltas: list[Delta], usage: Usage | None) -> Plan:
    enc.start()
    for d in deltas:
        enc.feed(d)
    enc.end(usage)
    return enc.s.plan()


# --- OpenAI Chat Completions -----------------------------------------------------------------


def _chat_call_id(ctx: TurnContext) -> Any:
    return lambda n: "call_" + ctx.ident("call", n)


def _chat_ids(ctx: TurnContext) -> tuple[str, str]:
    return "chatcmpl-" + ctx.ident("chatcmpl", length=29), "fp_" + ctx.ident("fp", length=10)


def openai_chat(ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float) -> Plan:
    if ctx.request.stream:
        has_text = any(isinstance(d, TextDelta) for d in deltas)
        return _eager(_ChatStream(ctx, turn, delay, has_text=has_text), deltas, turn.usage)
    chat_finish, _, _ = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    cid, fingerprint = _chat_ids(ctx)
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
        "usage": _chat_usage(usage),
        "system_fingerprint": fingerprint,
    }
    return json_plan(200, body)


def _chat_usage(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


class _ChatStream(StreamEncoder):
    def __init__(self, ctx: TurnContext, turn: ScriptTurn, delay: float, *, has_text: bool) -> None:
        super().__init__(ctx, turn, delay)
        # the role chunk carries content "" when the turn has text, null when it only calls
        # tools; a function-driven turn can only judge by its first delta
        self.has_text = has_text
        self.cid, self.fingerprint = _chat_ids(ctx)
        opts = ctx.request.json.get("stream_options")
        self.include_usage = isinstance(opts, dict) and opts.get("include_usage") is True
        self.walker = BlockWalker(_chat_call_id(ctx))
        self.tool_index = -1

    def chunk(self, choices: list[Any], usage_value: Any = None) -> str:
        obj: dict[str, Any] = {
            "id": self.cid,
            "object": "chat.completion.chunk",
            "created": self.ctx.created,
            "model": self.ctx.model,
            "system_fingerprint": self.fingerprint,
            "choices": choices,
        }
        if self.include_usage:
            obj["usage"] = usage_value
        return dumps(obj)

    @staticmethod
    def choice(delta: dict[str, Any], finish: str | None = None) -> list[Any]:
        return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]

    def start(self) -> None:
        role = {"role": "assistant", "content": "" if self.has_text else None}
        self.s.frame(self.chunk(self.choice(role)))

    def _feed(self, d: Delta) -> None:
        _, blk, opens = self.walker.step(d)
        if isinstance(d, TextDelta):
            self.s.delta_frame(self.chunk(self.choice({"content": d.text})))
        elif isinstance(d, ReasoningDelta):
            self.s.delta_frame(self.chunk(self.choice({"reasoning_content": d.text})))
        elif opens:
            self.tool_index += 1
            call = {
                "index": self.tool_index,
                "id": blk.call_id,
                "type": "function",
                "function": {"name": blk.name, "arguments": d.args},
            }
            self.s.delta_frame(self.chunk(self.choice({"tool_calls": [call]})))
        else:
            call = {"index": self.tool_index, "function": {"arguments": d.args}}
            self.s.delta_frame(self.chunk(self.choice({"tool_calls": [call]})))

    def _end(self, usage: Usage) -> None:
        chat_finish, _, _ = _finish(self.turn, self.seen)
        self.s.frame(self.chunk(self.choice({}, chat_finish)))
        if self.include_usage:
            self.s.frame(self.chunk([], _chat_usage(usage)))
        self.s.frame("[DONE]")


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


def _message_id(ctx: TurnContext) -> str:
    return "msg_01" + ctx.ident("msg", length=22)


def anthropic_messages(
    ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float
) -> Plan:
    if ctx.request.stream:
        enc = _AnthropicStream(ctx, turn, delay, start_usage=_usage(turn, deltas))
        return _eager(enc, deltas, turn.usage)
    _, stop_reason, _ = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    content: list[Any] = []
    for i, blk in enumerate(blocks(deltas, _anthropic_call_id(ctx))):
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
        "id": _message_id(ctx),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
    }
    return json_plan(200, body)


class _AnthropicStream(StreamEncoder):
    def __init__(
        self, ctx: TurnContext, turn: ScriptTurn, delay: float, *, start_usage: Usage
    ) -> None:
        super().__init__(ctx, turn, delay)
        # message_start reports input tokens before any delta; a function-driven turn may
        # yield its Usage later, and then message_delta corrects them (as the API may)
        self.start_input = start_usage.input_tokens
        self.walker = BlockWalker(_anthropic_call_id(ctx))
        self.open_block: tuple[int, Block] | None = None
        self.first = True

    def ev(self, event: str, obj: dict[str, Any], *, delta: bool = False) -> None:
        data = dumps({"type": event, **obj})
        if delta:
            self.s.delta_frame(data, event)
        else:
            self.s.frame(data, event)

    def start(self) -> None:
        message: dict[str, Any] = {
            "id": _message_id(self.ctx),
            "type": "message",
            "role": "assistant",
            "model": self.ctx.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.start_input, "output_tokens": 1},
        }
        self.ev("message_start", {"message": message})

    def close(self) -> None:
        if self.open_block is None:
            return
        idx, blk = self.open_block
        if blk.kind == "reasoning":
            sig = {"type": "signature_delta", "signature": _signature(self.ctx, blk, idx)}
            self.ev("content_block_delta", {"index": idx, "delta": sig})
        self.ev("content_block_stop", {"index": idx})

    def _feed(self, d: Delta) -> None:
        idx, blk, opens = self.walker.step(d)
        if opens:
            self.close()
            self.open_block = (idx, blk)
            if blk.kind == "text":
                start: dict[str, Any] = {"type": "text", "text": ""}
            elif blk.kind == "reasoning":
                start = {"type": "thinking", "thinking": "", "signature": ""}
            else:
                start = {"type": "tool_use", "id": blk.call_id, "name": blk.name, "input": {}}
            self.ev("content_block_start", {"index": idx, "content_block": start})
            if self.first:
                # the real API sends one ping after the first block opens
                self.ev("ping", {})
                self.first = False
        if isinstance(d, TextDelta):
            dd: dict[str, Any] = {"type": "text_delta", "text": d.text}
        elif isinstance(d, ReasoningDelta):
            dd = {"type": "thinking_delta", "thinking": d.text}
        else:
            dd = {"type": "input_json_delta", "partial_json": d.args}
        self.ev("content_block_delta", {"index": idx, "delta": dd}, delta=True)

    def _end(self, usage: Usage) -> None:
        _, stop_reason, _ = _finish(self.turn, self.seen)
        self.close()
        usage_obj = {"output_tokens": usage.output_tokens}
        if usage.input_tokens != self.start_input:
            usage_obj = {"input_tokens": usage.input_tokens, **usage_obj}
        self.ev(
            "message_delta",
            {
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": usage_obj,
            },
        )
        self.ev("message_stop", {})


# --- OpenAI Responses ------------------------------------------------------------------------


class _Responses:
    """The pieces of a Responses reply shared by the streamed and the whole form."""

    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        self.rid = "resp_" + ctx.ident("resp", length=48)
        self.req = ctx.request.json

    def call_id(self, n: int) -> str:
        return "call_" + self.ctx.ident("call", n)

    def item_id(self, blk: Block, idx: int) -> str:
        prefix = {"text": "msg_", "reasoning": "rs_", "tool": "fc_"}[blk.kind]
        return prefix + self.ctx.ident("item", idx, length=48)

    def item(self, blk: Block, idx: int, *, done: bool) -> dict[str, Any]:
        iid = self.item_id(blk, idx)
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

    def response(
        self,
        status: str,
        output: list[Any],
        usage: Usage | None = None,
        incomplete: str | None = None,
    ) -> dict[str, Any]:
        req = self.req
        obj: dict[str, Any] = {
            "id": self.rid,
            "object": "response",
            "created_at": self.ctx.created,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "instructions": req.get("instructions"),
            "max_output_tokens": req.get("max_output_tokens"),
            "model": self.ctx.model,
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
        if status != "in_progress" and usage is not None:
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


def openai_responses(ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float) -> Plan:
    if ctx.request.stream:
        return _eager(_ResponsesStream(ctx, turn, delay), deltas, turn.usage)
    _, _, incomplete = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    r = _Responses(ctx)
    final_status = "incomplete" if incomplete else "completed"
    all_blocks = blocks(deltas, r.call_id)
    for blk in all_blocks:
        if blk.kind == "tool":
            _parse_tool_input(blk)
    output = [r.item(b, i, done=True) for i, b in enumerate(all_blocks)]
    return json_plan(200, r.response(final_status, output, usage, incomplete))


class _ResponsesStream(StreamEncoder):
    def __init__(self, ctx: TurnContext, turn: ScriptTurn, delay: float) -> None:
        super().__init__(ctx, turn, delay)
        self.r = _Responses(ctx)
        self.walker = BlockWalker(self.r.call_id)
        self.seq = 0
        self.done_items: list[Any] = []
        self.open_block: tuple[int, Block] | None = None

    def ev(self, event: str, obj: dict[str, Any], *, delta: bool = False) -> None:
        data = dumps({"type": event, **obj, "sequence_number": self.seq})
        self.seq += 1
        if delta:
            self.s.delta_frame(data, event)
        else:
            self.s.frame(data, event)

    def start(self) -> None:
        self.ev("response.created", {"response": self.r.response("in_progress", [])})
        self.ev("response.in_progress", {"response": self.r.response("in_progress", [])})

    def close(self) -> None:
        if self.open_block is None:
            return
        idx, blk = self.open_block
        iid = self.r.item_id(blk, idx)
        where = {"item_id": iid, "output_index": idx}
        if blk.kind == "text":
            self.ev(
                "response.output_text.done",
                {**where, "content_index": 0, "text": blk.text, "logprobs": []},
            )
            self.ev(
                "response.content_part.done",
                {**where, "content_index": 0, "part": _output_text(blk.text)},
            )
        elif blk.kind == "reasoning":
            self.ev(
                "response.reasoning_summary_text.done",
                {**where, "summary_index": 0, "text": blk.text},
            )
            part = {"type": "summary_text", "text": blk.text}
            self.ev(
                "response.reasoning_summary_part.done", {**where, "summary_index": 0, "part": part}
            )
        else:
            self.ev(
                "response.function_call_arguments.done",
                {**where, "name": blk.name, "arguments": blk.text},
            )
        done = self.r.item(blk, idx, done=True)
        self.done_items.append(done)
        self.ev("response.output_item.done", {"output_index": idx, "item": done})

    def _feed(self, d: Delta) -> None:
        idx, blk, opens = self.walker.step(d)
        iid = self.r.item_id(blk, idx)
        where = {"item_id": iid, "output_index": idx}
        if opens:
            self.close()
            self.open_block = (idx, blk)
            self.ev(
                "response.output_item.added",
                {"output_index": idx, "item": self.r.item(blk, idx, done=False)},
            )
            if blk.kind == "text":
                self.ev(
                    "response.content_part.added",
                    {**where, "content_index": 0, "part": _output_text("")},
                )
            elif blk.kind == "reasoning":
                part = {"type": "summary_text", "text": ""}
                self.ev(
                    "response.reasoning_summary_part.added",
                    {**where, "summary_index": 0, "part": part},
                )
        if isinstance(d, TextDelta):
            self.ev(
                "response.output_text.delta",
                {**where, "content_index": 0, "delta": d.text, "logprobs": []},
                delta=True,
            )
        elif isinstance(d, ReasoningDelta):
            self.ev(
                "response.reasoning_summary_text.delta",
                {**where, "summary_index": 0, "delta": d.text},
                delta=True,
            )
        else:
            self.ev(
                "response.function_call_arguments.delta", {**where, "delta": d.args}, delta=True
            )

    def _end(self, usage: Usage) -> None:
        _, _, incomplete = _finish(self.turn, self.seen)
        self.close()
        final_status = "incomplete" if incomplete else "completed"
        final = "response.incomplete" if incomplete else "response.completed"
        body = self.r.response(final_status, self.done_items, usage, incomplete)
        self.ev(final, {"response": body})


def stream_encoder(
    api: Api,
    ctx: TurnContext,
    turn: ScriptTurn,
    delay: float,
    *,
    first: Delta,
    start_usage: Usage | None,
) -> StreamEncoder:
    """A streamed encoder for a turn whose deltas are not known yet (the first one is)."""
    if api == "openai.chat":
        return _ChatStream(ctx, turn, delay, has_text=isinstance(first, TextDelta))
    if api == "anthropic.messages":
        return _AnthropicStream(ctx, turn, delay, start_usage=start_usage or Usage(10, 1))
    return _ResponsesStream(ctx, turn, delay)


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
