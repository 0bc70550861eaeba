"""The script model: what one turn of a fake provider says, independent of any wire format."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias
from urllib.parse import unquote

from agui_replay.errors import ProviderError

__all__ = [
    "Api",
    "Delta",
    "ProviderRequest",
    "Reasoning",
    "ReasoningDelta",
    "ScriptTurn",
    "Text",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "detect_api",
]

Api: TypeAlias = Literal[
    "openai.chat", "openai.responses", "anthropic.messages", "gemini.generate", "bedrock.converse"
]


@dataclass(frozen=True)
class Usage:
    """Token counts reported at the end of a turn."""

    input_tokens: int = 10
    output_tokens: int = 10

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


# --- parts: what a scripted turn is made of -------------------------------------------------


@dataclass(frozen=True, init=False)
class Text:
    """Assistant text streamed in exactly the given chunks: ``Text("Hel", "lo")``."""

    chunks: tuple[str, ...]

    def __init__(self, *chunks: str) -> None:
        _check_strs("Text", chunks)
        object.__setattr__(self, "chunks", chunks)


@dataclass(frozen=True, init=False)
class Reasoning:
    """Reasoning ("thinking") text streamed in exactly the given chunks.

    ``signature`` is what Anthropic sends in ``signature_delta`` (derived from the seed if omitted).
    """

    chunks: tuple[str, ...]
    signature: str | None

    def __init__(self, *chunks: str, signature: str | None = None) -> None:
        _check_strs("Reasoning", chunks)
        object.__setattr__(self, "chunks", chunks)
        object.__setattr__(self, "signature", signature)


@dataclass(frozen=True, init=False)
class ToolCall:
    """One tool call whose JSON arguments stream in exactly the given fragments.

    ``ToolCall("get_weather", '{"ci', 'ty": "Paris"}')``; ``id`` is derived from the seed if
    omitted.
    """

    name: str
    fragments: tuple[str, ...]
    id: str | None

    def __init__(self, name: str, *fragments: str, id: str | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise ProviderError(f"ToolCall needs a non-empty tool name, got {name!r}")
        _check_strs("ToolCall", fragments)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "fragments", fragments if fragments else ("{}",))
        object.__setattr__(self, "id", id)


Part: TypeAlias = "Text | Reasoning | ToolCall"


def _check_strs(what: str, chunks: tuple[object, ...]) -> None:
    for i, c in enumerate(chunks):
        if not isinstance(c, str):
            raise ProviderError(
                f"{what} chunk #{i} is {type(c).__name__} {c!r}; pass each chunk as a str"
            )


# --- deltas: the flat stream every encoder consumes -----------------------------------------


@dataclass(frozen=True)
class TextDelta:
    """A piece of assistant text (a function-driven turn may also yield a bare ``str``)."""

    text: str


@dataclass(frozen=True)
class ReasoningDelta:
    """A piece of reasoning text."""

    text: str
    signature: str | None = None


@dataclass(frozen=True)
class ToolCallDelta:
    """A fragment of tool-call arguments; a delta with a ``name`` starts a new tool call."""

    args: str
    name: str | None = None
    id: str | None = None


Delta: TypeAlias = "TextDelta | ReasoningDelta | ToolCallDelta"


def parts_to_deltas(parts: Iterable[Text | Reasoning | ToolCall]) -> list[Delta]:
    out: list[Delta] = []
    for part in parts:
        if isinstance(part, Text):
            out.extend(TextDelta(c) for c in part.chunks)
        elif isinstance(part, Reasoning):
            n = len(part.chunks)
            for i, c in enumerate(part.chunks):
                out.append(ReasoningDelta(c, part.signature if i == n - 1 else None))
        elif isinstance(part, ToolCall):
            for i, frag in enumerate(part.fragments):
                if i == 0:
                    out.append(ToolCallDelta(frag, name=part.name, id=part.id))
                else:
                    out.append(ToolCallDelta(frag))
        else:
            raise ProviderError(
                f"a turn part must be Text, Reasoning or ToolCall, got {type(part).__name__}"
            )
    return out


def coerce_yielded(item: object, position: int) -> Delta | Usage:
    """What a function-driven turn may yield: str, a delta, a part's pieces, or a Usage."""
    if isinstance(item, str):
        return TextDelta(item)
    if isinstance(item, (TextDelta, ReasoningDelta, ToolCallDelta, Usage)):
        return item
    raise ProviderError(
        f"a function-driven turn yielded {type(item).__name__} {item!r} at position {position}; "
        "yield str, TextDelta, ReasoningDelta, ToolCallDelta or Usage"
    )


