"""The AWS Bedrock Converse wire format (``converse`` and ``converse-stream``).

What ``boto3.client("bedrock-runtime")`` sends and expects:

* ``POST /model/{modelId}/converse``: one JSON object with ``output.message.content`` (blocks
  ``{"text"}``, ``{"toolUse": {"toolUseId", "name", "input"}}``,
  ``{"reasoningContent": {"reasoningText": {"text", "signature"}}}``), ``stopReason``,
  ``usage`` and ``metrics``;
* ``POST /model/{modelId}/converse-stream``: an ``application/vnd.amazon.eventstream`` body,
  binary messages (see :mod:`agui_replay._eventstream`) whose ``:event-type`` is
  ``messageStart``, ``contentBlockStart`` (a tool call opens), ``contentBlockDelta`` (a text,
  reasoning or tool-input piece), ``contentBlockStop``, ``messageStop`` (the stop reason) and
  ``metadata`` (usage). Each message is one network write, so a scripted chunk is one message.

Errors are a JSON ``{"message"}`` with the error's name in the ``x-amzn-ErrorType`` header
(``ThrottlingException`` for 429, ``ValidationException`` for 400...), which botocore turns into
a ``ClientError`` whose ``Error.Code`` is that name.

The model id is in the path, URL-encoded by botocore
(``anthropic.claude-3-5-haiku-20241022-v1%3A0``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from agui_replay._eventstream import EVENTSTREAM_CONTENT_TYPE, encode_event
from agui_replay.providers._formats._wire import (
    StreamEncoder,
    TurnContext,
    _finish,
    _parse_tool_input,
    _Stream,
    _usage,
    dumps,
)
from agui_replay.providers._plan import Plan, json_plan
from agui_replay.providers._script import (
    Block,
    BlockWalker,
    Delta,
    ReasoningDelta,
    ScriptTurn,
    TextDelta,
    Usage,
    bedrock_target,
    blocks,
)

__all__ = [
    "BEDROCK",
    "bedrock_converse",
    "bedrock_error_plan",
    "bedrock_model",
    "bedrock_stream",
    "is_bedrock_path",
]

BEDROCK = "bedrock.converse"


# Anthropic-style stop reason (what _finish gives) -> Bedrock stopReason
_STOP = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "tool_use": "tool_use",
    "stop_sequence": "stop_sequence",
    "refusal": "content_filtered",
}

_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
_ERROR_NAMESPACE = "http://internal.amazon.com/coral/com.amazon.bedrock/"


def is_bedrock_path(path: str) -> bool:
    """Whether ``path`` is a Converse / ConverseStream request (any prefix before ``/model``).

    >>> is_bedrock_path("/model/amazon.nova-lite-v1%3A0/converse-stream")
    True
    """
    return bedrock_target(path) is not None


def bedrock_model(path: str) -> str | None:
    """The model id named in a Converse path, URL-decoded."""
    target = bedrock_target(path)
    return target[0] if target else None


def bedrock_streams(path: str) -> bool:
    """Whether ``path`` asks for ConverseStream."""
    target = bedrock_target(path)
    return target is not None and target[1]


def _request_id(ctx: TurnContext) -> str:
    h = ctx.ident("bedrock-request", length=32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def _tool_use_id(ctx: TurnContext) -> Any:
    return lambda n: "tooluse_" + ctx.ident("tooluse", n, length=22)


def _signature(ctx: TurnContext, blk: Block, index: int) -> str:
    return blk.signature or ctx.ident("bedrock-signature", index, length=40)


def _stop_reason(turn: ScriptTurn, deltas: list[Delta]) -> str:
    _, anthropic, _ = _finish(turn, deltas)
    return _STOP[anthropic]


def _usage_obj(usage: Usage) -> dict[str, int]:
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
    }


def _latency(delay: float, writes: int) -> int:
    return max(1, round(delay * writes * 1000))


def bedrock_error_plan(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Plan:
    """An error as Bedrock answers it: ``{"message"}`` and the ``x-amzn-ErrorType`` header."""
    fallback = "InternalServerException" if status >= 500 else "ValidationException"
    name = error_type or _ERRORS.get(status, fallback)
    hdrs = [("x-amzn-errortype", f"{name}:{_ERROR_NAMESPACE}"), *headers]
    return json_plan(status, {"message": message}, hdrs)


def bedrock_converse(ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float) -> Plan:
    """The whole ``converse`` response, or the ``converse-stream`` one."""
    if bedrock_streams(ctx.request.path):
        enc = _BedrockStream(ctx, turn, delay)
        enc.start()
        for d in deltas:
            enc.feed(d)
        enc.end(turn.usage)
        return enc.s.plan()
    stop = _stop_reason(turn, deltas)
    usage = _usage(turn, deltas)
    content: list[dict[str, Any]] = []
    for i, blk in enumerate(blocks(deltas, _tool_use_id(ctx))):
        if blk.kind == "text":
            content.append({"text": blk.text})
        elif blk.kind == "reasoning":
            text = {"text": blk.text, "signature": _signature(ctx, blk, i)}
            content.append({"reasoningContent": {"reasoningText": text}})
        else:
            call = {"toolUseId": blk.call_id, "name": blk.name, "input": _parse_tool_input(blk)}
            content.append({"toolUse": call})
    body = {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": _usage_obj(usage),
        "metrics": {"latencyMs": _latency(delay, 1)},
    }
    return json_plan(200, body, [("x-amzn-requestid", _request_id(ctx))])


class _FrameStream(_Stream):
    """The frames of a ConverseStream body: each event is one event stream message."""

    def __init__(self, turn: ScriptTurn, delay: float, headers: list[tuple[str, str]]) -> None:
        super().__init__(turn, delay)
        self.headers = headers

    @staticmethod
    def encode(data: str, event: str | None) -> bytes:
        return encode_event(event or "", data.encode("utf-8"))

    def frame(self, data: str, event: str | None = None) -> None:
        if not self.cut:
            self.frames.append(self.encode(data, event))

    def _maybe_malformed(self, event: str | None) -> None:
        t = self.turn
        due = t.malformed_after is not None and self.deltas_sent == t.malformed_after
        if due and not self.malformed_sent:
            # an intact message whose JSON payload is broken
            self.frames.append(self.encode(t.malformed_data, event or "contentBlockDelta"))
            self.malformed_sent = True

    def delta_frame(self, data: str, event: str | None = None) -> None:
        if self.cut:
            return
        self._maybe_malformed(event)
        if self.turn.cut_after is not None and self.deltas_sent >= self.turn.cut_after:
            self.cut = True
            return
        self.frames.append(self.encode(data, event))
        self.deltas_sent += 1

    def plan(self) -> Plan:
        return Plan(
            200,
            list(self.headers),
            [(self.delay, f) for f in self.frames],
            streaming=True,
            cut=self.cut,
        )


class _BedrockStream(StreamEncoder):
    """``messageStart``, per block (``contentBlockStart`` for a tool call)
    ``contentBlockDelta``... ``contentBlockStop``, then ``messageStop`` and ``metadata``."""

    def __init__(self, ctx: TurnContext, turn: ScriptTurn, delay: float) -> None:
        super().__init__(ctx, turn, delay)
        self.headers = [
            ("content-type", EVENTSTREAM_CONTENT_TYPE),
            ("x-amzn-requestid", _request_id(ctx)),
        ]
        self.s = _FrameStream(turn, delay, self.headers)
        self.walker = BlockWalker(_tool_use_id(ctx))
        self.open_block: tuple[int, Block] | None = None
        self.writes = 0

    def ev(self, event: str, obj: dict[str, Any], *, delta: bool = False) -> None:
        self.writes += 1
        if delta:
            self.s.delta_frame(dumps(obj), event)
        else:
            self.s.frame(dumps(obj), event)

    def lazy_plan(
        self,
        body: Iterable[tuple[float, bytes]] = (),
        abody: AsyncIterator[tuple[float, bytes]] | None = None,
    ) -> Plan:
        headers = [*self.headers, *self.turn.headers.items()]
        return Plan(200, headers, body, streaming=True, abody=abody)

    def start(self) -> None:
        self.ev("messageStart", {"role": "assistant"})

    def close(self) -> None:
        if self.open_block is None:
            return
        idx, blk = self.open_block
        self.open_block = None
        if blk.kind == "reasoning":
            sig = {"reasoningContent": {"signature": _signature(self.ctx, blk, idx)}}
            self.ev("contentBlockDelta", {"contentBlockIndex": idx, "delta": sig})
        self.ev("contentBlockStop", {"contentBlockIndex": idx})

    def _feed(self, d: Delta) -> None:
        idx, blk, opens = self.walker.step(d)
        if opens:
            self.close()
            self.open_block = (idx, blk)
            if blk.kind == "tool":
                start = {"toolUse": {"toolUseId": blk.call_id, "name": blk.name}}
                self.ev("contentBlockStart", {"contentBlockIndex": idx, "start": start})
        if isinstance(d, TextDelta):
            delta: dict[str, Any] = {"text": d.text}
        elif isinstance(d, ReasoningDelta):
            delta = {"reasoningContent": {"text": d.text}}
        else:
            delta = {"toolUse": {"input": d.args}}
        self.ev("contentBlockDelta", {"contentBlockIndex": idx, "delta": delta}, delta=True)

    def _end(self, usage: Usage) -> None:
        self.close()
        self.ev("messageStop", {"stopReason": _stop_reason(self.turn, self.seen)})
        metrics = {"latencyMs": _latency(self.s.delay, self.writes)}
        self.ev("metadata", {"usage": _usage_obj(usage), "metrics": metrics})


def bedrock_stream(ctx: TurnContext, turn: ScriptTurn, delay: float) -> StreamEncoder:
    """A ConverseStream encoder (``start``, ``feed``..., ``end``)."""
    return _BedrockStream(ctx, turn, delay)
