"""One entry point over every wire format: OpenAI and Anthropic (``_wire``), Gemini
(``_gemini``), AWS Bedrock Converse (``_bedrock``).

The fake asks this module for a turn's response, a streamed encoder or an error; the API named
by the request path picks the format.
"""

from __future__ import annotations

from collections.abc import Iterable

from agui_replay.providers._formats._bedrock import (
    BEDROCK,
    bedrock_converse,
    bedrock_error_plan,
    bedrock_stream,
)
from agui_replay.providers._formats._gemini import (
    GEMINI,
    gemini_error_plan,
    gemini_generate,
    gemini_stream,
)
from agui_replay.providers._formats._wire import StreamEncoder, TurnContext
from agui_replay.providers._formats._wire import encode_turn as _encode_turn
from agui_replay.providers._formats._wire import error_plan as _error_plan
from agui_replay.providers._formats._wire import stream_encoder as _stream_encoder
from agui_replay.providers._plan import Plan
from agui_replay.providers._script import Api, Delta, ScriptTurn, Usage

__all__ = ["encode_turn", "error_plan", "stream_encoder"]


def error_plan(
    api: Api | None,
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    headers: Iterable[tuple[str, str]] = (),
) -> Plan:
    """An error response in the provider's own error shape (OpenAI's when ``api`` is None)."""
    if api == GEMINI:
        return gemini_error_plan(status, message, error_type=error_type, headers=headers)
    if api == BEDROCK:
        return bedrock_error_plan(status, message, error_type=error_type, headers=headers)
    return _error_plan(api, status, message, error_type=error_type, headers=headers)


def encode_turn(
    api: Api, ctx: TurnContext, turn: ScriptTurn, deltas: list[Delta], delay: float
) -> Plan:
    """The response for ``turn`` to ``ctx.request`` in the wire format of ``api``."""
    if api not in (GEMINI, BEDROCK):
        return _encode_turn(api, ctx, turn, deltas, delay)
    if turn.status >= 400:
        hdrs = list(turn.headers.items())
        msg = turn.error_message or f"scripted error {turn.status}"
        return error_plan(api, turn.status, msg, error_type=turn.error_type, headers=hdrs)
    if api == BEDROCK:
        plan = bedrock_converse(ctx, turn, deltas, delay)
    else:
        plan = gemini_generate(ctx, turn, deltas, delay)
    plan.headers.extend(turn.headers.items())
    return plan


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
    if api == GEMINI:
        return gemini_stream(ctx, turn, delay)
    if api == BEDROCK:
        return bedrock_stream(ctx, turn, delay)
    return _stream_encoder(api, ctx, turn, delay, first=first, start_usage=start_usage)