# --- blocks: deltas grouped the way Anthropic / Responses see them ---------------------------


@dataclass
class Block:
    """A run of deltas of one kind (one Anthropic content block / one Responses output item)."""

    kind: Literal["text", "reasoning", "tool"]
    pieces: list[str] = field(default_factory=list)
    name: str = ""
    call_id: str = ""
    signature: str | None = None

    @property
    def text(self) -> str:
        return "".join(self.pieces)


class BlockWalker:
    """Groups deltas into blocks one at a time (what :func:`block_of` does for a whole list).

    ``call_id_for(n)`` gives the id of the n-th tool call of the turn when the script has none.
    """

    def __init__(self, call_id_for: Callable[[int], str]) -> None:
        self._call_id_for = call_id_for
        self.current: Block | None = None
        self.index = -1
        self._tool_n = 0

    def step(self, d: Delta) -> tuple[int, Block, bool]:
        """(block index, the delta's block, whether the delta opens the block)."""
        current = self.current
        opens = False
        if isinstance(d, TextDelta):
            if current is None or current.kind != "text":
                current, opens = Block("text"), True
            current.pieces.append(d.text)
        elif isinstance(d, ReasoningDelta):
            if current is None or current.kind != "reasoning":
                current, opens = Block("reasoning"), True
            current.pieces.append(d.text)
            if d.signature is not None:
                current.signature = d.signature
        else:
            if d.name is not None or current is None or current.kind != "tool":
                if d.name is None:
                    raise ProviderError(
                        "a ToolCallDelta without a name cannot start a tool call; "
                        "give the first fragment of each call a name"
                    )
                current, opens = Block("tool", name=d.name), True
                current.call_id = d.id or self._call_id_for(self._tool_n)
                self._tool_n += 1
            current.pieces.append(d.args)
        if opens:
            self.index += 1
        self.current = current
        return self.index, current, opens


def block_of(
    deltas: list[Delta], call_id_for: Callable[[int], str]
) -> Iterator[tuple[int, Delta, Block, bool]]:
    """Walk deltas, yielding (block index, delta, its block, whether the delta opens the block).

    ``call_id_for(n)`` gives the id of the n-th tool call of the turn when the script has none.
    """
    walker = BlockWalker(call_id_for)
    for d in deltas:
        index, blk, opens = walker.step(d)
        yield index, d, blk, opens


def blocks(deltas: list[Delta], call_id_for: Callable[[int], str]) -> list[Block]:
    out: list[Block] = []
    for _, _, blk, opens in block_of(deltas, call_id_for):
        if opens:
            out.append(blk)
    return out


# --- turns -----------------------------------------------------------------------------------

FunctionTurn: TypeAlias = Callable[["ProviderRequest"], "Iterable[object] | AsyncIterator[object]"]


@dataclass
class ScriptTurn:
    """One scripted turn: deltas plus how the stream ends (or an HTTP error instead)."""

    deltas: list[Delta] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    status: int = 200
    error_message: str | None = None
    error_type: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    malformed_after: int | None = None
    malformed_data: str = '{"truncated": '
    delay: float | None = None
    function: FunctionTurn | None = None
    label: str = ""

    def describe(self) -> str:
        if self.label:
            return self.label
        if self.status >= 400:
            return f"error {self.status}"
        if self.function is not None:
            return f"function {getattr(self.function, '__name__', repr(self.function))}"
        texts = "".join(d.text for d in self.deltas if isinstance(d, TextDelta))
        tools = [d.name for d in self.deltas if isinstance(d, ToolCallDelta) and d.name]
        bits = []
        if texts:
            bits.append(f"text {texts[:40]!r}")
        if tools:
            bits.append("tool calls " + ", ".join(tools))
        return "reply: " + ("; ".join(bits) if bits else "(empty)")


_GEMINI_MODEL = re.compile(r"/models/([^/:?]+):(?:stream)?[gG]enerateContent")


def gemini_model(path: str) -> str | None:
    """The model named in a Gemini request path (``.../models/MODEL:generateContent``)."""
    m = _GEMINI_MODEL.search(path)
    return m.group(1) if m else None


_BEDROCK_PATH = re.compile(r"/model/([^/?]+)/(converse|converse-stream)/?(?:\?.*)?\Z")


