"""Reading a cassette's recorded HTTP exchanges for ``show --interactions`` and ``diff
--interactions``: each exchange with its place in the file, its response body as bytes and as
frames (SSE or AWS event stream), and a short readable summary of what the request asked and
what the response said.

The summaries know the chat formats the fake provider speaks (OpenAI chat and responses,
Anthropic messages, Gemini, Bedrock Converse); anything else is shown by its size and a clipped
body. Secrets are already scrubbed in a cassette, so nothing here scrubs again.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agui_replay._eventstream import decode_frames
from agui_replay._text import clip
from agui_replay.cassette import Cassette, load_cassette
from agui_replay.errors import CassetteError
from agui_replay.sse import SSEParser

__all__ = ["Exchange", "exchanges", "load_exchanges"]

_EVENT_FILES = (".sse", ".txt", ".jsonl", ".ndjson")


@dataclass
class Exchange:
    """One recorded request and its response, as the cassette holds them."""

    index: int
    """Its number over the whole file: the runs' provider interactions in order, then ``http``."""
    where: str
    """Its place in the file: ``runs[0].interactions[1]`` or ``http[0]``."""
    who: str
    """The provider it went to (``openai``, ``default``...) or, for ``http``, the host."""
    method: str
    target: str
    """The request path of a provider interaction, the URL of an ``http`` exchange."""
    request: dict[str, Any]
    response: dict[str, Any]
    api: str | None
    """The chat API the request path names (``openai.chat``...), None when none."""

    @property
    def body(self) -> Any:
        return self.request.get("body")

    @property
    def status(self) -> Any:
        return self.response.get("status")

    @property
    def chunks(self) -> list[Any]:
        chunks = self.response.get("chunks")
        return chunks if isinstance(chunks, list) else []

    def content(self) -> bytes:
        """The whole response body as bytes (chunks joined, base64 chunks decoded)."""
        if self.chunks:
            return b"".join(_chunk_bytes(c) for c in self.chunks)
        body = self.response.get("body")
        if body is None:
            return b""
        if isinstance(body, str):
            return body.encode("utf-8")
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def content_type(self) -> str:
        return _header(self.response.get("headers"), "content-type").lower()

    def title(self) -> str:
        return f"#{self.index} {self.where} {self.who} {self.method} {self.target}"


def load_exchanges(path: str) -> tuple[Cassette, list[Exchange]]:
    """The cassette at ``path`` and its exchanges; a file that is not a cassette is refused."""
    if Path(path).suffix.lower() in _EVENT_FILES:
        raise CassetteError(
            "--interactions needs a cassette (.json): an SSE capture or JSON lines holds the "
            "events only, no HTTP requests",
            path=path,
        )
    cassette = load_cassette(
        path,
        validate="shape",
        missing_hint="Give the path of a cassette (.json) that pytest --agui-record wrote.",
    )
    return cassette, exchanges(cassette)


