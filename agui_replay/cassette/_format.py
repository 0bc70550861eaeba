"""Cassettes: the recorded runs of one test, as a versioned, diff-friendly JSON file.

A cassette holds, for each run of a test, the ``RunAgentInput`` sent, the provider
interactions that drove the agent (request, then each response chunk with its time offset) and
the AG-UI events the agent produced. The file format is documented for users in
``docs/cassette-format.md``.

Three layers, each usable alone (the seams the pytest plugin builds on):

* data, no I/O: :class:`Cassette` / :class:`CassetteRun` (``to_dict`` / ``from_dict``);
* text: :func:`dumps_cassette` (scrubs secrets by default, one event per line) and
  :func:`loads_cassette` (validates; errors name the document path *and* the file line);
* files: :func:`save_cassette` (atomic: temporary file in the same folder, fsync, ``os.replace``)
  and :func:`load_cassette` (a missing file says how to record it; pass ``missing_hint``).

Every problem raises :class:`~agui_replay.errors.CassetteError` with ``.path`` and ``.line``.
Interactions are stored as plain dicts (``Interaction.to_dict()`` of the provider recorder), so
this module does not import ``agui_replay.providers``.

>>> run = CassetteRun(input={"threadId": "t", "runId": "r", "messages": []},
...                   events=[{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}])
>>> loads_cassette(dumps_cassette(Cassette(runs=[run]))).runs[0].events[0]["type"]
'RUN_STARTED'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ag_ui.core import Event
from pydantic import TypeAdapter, ValidationError

from agui_replay._compat import input_model
from agui_replay._files import atomic_write_text
from agui_replay._limits import JSONLimitError, loads_json, non_finite_at
from agui_replay._text import RECORD_HINT, UNNAMED_RECORD_COMMAND, json_type, short_repr
from agui_replay.cassette._lines import document_line
from agui_replay.cassette._migration import FORMAT_VERSION, SUPPORTED_FORMAT_VERSIONS, migrate
from agui_replay.errors import CassetteError, EventDecodeError, InvalidArgumentError
from agui_replay.events import EVENT_TYPES, parse_event
from agui_replay.scrub import DEFAULT_SECRET_HEADERS, scrub

__all__ = [
    "FORMAT_VERSION",
    "SUPPORTED_FORMAT_VERSIONS",
    "Cassette",
    "CassetteRun",
    "Validation",
    "document_line",
    "dumps_cassette",
    "event_line",
    "load_cassette",
    "loads_cassette",
    "save_cassette",
]

Validation: TypeAlias = Literal["full", "shape"]
"""``full`` validates every event and input with the ``ag_ui.core`` models; ``shape`` only checks
the JSON shapes and that every event names a known type (several times faster on big files)."""

_REWRITE_HINT = (
    f"Re-record it with {UNNAMED_RECORD_COMMAND}, or fix the file by hand (it is plain JSON)."
)


def _record_command(doc: Any) -> str:
    """The command that re-records the test named by a cassette document (its ``name`` is the
    test's node id when the plugin wrote it)."""
    name = doc.get("name") if isinstance(doc, dict) else None
    if isinstance(name, str) and "::" in name and len(name) < 500 and "`" not in name:
        shown = name if " " not in name else f"'{name}'"
        return f"`pytest {shown} --agui-record`"
    return UNNAMED_RECORD_COMMAND


def _library_version() -> str:
    # Imported late: agui_replay/__init__ may import this module before it sets __version__.
    from agui_replay import __version__

    return __version__


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class CassetteRun:
    """One run: its input, the provider interactions it caused, and the events it produced."""

    input: dict[str, Any]
    """The ``RunAgentInput`` as a wire dict (camelCase)."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """The AG-UI events, as wire dicts, in stream order."""
    interactions: list[dict[str, Any]] = field(default_factory=list)
    """Provider exchanges: ``{"request": {method, path, headers, body}, "response": {status,
    headers, chunks: [{offset, data}], body}}``."""
    name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.name is not None:
            out["name"] = self.name
        out["input"] = self.input
        out["interactions"] = self.interactions
        out["events"] = self.events
        if self.meta:
            out["meta"] = self.meta
        return out


@dataclass
class Cassette:
    """All the runs of one test, with the envelope that says who wrote them and when."""

    runs: list[CassetteRun] = field(default_factory=list)
    version: int = FORMAT_VERSION
    library_version: str = field(default_factory=_library_version)
    recorded_at: str = field(default_factory=_now_iso)
    name: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    http: list[dict[str, Any]] = field(default_factory=list)
    """The test's HTTP exchanges with hosts other than the model providers (a tool's weather
    API), recorded from the ``agui`` fixture's setup to its teardown: ``{"request": {method,
    url, headers, body}, "response": {status, headers, chunks}}``. Absent: none (and every
    cassette written before they were recorded)."""

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events of every run, in order (a new list)."""
        return [event for run in self.runs for event in run.events]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version,
            "library_version": self.library_version,
            "recorded_at": self.recorded_at,
        }
        if self.name is not None:
            out["name"] = self.name
        if self.meta:
            out["meta"] = self.meta
        if self.http:
            out["http"] = self.http
        out["runs"] = [run.to_dict() for run in self.runs]
        return out

    @classmethod
    def from_dict(
        cls, data: Any, *, validate: Validation = "full", source: str | None = None
    ) -> Cassette:
        """Build from a parsed document; errors name the place (``runs[0].events[3]``).

        A document built in Python may hold what JSON text cannot: NaN and infinities are
        refused here, where the place is still known (saved, they would become ``null``)."""
        try:
            _refuse_non_finite(data)
            return _build(data, validate)
        except _Problem as problem:
            raise CassetteError(problem.message(), path=source) from None