def bedrock_target(path: str) -> tuple[str, bool] | None:
    """The model id (URL-decoded) of a Bedrock Converse path and whether it is ConverseStream
    (``.../model/MODEL/converse`` or ``.../model/MODEL/converse-stream``), else None."""
    m = _BEDROCK_PATH.search(path)
    if m is None:
        return None
    return unquote(m.group(1)), m.group(2) == "converse-stream"


_ROUTES: tuple[tuple[str, Api], ...] = (
    ("/chat/completions", "openai.chat"),
    ("/responses", "openai.responses"),
    ("/messages", "anthropic.messages"),
)


def detect_api(path: str) -> Api | None:
    """Which provider API a request path addresses, by its end: any prefix before it (``/v1``,
    Groq's ``/openai/v1``, OpenRouter's ``/api/v1``, none at all) is the same API.

    >>> detect_api("/api/v1/chat/completions"), detect_api("/openai/v1/chat/completions")
    ('openai.chat', 'openai.chat')
    >>> detect_api("/v1beta/models/gemini-2.0-flash:streamGenerateContent?alt=sse")
    'gemini.generate'
    >>> detect_api("/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream")
    'bedrock.converse'
    """
    bare = path.split("?", 1)[0].rstrip("/")
    if bare.endswith((":generateContent", ":streamGenerateContent")):
        return "gemini.generate"
    if bedrock_target(bare) is not None:
        return "bedrock.converse"
    for suffix, api in _ROUTES:
        if bare.endswith(suffix):
            return api
    return None


# --- requests --------------------------------------------------------------------------------


@dataclass
class ProviderRequest:
    """A request the fake received, for assertions: ``fake.last_request.messages[-1]``.

    ``provider`` names the provider the request was routed as (``"openai"``, ``"anthropic"``,
    ``"gemini"``, ``"bedrock"``... when the plugin intercepted it; ``None`` when it came
    straight to the fake).
    """

    index: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    api: Api | None
    provider: str | None = None

    @property
    def json(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def model(self) -> str | None:
        """The body's ``model``; for Gemini and Bedrock, the model named in the path."""
        if self.api == "gemini.generate":
            return gemini_model(self.path)
        if self.api == "bedrock.converse":
            target = bedrock_target(self.path)
            return target[0] if target else None
        m = self.json.get("model")
        return m if isinstance(m, str) else None

    @property
    def stream(self) -> bool:
        if self.api == "gemini.generate":
            return ":streamGenerateContent" in self.path
        if self.api == "bedrock.converse":
            target = bedrock_target(self.path)
            return target is not None and target[1]
        return self.json.get("stream") is True

    @property
    def messages(self) -> list[Any]:
        """Chat / Anthropic ``messages``, Responses ``input`` (a list) or Gemini ``contents``."""
        key = {"openai.responses": "input", "gemini.generate": "contents"}.get(
            self.api or "", "messages"
        )
        value = self.json.get(key)
        if isinstance(value, str):
            return [{"role": "user", "content": value}]
        return list(value) if isinstance(value, list) else []

    @property
    def tools(self) -> list[Any]:
        """The tools offered; for Gemini, the ``functionDeclarations`` of every tool; for
        Bedrock, the ``toolSpec`` of every ``toolConfig.tools`` entry."""
        if self.api == "bedrock.converse":
            config = self.json.get("toolConfig")
            listed = config.get("tools") if isinstance(config, dict) else None
            specs = [t.get("toolSpec") for t in listed or [] if isinstance(t, dict)]
            return [s for s in specs if isinstance(s, dict)]
        value = self.json.get("tools")
        tools = list(value) if isinstance(value, list) else []
        if self.api != "gemini.generate":
            return tools
        declared: list[Any] = []
        for t in tools:
            if isinstance(t, dict):
                fns = t.get("functionDeclarations") or t.get("function_declarations") or []
                declared.extend(fns if isinstance(fns, list) else [])
        return declared

    @property
    def tool_names(self) -> list[str]:
        names = []
        for t in self.tools:
            if isinstance(t, dict):
                fn = t.get("function")
                name = fn.get("name") if isinstance(fn, dict) else t.get("name")
                if isinstance(name, str):
                    names.append(name)
        return names

    def summary(self) -> str:
        body = json.dumps(self.body, ensure_ascii=False, default=str)
        if len(body) > 600:
            body = body[:600] + "…"
        return f"{self.method} {self.path} {body}"


def stable_id(seed: int | str, *parts: object, length: int = 24) -> str:
    """A deterministic alphanumeric id from the seed and the given parts."""
    h = hashlib.sha256(":".join(str(p) for p in (seed, *parts)).encode()).hexdigest()
    return h[:length]