def exchanges(cassette: Cassette) -> list[Exchange]:
    from agui_replay.providers import detect_api

    found: list[Exchange] = []
    for r, run in enumerate(cassette.runs):
        for i, interaction in enumerate(run.interactions):
            request = _object(interaction.get("request"))
            target = str(request.get("path", ""))
            found.append(
                Exchange(
                    len(found),
                    f"runs[{r}].interactions[{i}]",
                    str(interaction.get("provider") or "provider"),
                    str(request.get("method", "?")),
                    target,
                    request,
                    _object(interaction.get("response")),
                    detect_api(target),
                )
            )
    for j, exchange in enumerate(cassette.http):
        request = _object(exchange.get("request"))
        url = str(request.get("url", ""))
        found.append(
            Exchange(
                len(found),
                f"http[{j}]",
                urlsplit(url).netloc or "?",
                str(request.get("method", "?")),
                url,
                request,
                _object(exchange.get("response")),
                None,
            )
        )
    return found


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _chunk_bytes(chunk: Any) -> bytes:
    if not isinstance(chunk, dict):
        return b""
    data = chunk.get("data")
    if chunk.get("encoding") == "base64" and isinstance(data, str):
        try:
            return base64.b64decode(data.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            return b""
    return str(data if data is not None else "").encode("utf-8")


def _header(headers: Any, name: str) -> str:
    pairs = headers.items() if isinstance(headers, dict) else headers or []
    for pair in pairs:
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and str(pair[0]).lower() == name:
            return str(pair[1])
    return ""


# --- the response as frames ---------------------------------------------------------------------


def frames(exchange: Exchange) -> list[dict[str, Any]] | None:
    """The response as a list of frames when it is a stream: SSE (``{"event"?, "data"}``, data
    parsed as JSON when it is JSON) or an AWS event stream (``{"event", "data"}``); None for
    a plain body."""
    kind = exchange.content_type()
    data = exchange.content()
    if "vnd.amazon.eventstream" in kind:
        out: list[dict[str, Any]] = []
        for _start, _end, frame in decode_frames(data)[0]:
            name = frame.event_type or frame.exception_type or frame.message_type or "?"
            out.append({"event": name, "data": _json_or_text(frame.payload)})
        return out
    if "event-stream" in kind or (not kind and exchange.chunks and data.startswith(b"data:")):
        return _sse_frames(data)
    return None


def _sse_frames(data: bytes) -> list[dict[str, Any]]:
    parser = SSEParser()
    out: list[dict[str, Any]] = []
    for sse in parser.feed(data) + parser.close():
        frame: dict[str, Any] = {} if sse.event is None else {"event": sse.event}
        frame["data"] = _json_or_text(sse.data)
        out.append(frame)
    return out


def _json_or_text(raw: bytes | str) -> Any:
    text = raw if isinstance(raw, str) else raw.decode("utf-8", "replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def response_value(exchange: Exchange) -> Any:
    """What ``diff --interactions`` compares of the response besides its status: the stream's
    frames (chunk boundaries and timing left out), else the body."""
    found = frames(exchange)
    if found is not None:
        return {"stream": found}
    body = exchange.response.get("body")
    if body is None and exchange.chunks:
        return {"body": _json_or_text(exchange.content())}
    return {"body": body}


# --- summaries ----------------------------------------------------------------------------------


def request_summary(exchange: Exchange, width: int | None) -> str:
    body = exchange.body
    if isinstance(body, dict) and body.get("jsonrpc") and isinstance(body.get("method"), str):
        # an MCP server's request: its method and, for tools/call, the tool
        name = _object(body.get("params")).get("name")
        called = f" {name}" if isinstance(name, str) else ""
        ident = f" (id {body['id']})" if "id" in body else ""
        return f"JSON-RPC {body['method']}{called}{ident}"
    if exchange.api is None or not isinstance(body, dict):
        return _plain_body(body, width)
    from agui_replay.providers import ProviderRequest, detect_api

    # The fake provider's view of a request knows where each API keeps its model and messages.
    api = detect_api(exchange.target)
    request = ProviderRequest(exchange.index, exchange.method, exchange.target, {}, body, api)
    model = request.model
    parts = [model] if model else []
    messages = request.messages
    parts.append(f"{len(messages)} message(s)")
    if messages:
        parts.append(f"last {_said(messages[-1], width)}")
    if request.tools:
        parts.append(f"{len(request.tools)} tool(s)")
    return ", ".join(parts)


def _said(message: Any, width: int | None) -> str:
    """``role: "text"`` of one message of any of the chat formats."""
    if not isinstance(message, dict):
        return _quote(json.dumps(message, ensure_ascii=False), width)
    role = str(message.get("role") or message.get("type") or "?")
    pieces = _pieces(message.get("content", message.get("parts")), width)
    for call in message.get("tool_calls") or []:  # OpenAI chat, an assistant's calls
        if isinstance(call, dict):
            pieces.append(f"calls {_object(call.get('function')).get('name', '?')}")
    if message.get("type") == "function_call_output":  # OpenAI responses
        pieces.append(f"tool result {_quote(str(message.get('output', '')), width)}")
    if message.get("type") == "function_call":
        pieces.append(f"calls {message.get('name', '?')}")
    if role == "tool" and message.get("tool_call_id"):
        role = f"tool ({message['tool_call_id']})"
    return f"{role}: {'; '.join(pieces) if pieces else '(empty)'}"


def _pieces(content: Any, width: int | None) -> list[str]:
    short = None if width is None else min(width, 60)
    if isinstance(content, str):
        return [_quote(content, width)]
    out: list[str] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str):
            out.append(_quote(part["text"], width))
        elif "functionCall" in part:
            out.append(f"calls {_object(part['functionCall']).get('name', '?')}")
        elif "functionResponse" in part:
            out.append(f"tool result of {_object(part['functionResponse']).get('name', '?')}")
        elif "toolUse" in part:
            out.append(f"calls {_object(part['toolUse']).get('name', '?')}")
        elif "toolResult" in part:
            result = _object(part["toolResult"])
            out.append(f"tool result {_quote(_result_text(result.get('content')), short)}")
        elif part.get("type") == "tool_use":
            out.append(f"calls {part.get('name', '?')}")
        elif part.get("type") == "tool_result":
            out.append(f"tool result {_quote(_result_text(part.get('content')), short)}")
        else:
            out.append(f"[{part.get('type') or next(iter(part), '?')}]")
    return out


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict) and "json" in part:
            texts.append(json.dumps(part["json"], ensure_ascii=False))
    return " ".join(texts)


