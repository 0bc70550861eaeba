"""Deterministic ids at the source: the standard id generators replay the same sequence.

Frameworks mint ids with ``uuid.uuid4()`` (Agent Framework's ``af-call-<uuid>``, LangGraph's
message ids), ``uuid.uuid1()``, or helpers of their own (LangChain's ``uuid7``). Recorded and
replayed, those ids differ, and so do the events, the state and the next run's input that carry
them. While a run of :class:`~agui_replay.recording.CassetteSession` (the plugin's ``agui.run``)
is under way, :class:`DeterministicIds` makes each covered generator return a sequence derived
from the cassette, the run index and the generator, so the same agent code gets the same ids
when it is recorded and every time it is replayed.

Covered:

* ``uuid.uuid1``, ``uuid.uuid4`` and (Python 3.14+) ``uuid.uuid7``, however they were imported:
  a module that did ``from uuid import uuid4`` at import time holds the same function object,
  and it is that object's code that is swapped for the span of the run;
* :data:`KNOWN_GENERATORS`, framework helpers that are swapped the same way when their module
  is already imported (they are never imported for you): LangChain's ``uuid7``;
* any ``"package.module.function"`` you add (marker ``id_generators=[...]``, ini
  ``agui_id_generators``). A generator written in Python is swapped in place like the standard
  ones; one written in C (a builtin) is replaced on its module and in every loaded module that
  holds a reference to it.

The value keeps the type and shape of what the generator returns: a ``uuid.UUID`` of the same
version, a string with the same length and the same classes of characters, an integer of the
same size, bytes of the same length.

Not covered: ids built from ``os.urandom``, ``random`` or ``secrets`` directly
(``uuid.UUID(bytes=os.urandom(16))``), generators in C extensions that no Python name points to
(``uuid_utils`` called from inside Rust), and the order of calls made by several threads at once
(each generator's sequence follows the order of its calls). Security randomness —
``secrets``, ``os.urandom``, ``random.SystemRandom``, TLS — is never touched. What the
generators cannot make stable, normalization (:mod:`agui_replay.normalize`) still renames.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import sys
import threading
import types
import uuid
import weakref
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from agui_replay._normalizing import replace_ids
from agui_replay.errors import InvalidArgumentError

__all__ = ["KNOWN_GENERATORS", "STANDARD_GENERATORS", "DeterministicIds", "resolve_generator"]

STANDARD_GENERATORS: tuple[str, ...] = tuple(
    name for name in ("uuid.uuid1", "uuid.uuid4", "uuid.uuid7") if hasattr(uuid, name[5:])
)
"""The standard library's generators, swapped in every run unless ``deterministic_ids=False``."""

KNOWN_GENERATORS: tuple[str, ...] = ("langchain_core.utils.uuid.uuid7",)
"""Framework helpers swapped as well when their module is already imported."""

_BASE_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z: where derived uuid7 timestamps start

_lock = threading.Lock()
_active: _Span | None = None


@dataclass
class _Span:
    seed: str
    counters: dict[str, int] = field(default_factory=dict)

    def draw(self, key: str, size: int) -> bytes:
        with _lock:
            n = self.counters.get(key, 0) + 1
            self.counters[key] = n
        out = b""
        block = 0
        while len(out) < size:
            out += hashlib.sha256(f"{self.seed}\0{key}\0{n}\0{block}".encode()).digest()
            block += 1
        return out[:size]

    def count(self, key: str) -> int:
        return self.counters.get(key, 0)


def _site(frame: types.FrameType | None) -> str:
    """Where a generator was called from: two frames, each as module, function and offset.

    Each call site counts its own sequence, so a framework that builds something once per
    process (a graph compiled on first use, a cache filled by the first test) does not shift
    the ids that the run itself mints, and a test replays alike alone or in a full session.
    Offsets are from the function's first line: edits elsewhere in the file do not move them.
    """
    parts = []
    for _ in range(2):
        if frame is None:
            break
        code = frame.f_code
        module = frame.f_globals.get("__name__", "?")
        parts.append(f"{module}.{code.co_name}+{frame.f_lineno - code.co_firstlineno}")
        frame = frame.f_back
    return "<".join(parts)