# --- validation ---------------------------------------------------------------------------


PathPart: TypeAlias = "str | int"


class _Problem(Exception):
    def __init__(self, where: Sequence[PathPart], text: str) -> None:
        super().__init__(text)
        self.where = list(where)
        self.text = text

    def message(self) -> str:
        return f"{_dotted(self.where)}: {self.text}" if self.where else self.text


def _refuse_non_finite(doc: Any) -> None:
    where = non_finite_at(doc)
    if where is not None:
        raise _Problem(
            where,
            "NaN or infinity is not a JSON number (a saved cassette would hold null there); "
            "replace it with a number, a string or None",
        )


def _dotted(where: Sequence[PathPart]) -> str:
    out = ""
    for part in where:
        if isinstance(part, str):
            out += f".{part}" if out else part
        elif isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:  # a key JSON cannot hold (None, True, a tuple), in a dict built in Python
            out += f"[{part!r}]"
    return out


_EVENTS_ADAPTER: TypeAdapter[Any] | None = None


def _events_adapter() -> TypeAdapter[Any]:
    global _EVENTS_ADAPTER
    if _EVENTS_ADAPTER is None:
        # One validation call over the whole list costs less than one parse_event per event.
        _EVENTS_ADAPTER = TypeAdapter(list[Event])
    return _EVENTS_ADAPTER