def _quote(text: str, width: int | None) -> str:
    return json.dumps(clip(text, width), ensure_ascii=False)


def _plain_body(body: Any, width: int | None) -> str:
    if body is None or body == "":
        return "no body"
    if isinstance(body, str):
        return f"body {_quote(body, width)}"
    return "body " + clip(json.dumps(body, ensure_ascii=False, separators=(",", ":")), width)


@dataclass
class _Answer:
    text: str = ""
    reasoning: str = ""
    calls: dict[Any, list[str]] | None = None  # key -> [name, arguments]

    def call(self, key: Any, name: str | None = None, args: str = "") -> None:
        calls = self.calls if self.calls is not None else {}
        self.calls = calls
        entry = calls.setdefault(key, ["?", ""])
        if name:
            entry[0] = name
        entry[1] += args


def response_summary(exchange: Exchange, width: int | None) -> str:
    status = exchange.status
    if isinstance(status, int) and status >= 400:
        return f"error: {_error_text(exchange, width)}"
    answer = _answer(exchange) if exchange.api else None
    if answer is not None and (answer.text or answer.calls or answer.reasoning):
        parts = []
        if answer.reasoning:
            parts.append(f"reasoning {_quote(answer.reasoning, width)}")
        if answer.text:
            parts.append(f"text {_quote(answer.text, width)}")
        for name, args in (answer.calls or {}).values():
            parts.append(f"calls {name}({clip(args, width)})")
        return "; ".join(parts)
    found = frames(exchange)
    if found is not None:
        last = clip(json.dumps(found[-1]["data"], ensure_ascii=False), width) if found else ""
        return f"{len(found)} frame(s)" + (f", the last {last}" if last else "")
    body = exchange.response.get("body")
    if body is None and exchange.chunks:
        body = _json_or_text(exchange.content())
    if isinstance(body, str) and not _is_text(exchange.content_type()):
        return f"{len(exchange.content())} bytes of {exchange.content_type() or 'binary'}"
    return _plain_body(body, width)


def _is_text(content_type: str) -> bool:
    return not content_type or any(t in content_type for t in ("json", "text", "xml", "form"))


def _error_text(exchange: Exchange, width: int | None) -> str:
    body = _json_or_text(exchange.content())
    if isinstance(body, list) and body:
        body = body[0]
    message: Any = None
    if isinstance(body, dict):
        error = body.get("error")
        message = _object(error).get("message") if isinstance(error, dict) else error
        message = message or body.get("message") or body.get("Message")
    if not isinstance(message, str):
        message = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return _quote(message, width)


def _answer(exchange: Exchange) -> _Answer | None:
    api = exchange.api
    found = frames(exchange)
    answer = _Answer()
    if found is None:
        body = _json_or_text(exchange.content())
        items = body if isinstance(body, list) else [body]  # Gemini without alt=sse: an array
        for item in items:
            if isinstance(item, dict):
                _whole(api, item, answer)
        return answer
    for frame in found:
        data = frame.get("data")
        if isinstance(data, dict):
            _delta(api, frame.get("event"), data, answer)
    return answer