def _derive(
    key: str, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any], caller: str = ""
) -> Any:
    """The next deterministic value for generator ``key``, shaped like ``original``'s."""
    span = _active
    if span is None:  # the run ended while another thread was still inside the generator
        return original(*args, **kwargs)
    key = f"{key}@{caller}"
    version = _UUID_VERSIONS.get(key.partition("@")[0])
    if version is not None:
        return _uuid(span, key, version)
    sample = original(*args, **kwargs)
    if isinstance(sample, uuid.UUID):
        return _uuid(span, key, sample.version or 4)
    if isinstance(sample, str):
        return _string_like(sample, span, key)
    if isinstance(sample, bool):
        return sample
    if isinstance(sample, int):
        bits = max(sample.bit_length(), 1)
        return int.from_bytes(span.draw(key, (bits + 7) // 8), "big") >> ((8 - bits % 8) % 8)
    if isinstance(sample, bytes):
        return span.draw(key, len(sample))
    if hasattr(sample, "bytes") and hasattr(sample, "version"):  # uuid_utils.UUID and alike
        made = _uuid(span, key, int(sample.version or 4))
        try:
            return type(sample)(str(made))
        except Exception:
            return made
    return sample  # a shape we cannot imitate: the real value


_UUID_VERSIONS = {"uuid.uuid1": 1, "uuid.uuid4": 4, "uuid.uuid7": 7}
_HEX = "0123456789abcdef"


def _uuid(span: _Span, key: str, version: int) -> uuid.UUID:
    raw = bytearray(span.draw(key, 16))
    if version == 7:
        stamp = (_BASE_MS + span.count(key)).to_bytes(6, "big")
        raw[0:6] = stamp
    value = int.from_bytes(raw, "big")
    value &= ~(0xF000 << 64)
    value |= (version & 0xF) << 76
    value &= ~(0xC000 << 48)
    value |= 0x8000 << 48
    return uuid.UUID(int=value)


def _string_like(sample: str, span: _Span, key: str) -> str:
    """``sample`` with its random parts redrawn deterministically, the rest kept.

    ``"af-call-" + 32 hex digits`` keeps its prefix and gets 32 other hex digits; a UUID string
    another UUID of the same version. A string with no recognisable random part is redrawn
    character by character (digits stay digits, letters letters of the same case).
    """

    def redraw(token: str, part: str) -> str:
        prefix = token[: len(token) - len(part)]
        if _UUID_TEXT.fullmatch(part):
            made = str(_uuid(span, key, int(part[14], 16)))
            return prefix + (made.upper() if part.isupper() else made)
        noise = span.draw(key, len(part))
        if all(c in _HEX_BOTH for c in part):
            digits = "".join(_HEX[b % 16] for b in noise)
            return prefix + (digits.upper() if any(c.isupper() for c in part) else digits)
        return prefix + "".join(_B62[b % 62] for b in noise)

    redrawn = replace_ids(sample, redraw)
    if redrawn != sample:
        return redrawn
    out = []
    for ch, byte in zip(sample, span.draw(key, len(sample)), strict=False):
        if ch.isdigit():
            out.append(str(byte % 10))
        elif ch.isascii() and ch.islower():
            out.append(chr(ord("a") + byte % 26))
        elif ch.isascii() and ch.isupper():
            out.append(chr(ord("A") + byte % 26))
        else:
            out.append(ch)
    return "".join(out)


_UUID_TEXT = re.compile(
    r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
)
_HEX_BOTH = frozenset("0123456789abcdefABCDEF")
_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def resolve_generator(name: str) -> tuple[Any, str, Any]:
    """``(holder, attribute, function)`` for ``"package.module.function"`` (or a class attr)."""
    if not isinstance(name, str) or "." not in name:
        raise InvalidArgumentError(
            f"id_generators: {name!r} is not a dotted name; write it as 'package.module.function'"
        )
    module_name, _, attribute = name.rpartition(".")
    holder: Any
    try:
        holder = importlib.import_module(module_name)
    except ImportError:
        parent, _, cls = module_name.rpartition(".")
        try:
            holder = getattr(importlib.import_module(parent), cls) if parent else None
        except (ImportError, AttributeError):
            holder = None
        if holder is None:
            raise InvalidArgumentError(
                f"id_generators: cannot import {module_name!r} for {name!r}; check the spelling "
                "and that the package is installed"
            ) from None
    function = getattr(holder, attribute, None)
    if not callable(function):
        raise InvalidArgumentError(
            f"id_generators: {name!r} names no function ({module_name!r} has no callable "
            f"{attribute!r})"
        )
    return holder, attribute, function


def _replacement_code(function: types.FunctionType, key: str) -> types.CodeType:
    source = (
        "def _generated(*args, **kwargs):\n"
        "    from agui_replay.recording._ids import _call\n"
        f"    return _call({key!r}, args, kwargs)\n"
    )
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<agui_replay deterministic {key}>", "exec"), namespace)
    code: types.CodeType = namespace["_generated"].__code__
    return code.replace(co_name=function.__code__.co_name)


_ORIGINALS: dict[str, Any] = {}  # key -> a callable that runs the generator's own code


def _call(key: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    # Frame 1 is the swapped generator itself; its caller is frame 2.
    return _derive(key, _ORIGINALS[key], args, kwargs, _site(sys._getframe(2)))


@dataclass
class _Swap:
    key: str
    function: types.FunctionType
    code: types.CodeType
    defaults: tuple[Any, ...] | None
    kwdefaults: dict[str, Any] | None


class DeterministicIds:
    """The covered generators of one cassette; :meth:`run` swaps them for the span of a run.

    ``seed`` names the cassette (its path); ``extra`` adds ``"package.module.function"``
    names to :data:`STANDARD_GENERATORS` and the :data:`KNOWN_GENERATORS` that are imported.
    """

    def __init__(self, seed: str, extra: Iterable[str] = ()) -> None:
        self.seed = seed
        extra = list(extra)
        for name in extra:
            resolve_generator(name)  # a bad name fails now, naming itself
        self.names: tuple[str, ...] = tuple(dict.fromkeys([*STANDARD_GENERATORS, *extra]))

    def _targets(self) -> list[str]:
        known = [n for n in KNOWN_GENERATORS if n.rpartition(".")[0] in sys.modules]
        return list(dict.fromkeys([*self.names, *known]))

    @contextmanager
    def run(self, index: int) -> Iterator[None]:
        """Deterministic ids while the block runs: run ``index`` of this cassette."""
        global _active
        swaps: list[_Swap] = []
        patched: list[tuple[Any, str, Any]] = []
        previous = _active
        _active = _Span(f"{self.seed}\0{index}")
        try:
            for name in self._targets():
                holder, attribute, function = resolve_generator(name)
                if isinstance(function, types.FunctionType):
                    if function.__code__.co_filename.startswith("<agui_replay deterministic"):
                        continue  # already swapped (listed twice, or an outer span)
                    original = types.FunctionType(
                        function.__code__,
                        function.__globals__,
                        function.__name__,
                        function.__defaults__,
                        function.__closure__,
                    )
                    original.__kwdefaults__ = function.__kwdefaults__
                    _ORIGINALS[name] = original
                    swaps.append(
                        _Swap(
                            name,
                            function,
                            function.__code__,
                            function.__defaults__,
                            function.__kwdefaults__,
                        )
                    )
                    function.__code__ = _replacement_code(function, name)
                    function.__defaults__ = None
                    function.__kwdefaults__ = None
                else:
                    _ORIGINALS[name] = function
                    patched.extend(_patch_references(name, function))
            yield
        finally:
            for swap in reversed(swaps):
                swap.function.__code__ = swap.code
                swap.function.__defaults__ = swap.defaults
                swap.function.__kwdefaults__ = swap.kwdefaults
            for holder, attribute, value in reversed(patched):
                setattr(holder, attribute, value)
            _active = previous


@dataclass
class _References:
    """Where loaded modules hold a builtin generator: modules are read once, when first seen."""

    read: weakref.WeakSet[types.ModuleType] = field(default_factory=weakref.WeakSet)
    places: list[tuple[Any, str]] = field(default_factory=list)

    def update(self, function: Any) -> list[tuple[Any, str]]:
        for module in list(sys.modules.values()):
            if not isinstance(module, types.ModuleType):
                continue
            try:
                if module in self.read:
                    continue
                self.read.add(module)  # a module imported again (pytester) is another object
            except TypeError:
                # A module object that takes no weak reference (cffi's compiled ``Lib``) holds
                # C functions of its own library, never a Python-level id generator.
                continue
            try:
                held = [n for n, v in vars(module).items() if v is function]
            except TypeError:
                continue
            self.places.extend((module, n) for n in held)
        return [(m, n) for m, n in self.places if getattr(m, n, None) is function]


_REFERENCES: dict[str, _References] = {}


def _patch_references(key: str, function: Any) -> list[tuple[Any, str, Any]]:
    """Point every loaded module's reference to a builtin generator at a deterministic one.

    A module's names are read the first time a run sees the module (imports bind them then),
    so a run costs a look at the modules loaded since the last one, not a scan of them all.
    """

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _derive(key, function, args, kwargs, _site(sys._getframe(1)))

    references = _REFERENCES.setdefault(key, _References())
    done: list[tuple[Any, str, Any]] = []
    for module, name in references.update(function):
        setattr(module, name, wrapper)
        done.append((module, name, function))
    return done
