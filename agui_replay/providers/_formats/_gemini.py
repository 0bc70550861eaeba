"""The Google Gemini wire format (``generateContent`` / ``streamGenerateContent?alt=sse``).

What the ``google-genai`` SDK (and Google ADK on top of it) sends and expects:

* ``POST {base}/{version}/models/{model}:generateContent``: one JSON
  ``GenerateContentResponse`` with ``candidates[0].content.parts`` (``{"text"}``,
  ``{"text", "thought": true}`` for reasoning, ``{"functionCall": {"name", "args"}}``),
  ``finishReason`` and ``usageMetadata``;
* ``POST .../models/{model}:streamGenerateContent?alt=sse``: ``data: {response}`` frames, each a
  whole ``GenerateContentResponse`` carrying the new parts only; the last one has the
  ``finishReason`` and the token counts.

Gemini sends a function call whole (its ``args`` are an object, not a JSON string), so the
fragments of a scripted :class:`~agui_replay.providers.ToolCall` are joined and sent as one part
when the call is complete.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from agui_replay.errors import ProviderError
from agui_replay.providers._formats._wire import (
    StreamEncoder,
    TurnContext,
    _finish,
    _usage,
    dumps,
)
from agui_replay.providers._plan import Plan, json_plan
from agui_replay.providers._script import (
    Block,
    Delta,
    ReasoningDelta,
    ScriptTurn,
    TextDelta,
    ToolCallDelta,
    Usage,
    blocks,
    gemini_model,
)

__all__ = ["GEMINI", "gemini_error_plan", "gemini_generate", "gemini_model", "gemini_stream"]

GEMINI = "gemini.generate"

# OpenAI chat finish reason (what _finish normalizes to) -> Gemini finishReason
_FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP", "content_filter": "SAFETY"}

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def gemini_error_plan(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Plan:
    """An error in Google's shape: ``{"error": {"code", "message", "status"}}``."""
    state = error_type or _STATUS.get(status, "UNKNOWN" if status < 500 else "INTERNAL")
    body = {"error": {"code": status, "message": message, "status": state}}
    return json_plan(status, body, headers)


def _model(ctx: TurnContext) -> str:
    return gemini_model(ctx.request.path) or ctx.request.model or "fake-model"


def _response_id(ctx: TurnContext) -> str:
    return ctx.ident("gemini-response", length=22)


def _usage_metadata(usage: Usage, reasoning_tokens: int = 0) -> dict[str, int]:
    out = {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.total_tokens + reasoning_tokens,
    }
    if reasoning_tokens:
        out["thoughtsTokenCount"] = reasoning_tokens
    return out


def _args(blk: Block) -> Any:
    try:
        value = json.loads(blk.text) if blk.text.strip() else {}
    except json.JSONDecodeError as exc:
        raise ProviderError(
            f"tool call {blk.name!r}: its arguments {blk.text!r} are not JSON ({exc}); Gemini "
            "sends a function call's args as one object, so they must parse"
        ) from None
    if not isinstance(value, dict):
        raise ProviderError(
            f"tool call {blk.name!r}: Gemini function call args are an object, got {blk.text!r}"
        )
    return value


def _call_part(blk: Block, given_id: str | None) -> dict[str, Any]:
    call: dict[str, Any] = {"name": blk.name, "args": _args(blk)}
    if given_id:
        call["id"] = given_id
    return {"functionCall": call}


def _envelope(ctx: TurnContext, candidate: dict[str, Any], usage: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"candidates": [candidate]}
    if usage is not None:
        body["usageMetadata"] = usage
    body["modelVersion"] = _model(ctx)
    body["responseId"] = _response_id(ctx)
    return body


def _candidate(parts: list[dict[str, Any]], finish: str | None = None) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish is not None:
        cand["finishReason"] = finish
    cand["index"] = 0
    return cand


def _given_ids(deltas: list[Delta]) -> list[str | None]:
    return [d.id for d in deltas if isinstance(d, ToolCallDelta) and d.name is not None]


def gemini_generate(ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float) -> Plan:
    """The whole (non-streamed) ``generateContent`` response, or the streamed one."""
    if ctx.request.stream:
        enc = gemini_stream(ctx, turn, delay)
        enc.start()
        for d in deltas:
            enc.feed(d)
        enc.end(turn.usage)
        return enc.s.plan()
    chat_finish, _, _ = _finish(turn, deltas)
    usage = _usage(turn, deltas)
    ids = iter(_given_ids(deltas))
    parts: list[dict[str, Any]] = []
    reasoning = 0
    for blk in blocks(deltas, lambda n: ""):
        if blk.kind == "text":
            parts.append({"text": blk.text})
        elif blk.kind == "reasoning":
            reasoning += len(blk.pieces)
            part: dict[str, Any] = {"text": blk.text, "thought": True}
            if blk.signature:
                part["thoughtSignature"] = blk.signature
            parts.append(part)
        else:
            parts.append(_call_part(blk, next(ids, None)))
    body = _envelope(
        ctx, _candidate(parts, _FINISH[chat_finish]), _usage_metadata(usage, reasoning)
    )
    return json_plan(200, body)


class _GeminiStream(StreamEncoder):
    """``data: {GenerateContentResponse}`` frames, one per text / reasoning delta; a function
    call is one frame, sent when its last fragment has arrived."""

    def __init__(self, ctx: TurnContext, turn: ScriptTurn, delay: float) -> None:
        super().__init__(ctx, turn, delay)
        self.call: tuple[Block, str | None] | None = None
        self.reasoning = 0

    def frame_parts(self, parts: list[dict[str, Any]], *, delta: bool) -> None:
        data = dumps(_envelope(self.ctx, _candidate(parts)))
        if delta:
            self.s.delta_frame(data)
        else:
            self.s.frame(data)

    def start(self) -> None:
        return None  # Gemini sends no preamble: the first frame already carries content

    def flush_call(self) -> None:
        if self.call is not None:
            blk, given = self.call
            self.call = None
            self.frame_parts([_call_part(blk, given)], delta=True)

    def _feed(self, d: Delta) -> None:
        if isinstance(d, ToolCallDelta):
            if d.name is not None:
                self.flush_call()
                self.call = (Block("tool", name=d.name), d.id)
            elif self.call is None:
                raise ProviderError(
                    "a ToolCallDelta without a name cannot start a tool call; "
                    "give the first fragment of each call a name"
                )
            self.call[0].pieces.append(d.args)
            return
        self.flush_call()
        if isinstance(d, TextDelta):
            self.frame_parts([{"text": d.text}], delta=True)
        elif isinstance(d, ReasoningDelta):
            self.reasoning += 1
            part: dict[str, Any] = {"text": d.text, "thought": True}
            if d.signature:
                part["thoughtSignature"] = d.signature
            self.frame_parts([part], delta=True)

    def end(self, usage: Usage | None) -> None:
        # a call still collecting fragments is complete now, before a cut or the last frame
        self.flush_call()
        super().end(usage)

    def _end(self, usage: Usage) -> None:
        chat_finish, _, _ = _finish(self.turn, self.seen)
        final = _candidate([{"text": ""}], _FINISH[chat_finish])
        self.s.frame(dumps(_envelope(self.ctx, final, _usage_metadata(usage, self.reasoning))))


def gemini_stream(ctx: TurnContext, turn: ScriptTurn, delay: float) -> StreamEncoder:
    """A streamed Gemini encoder (``start``, ``feed``..., ``end``)."""
    return _GeminiStream(ctx, turn, delay)