_FOUND = {
    "boolean": "a boolean",
    "integer": "a number",
    "float": "a number",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def _kind(value: Any) -> str:
    """What a problem says it found: ``"null"``, ``"a number"``, ``"an array"``...; a value the
    format cannot hold (a tuple, where it wants a list) is named by its Python class."""
    if value is None or isinstance(value, (bool, int, float, str, list, dict)):
        name = json_type(value)
        return _FOUND.get(name, name)
    return type(value).__name__


def _expect(
    value: Any, kind: type | tuple[type, ...], where: Sequence[PathPart], what: str
) -> None:
    ok = isinstance(value, kind) and not (isinstance(value, bool) and bool not in _as_tuple(kind))
    if not ok:
        raise _Problem(where, f"expected {what}, found {_kind(value)}")


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _build(doc: Any, validate: Validation) -> Cassette:
    if not isinstance(doc, dict):
        raise _Problem(
            [], f"a cassette is a JSON object (the envelope), found {_kind(doc)}. {_REWRITE_HINT}"
        )
    if "version" not in doc:
        raise _Problem(
            [],
            'no "version" field: this is not an agui-replay cassette. '
            f"Delete it and record it again with {_record_command(doc)}.",
        )
    version = doc["version"]
    if not isinstance(version, int) or isinstance(version, bool):
        raise _Problem(["version"], f"expected an integer format version, found {_kind(version)}")
    if version not in SUPPORTED_FORMAT_VERSIONS:
        supported = ", ".join(str(v) for v in sorted(SUPPORTED_FORMAT_VERSIONS))
        writer = doc.get("library_version")
        by = f" by agui-replay {writer}" if isinstance(writer, str) else ""
        raise _Problem(
            ["version"],
            f"cassette format version {short_repr(version)} (written{by}) is not supported: "
            f"agui-replay {_library_version()} reads format version {supported}. "
            f"Re-record it with {_record_command(doc)}, or upgrade agui-replay "
            "(`pip install -U agui-replay`) if a newer version wrote it.",
        )
    library_version = doc.get("library_version", "")
    _expect(library_version, str, ["library_version"], "a string")
    recorded_at = doc.get("recorded_at", "")
    _expect(recorded_at, str, ["recorded_at"], "a string (ISO 8601 time)")
    name = doc.get("name")
    if name is not None:
        _expect(name, str, ["name"], "a string")
    meta = doc.get("meta", {})
    _expect(meta, dict, ["meta"], "an object")
    _check_provider_meta(meta.get("provider"))
    if "runs" not in doc:
        raise _Problem([], 'no "runs" array: a cassette lists its runs under "runs"')
    runs = doc["runs"]
    _expect(runs, list, ["runs"], "an array of runs")
    http = doc.get("http", [])
    _expect(http, list, ["http"], "an array of HTTP exchanges")
    for j, exchange in enumerate(http):
        _expect(exchange, dict, ["http", j], "an HTTP exchange object")
        for part in ("request", "response"):
            if part not in exchange:
                raise _Problem(["http", j], f'an HTTP exchange needs its "{part}"')
            _expect(exchange[part], dict, ["http", j, part], "an object")
    cassette = Cassette(
        http=http,
        runs=[_build_run(run, i, validate) for i, run in enumerate(runs)],
        version=version,
        library_version=library_version,
        recorded_at=recorded_at,
        name=name,
        meta=meta,
    )
    migrate(cassette)
    return cassette


_URL_PATH = re.compile(r"(/[^\s?#\\]*)?")


def _check_provider_meta(provider: Any) -> None:
    # The recorder writes {"base_path": "/v1"}; replay serves the provider under that path.
    if provider is None:
        return
    _expect(provider, dict, ["meta", "provider"], "an object")
    if "base_path" in provider:
        base = provider["base_path"]
        _expect(base, str, ["meta", "provider", "base_path"], 'a URL path such as "/v1"')
        if not _URL_PATH.fullmatch(base):
            raise _Problem(
                ["meta", "provider", "base_path"],
                f'{base[:60]!r} is not a URL path: it is empty or starts with "/" (e.g. "/v1") '
                "and holds no spaces, '?', '#' or '\\'",
            )


def _build_run(run: Any, i: int, validate: Validation) -> CassetteRun:
    here: list[PathPart] = ["runs", i]
    _expect(run, dict, here, "a run object")
    if "input" not in run:
        raise _Problem(here, 'a run needs its "input" (the RunAgentInput that started it)')
    run_input = run["input"]
    _expect(run_input, dict, [*here, "input"], "a RunAgentInput object")
    if validate == "full":
        try:
            input_model(run_input)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise _Problem(
                [*here, "input", *first["loc"]], f"not a valid RunAgentInput: {first['msg']}"
            ) from None
    interactions = run.get("interactions", [])
    _expect(interactions, list, [*here, "interactions"], "an array of interactions")
    for j, interaction in enumerate(interactions):
        _check_interaction(interaction, [*here, "interactions", j])
    if "events" not in run:
        raise _Problem(here, 'a run needs its "events" array')
    events = run["events"]
    _expect(events, list, [*here, "events"], "an array of AG-UI events")
    _check_events(events, [*here, "events"], validate)
    name = run.get("name")
    if name is not None:
        _expect(name, str, [*here, "name"], "a string")
    meta = run.get("meta", {})
    _expect(meta, dict, [*here, "meta"], "an object")
    return CassetteRun(
        input=run_input, events=events, interactions=interactions, name=name, meta=meta
    )


def _check_headers(headers: Any, where: list[PathPart]) -> None:
    if isinstance(headers, dict):
        for key, value in headers.items():
            if not isinstance(value, (str, list)):
                raise _Problem([*where, key], f"a header value is a string, found {_kind(value)}")
        return
    _expect(headers, list, where, "an object of headers or an array of [name, value] pairs")
    for k, pair in enumerate(headers):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise _Problem([*where, k], "a header is a [name, value] pair of strings")


def _interaction_ok(interaction: Any) -> bool:
    """A quick yes for a well-formed interaction, with no error paths built.

    At least as strict as :func:`_check_interaction`, which runs only when this says no and
    then names the problem: a 1,000-chunk recording is checked in a tight loop.
    """
    if interaction.__class__ is not dict:
        return False
    request, response = interaction.get("request"), interaction.get("response")
    if request.__class__ is not dict or response.__class__ is not dict:
        return False
    if request.get("method").__class__ is not str or request.get("path").__class__ is not str:
        return False
    for headers in (request.get("headers", {}), response.get("headers", {})):
        if headers.__class__ is not dict or not _STR_TYPES.issuperset(map(type, headers.values())):
            return False
    if response.get("status").__class__ is not int:
        return False
    if interaction.get("provider", "").__class__ is not str:
        return False
    chunks = response.get("chunks", [])
    if chunks.__class__ is not list:
        return False
    for chunk in chunks:
        if chunk.__class__ is not dict or chunk.get("data").__class__ is not str:
            return False
        if "encoding" in chunk:
            return False  # a binary chunk: checked (base64) by _check_interaction
        offset = chunk.get("offset", 0)
        if (offset.__class__ is not float and offset.__class__ is not int) or offset < 0:
            return False
    return True


_STR_TYPES = frozenset({str})


def _check_interaction(interaction: Any, where: list[PathPart]) -> None:
    if _interaction_ok(interaction):
        return
    _expect(interaction, dict, where, "an interaction object {request, response}")
    for part in ("request", "response"):
        if part not in interaction:
            raise _Problem(where, f'an interaction needs a "{part}" object')
        _expect(interaction[part], dict, [*where, part], "an object")
    if "provider" in interaction:
        _expect(interaction["provider"], str, [*where, "provider"], "a provider name")
    request, response = interaction["request"], interaction["response"]
    for key in ("method", "path"):
        if key not in request:
            raise _Problem([*where, "request"], f'a request needs its "{key}"')
        _expect(request[key], str, [*where, "request", key], "a string")
    if "headers" in request:
        _check_headers(request["headers"], [*where, "request", "headers"])
    if "status" not in response:
        raise _Problem([*where, "response"], 'a response needs its "status"')
    _expect(response["status"], int, [*where, "response", "status"], "an HTTP status integer")
    if "headers" in response:
        _check_headers(response["headers"], [*where, "response", "headers"])
    chunks = response.get("chunks", [])
    _expect(chunks, list, [*where, "response", "chunks"], "an array of chunks")
    for k, chunk in enumerate(chunks):
        here = [*where, "response", "chunks", k]
        _expect(chunk, dict, here, 'a chunk object {"offset": seconds, "data": text}')
        if "data" not in chunk:
            raise _Problem(here, 'a chunk needs its "data" (the text received)')
        _expect(chunk["data"], str, [*here, "data"], "a string")
        if "encoding" in chunk:
            _check_encoding(chunk, here)
        offset = chunk.get("offset", 0)
        _expect(offset, (int, float), [*here, "offset"], "a number of seconds")
        if offset < 0:
            raise _Problem([*here, "offset"], f"a time offset is >= 0, found {short_repr(offset)}")


_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _check_encoding(chunk: dict[str, Any], where: list[PathPart]) -> None:
    # the bytes of a binary stream's read, as base64
    encoding = chunk["encoding"]
    if encoding != "base64":
        raise _Problem(
            [*where, "encoding"],
            f'the only chunk encoding is "base64" (binary data), found {short_repr(encoding)}; '
            'a text chunk has no "encoding"',
        )
    if not _BASE64.fullmatch(chunk["data"]):
        raise _Problem([*where, "data"], "a base64 chunk's data is not valid base64")


def _check_events(events: list[Any], where: list[PathPart], validate: Validation) -> None:
    for j, event in enumerate(() if _events_ok(events) else events):
        if not isinstance(event, dict):
            raise _Problem([*where, j], f"an AG-UI event is a JSON object, found {_kind(event)}")
        kind = event.get("type")
        if not isinstance(kind, str) or kind not in EVENT_TYPES:
            _raise_event_problem(event, where, j)
    if validate == "full":
        try:
            _events_adapter().validate_python(events)
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            j = loc[0] if loc and isinstance(loc[0], int) else 0
            _raise_event_problem(events[j], where, j)


def _events_ok(events: list[Any]) -> bool:
    # The quick test of every event; the caller's loop then finds and names a bad one.
    for event in events:
        if event.__class__ is not dict:
            return False
        kind = event.get("type")
        if kind.__class__ is not str or kind not in EVENT_TYPES:
            return False
    return True


def _raise_event_problem(event: Any, where: list[PathPart], j: int) -> None:
    try:
        parse_event(event)
    except EventDecodeError as exc:
        raise _Problem(
            [*where, j], f"event #{j} is not a valid AG-UI event: {exc}. {_REWRITE_HINT}"
        ) from None
    # The list adapter and parse_event disagree only on pathological input; name it anyway.
    raise _Problem([*where, j], f"event #{j} is not a valid AG-UI event")


# --- locating a document path in the file text ---------------------------------------------


def event_line(text: str, run_index: int, event_index: int) -> int | None:
    """The 1-based line of cassette ``text`` where ``runs[run_index].events[event_index]``
    starts (see :func:`document_line`), e.g. to point an editor or a report at an event.

    >>> text = dumps_cassette(Cassette(runs=[CassetteRun(input={}, events=[
    ...     {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    ...     {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}])]))
    >>> text.splitlines()[event_line(text, 0, 1) - 1].strip()
    '{"type": "RUN_FINISHED", "runId": "r", "threadId": "t"}'
    """
    return document_line(text, ["runs", run_index, "events", event_index])


# --- reading ----------------------------------------------------------------------------------


def loads_cassette(
    text: str | bytes,
    *,
    source: str | os.PathLike[str] | None = None,
    validate: Validation = "full",
) -> Cassette:
    """Parse and validate cassette text; every error is a :class:`CassetteError` with a line."""
    src = None if source is None else str(source)
    if not isinstance(text, (str, bytes)):
        raise InvalidArgumentError(
            f"loads_cassette takes the cassette text (str or bytes), not {type(text).__name__}; "
            "to read a file, use load_cassette(path)"
        )
    _check_validation(validate)
    # orjson reads the bytes directly (and checks they are UTF-8); the decoded text is only
    # needed to point at a line when something is wrong, so it is made only then.
    data = text.removeprefix(_BOM) if isinstance(text, bytes) else text.removeprefix("\ufeff")
    try:
        doc = loads_json(data)
    except JSONLimitError as exc:
        _text_of(text, src)  # a byte that is not UTF-8 has its own message
        # json's own messages may end in "at" ("Unterminated string starting at"): one "at"
        word = "" if exc.msg.rstrip().endswith(" at") else " at"
        at = f"{word} line {exc.lineno}, column {exc.colno}" if exc.lineno is not None else ""
        raise CassetteError(
            f"not valid JSON: {exc.msg}{at}. " + _REWRITE_HINT, path=src, line=exc.lineno
        ) from None
    try:
        return _build(doc, validate)
    except _Problem as problem:
        line = document_line(_text_of(text, src), problem.where)
        raise CassetteError(problem.message(), path=src, line=line) from None


_BOM = "\ufeff".encode()  # editors on Windows add one; JSON does not care


def _text_of(data: str | bytes, src: str | None) -> str:
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise CassetteError(
            f"not UTF-8 text (bad byte at offset {exc.start}); a cassette is UTF-8 JSON. "
            + _REWRITE_HINT,
            path=src,
            line=data.count(b"\n", 0, exc.start) + 1,
        ) from None


def _file_path(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidArgumentError(
            f"takes a file path (a str or os.PathLike), not {type(path).__name__}"
        )
    return Path(path)


def _check_validation(validate: Any) -> None:
    if validate not in ("full", "shape"):
        raise InvalidArgumentError(f"validate is 'full' or 'shape', not {short_repr(validate)}")


def load_cassette(
    path: str | os.PathLike[str],
    *,
    missing_hint: str | None = None,
    validate: Validation = "full",
) -> Cassette:
    """Read a cassette file.

    A missing file raises :class:`CassetteError` whose message ends with ``missing_hint``
    (default: how to record it with ``pytest --agui-record``).
    """
    target = _file_path(path)
    _check_validation(validate)
    try:
        data = target.read_bytes()
    except FileNotFoundError:
        raise CassetteError(
            f"no cassette at this path. {missing_hint or RECORD_HINT}", path=str(target)
        ) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL character in the path
        why = getattr(exc, "strerror", None) or exc
        raise CassetteError(f"cannot read the cassette: {why}", path=str(target)) from None
    return loads_cassette(data, source=target, validate=validate)


# --- writing ----------------------------------------------------------------------------------

_INDENT = "  "


def _sorted(value: Any, first: tuple[str, ...] = ()) -> Any:
    """Keys in a stable order: ``first`` (where present), then the rest sorted, recursively."""
    if isinstance(value, Mapping):
        keys = [k for k in first if k in value]
        keys += sorted((k for k in value if k not in first), key=str)
        return {k: _sorted(value[k]) for k in keys}
    if isinstance(value, (list, tuple)):
        return [_sorted(v) for v in value]
    return value


def _one_line(value: Any, where: Sequence[PathPart]) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
    except (TypeError, ValueError) as exc:
        raise CassetteError(
            f"cannot write {_dotted(where) or 'the cassette'}: {exc} (a cassette holds JSON only)"
        ) from None


def _pretty(value: Any, level: int, where: list[PathPart]) -> Iterator[str]:
    """Indented JSON; the lists in ``_ONE_PER_LINE`` get one compact item per line."""
    pad, inner = _INDENT * level, _INDENT * (level + 1)
    if isinstance(value, Mapping) and value:
        yield "{\n"
        for n, (key, item) in enumerate(value.items()):
            yield inner + _one_line(str(key), where) + ": "
            yield from _pretty(item, level + 1, [*where, str(key)])
            yield ",\n" if n < len(value) - 1 else "\n"
        yield pad + "}"
    elif isinstance(value, (list, tuple)) and value:
        flat = _one_per_line(where)
        yield "[\n"
        for n, item in enumerate(value):
            yield inner
            if flat:
                yield _one_line(item, [*where, n])
            else:
                yield from _pretty(item, level + 1, [*where, n])
            yield ",\n" if n < len(value) - 1 else "\n"
        yield pad + "]"
    else:
        yield _one_line(value, where)


def _one_per_line(where: Sequence[PathPart]) -> bool:
    # runs[i].events, runs[i].interactions[j].response.chunks and http[j].response.chunks
    if len(where) == 3 and where[0] == "runs" and where[2] == "events":
        return True
    if len(where) == 4 and where[0] == "http" and where[2:] == ["response", "chunks"]:
        return True
    return (
        len(where) == 6
        and where[0] == "runs"
        and where[2] == "interactions"
        and where[4] == "response"
        and where[5] == "chunks"
    )


def _ordered_document(doc: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: (_sorted(v) if k == "meta" else v) for k, v in doc.items() if k != "runs"}
    out["runs"] = []
    for run in doc.get("runs", []):
        new_run: dict[str, Any] = {}
        for key, value in run.items():
            if key == "events":
                new_run[key] = [_sorted(e, ("type",)) for e in value]
            elif key == "interactions":
                new_run[key] = [_ordered_interaction(i) for i in value]
            else:
                new_run[key] = _sorted(value)
        out["runs"].append(new_run)
    return out


def _ordered_interaction(interaction: Mapping[str, Any]) -> Any:
    if not isinstance(interaction, Mapping):
        return interaction
    out = _sorted(interaction, ("provider", "request", "response"))
    if isinstance(interaction.get("request"), Mapping):
        out["request"] = _sorted(interaction["request"], ("method", "path", "headers", "body"))
    response = interaction.get("response")
    if isinstance(response, Mapping):
        out["response"] = _sorted(response, ("status", "headers", "chunks", "body"))
        if isinstance(response.get("chunks"), list):
            out["response"]["chunks"] = [_sorted(c, ("offset", "data")) for c in response["chunks"]]
    return out


def _document_pieces(
    cassette: Cassette, *, secrets: Iterable[str], scrub_secrets: bool
) -> Iterator[str]:
    doc: dict[str, Any] = cassette.to_dict()
    if scrub_secrets:
        doc = scrub(doc, secrets=secrets, headers=DEFAULT_SECRET_HEADERS)
    yield from _pretty(_ordered_document(doc), 0, [])
    yield "\n"


def dumps_cassette(
    cassette: Cassette, *, secrets: Iterable[str] = (), scrub_secrets: bool = True
) -> str:
    """The file text of a cassette (secrets scrubbed unless ``scrub_secrets=False``)."""
    return "".join(_document_pieces(cassette, secrets=secrets, scrub_secrets=scrub_secrets))


def save_cassette(
    cassette: Cassette,
    path: str | os.PathLike[str],
    *,
    secrets: Iterable[str] = (),
    scrub_secrets: bool = True,
) -> Path:
    """Write a cassette atomically (see :func:`atomic_write_text`), scrubbing secrets first.

    Scrubbing here is defence in depth: the recorder scrubs too, but whatever reaches this
    function (auth headers, ``secrets``, key-shaped strings) never reaches the disk.
    """
    target = Path(path)
    try:
        return atomic_write_text(
            target, _document_pieces(cassette, secrets=secrets, scrub_secrets=scrub_secrets)
        )
    except CassetteError as exc:
        raise CassetteError(str(exc), path=str(target)) from None