def _whole(api: str | None, body: dict[str, Any], answer: _Answer) -> None:
    """A response that was not streamed."""
    if api == "openai.chat":
        for choice in body.get("choices") or []:
            message = _object(_object(choice).get("message"))
            answer.text += message.get("content") or ""
            for n, call in enumerate(message.get("tool_calls") or []):
                function = _object(_object(call).get("function"))
                answer.call(n, function.get("name"), str(function.get("arguments") or ""))
    elif api == "openai.responses":
        for n, item in enumerate(body.get("output") or []):
            item = _object(item)
            if item.get("type") == "function_call":
                answer.call(n, item.get("name"), str(item.get("arguments") or ""))
            for part in item.get("content") or []:
                answer.text += str(_object(part).get("text") or "")
    elif api == "anthropic.messages":
        for n, block in enumerate(body.get("content") or []):
            _anthropic_block(n, _object(block), answer)
    elif api == "gemini.generate":
        _gemini(body, answer)
    elif api == "bedrock.converse":
        message = _object(_object(body.get("output")).get("message"))
        for n, block in enumerate(message.get("content") or []):
            block = _object(block)
            answer.text += str(block.get("text") or "")
            if "toolUse" in block:
                use = _object(block["toolUse"])
                answer.call(n, use.get("name"), json.dumps(use.get("input"), ensure_ascii=False))


def _anthropic_block(n: int, block: dict[str, Any], answer: _Answer) -> None:
    if block.get("type") == "tool_use":
        given = block.get("input")
        answer.call(n, block.get("name"), json.dumps(given) if given not in (None, {}) else "")
    answer.text += str(block.get("text") or "")
    answer.reasoning += str(block.get("thinking") or "")


def _gemini(body: dict[str, Any], answer: _Answer) -> None:
    for candidate in body.get("candidates") or []:
        for part in _object(_object(candidate).get("content")).get("parts") or []:
            part = _object(part)
            if "functionCall" in part:
                call = _object(part["functionCall"])
                args = json.dumps(call.get("args", {}), ensure_ascii=False)
                answer.call(len(answer.calls or {}), call.get("name"), args)
            elif part.get("thought"):
                answer.reasoning += str(part.get("text") or "")
            else:
                answer.text += str(part.get("text") or "")


def _delta(api: str | None, event: Any, data: dict[str, Any], answer: _Answer) -> None:
    """One frame of a streamed response."""
    if api == "openai.chat":
        for choice in data.get("choices") or []:
            delta = _object(_object(choice).get("delta"))
            answer.text += str(delta.get("content") or "")
            answer.reasoning += str(delta.get("reasoning_content") or "")
            for call in delta.get("tool_calls") or []:
                call = _object(call)
                function = _object(call.get("function"))
                answer.call(
                    call.get("index", 0), function.get("name"), str(function.get("arguments") or "")
                )
    elif api == "openai.responses":
        kind = data.get("type") or event
        if kind == "response.output_text.delta":
            answer.text += str(data.get("delta") or "")
        elif kind == "response.output_item.added":
            item = _object(data.get("item"))
            if item.get("type") == "function_call":
                answer.call(data.get("output_index"), item.get("name"))
        elif kind == "response.function_call_arguments.delta":
            answer.call(data.get("output_index"), None, str(data.get("delta") or ""))
    elif api == "anthropic.messages":
        kind = data.get("type") or event
        if kind == "content_block_start":
            _anthropic_block(data.get("index", 0), _object(data.get("content_block")), answer)
        elif kind == "content_block_delta":
            delta = _object(data.get("delta"))
            answer.text += str(delta.get("text") or "")
            answer.reasoning += str(delta.get("thinking") or "")
            if "partial_json" in delta:
                answer.call(data.get("index", 0), None, str(delta["partial_json"]))
    elif api == "gemini.generate":
        _gemini(data, answer)
    elif api == "bedrock.converse":
        index = data.get("contentBlockIndex", 0)
        if event == "contentBlockStart":
            use = _object(_object(data.get("start")).get("toolUse"))
            if use:
                answer.call(index, use.get("name"))
        elif event == "contentBlockDelta":
            delta = _object(data.get("delta"))
            answer.text += str(delta.get("text") or "")
            answer.reasoning += str(_object(delta.get("reasoningContent")).get("text") or "")
            if "toolUse" in delta:
                answer.call(index, None, str(_object(delta["toolUse"]).get("input") or ""))
