"""Writing files whole, file names that every file system takes, and where a pending change
lives (``NAME.json.pending``: the recording session writes it, ``agui-replay review`` finds it).

Private infrastructure shared by ``cassette`` (``save_cassette`` writes through
:func:`atomic_write_text`), ``recording`` (a refreshed cassette), ``cli`` (the HTML viewer, the
reviewed cassettes) and ``pytest_plugin`` (a test's cassette path: :func:`safe_file_name` for
the default one, :func:`contained_cassette_path` for the marker's ``cassette=``). No unit
re-exports it.

A write never leaves half a file: the text goes to a temporary file in the same folder, is
fsynced, then replaces the target. A file name made here is readable, distinct for distinct
inputs, and short enough in UTF-8 bytes for the file system and that temporary file.
"""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path
from typing import Any

from agui_replay.errors import InvalidArgumentError

__all__ = [
    "MAX_NAME_BYTES",
    "PENDING_SUFFIX",
    "atomic_write_text",
    "contained_cassette_path",
    "fit_file_name",
    "is_temp_file",
    "pending_path",
    "safe_file_name",
]


def atomic_write_text(path: str | os.PathLike[str], pieces: Iterable[str]) -> Path:
    """Write ``pieces`` to ``path`` so a reader sees the old file or the new one, never half.

    The text goes to a uniquely named temporary file in the same folder (so the rename stays
    on one file system and concurrent writers never share it), is flushed and fsynced, then
    ``os.replace``-d over the target. If anything fails, the temporary file is removed and the
    old file is untouched; a process killed mid-write leaves at most a ``.<name>.*.tmp`` file.
    """
    target = Path(path)
    folder = target.parent
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    # os.open with 0o666 lets the umask decide the mode, like a plain open() would.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            for piece in pieces:
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_folder(folder)
    return target


_TEMP_FILE = re.compile(r"\A\..+\.[0-9]+\.[0-9a-f]{8}\.tmp\Z", re.DOTALL)


def is_temp_file(name: str) -> bool:
    """Whether ``name`` is that of an :func:`atomic_write_text` temporary file
    (``.<name>.<pid>.<8 hex>.tmp``), such as a killed process leaves behind."""
    return _TEMP_FILE.match(name) is not None


def _fsync_folder(folder: Path) -> None:
    # Makes the rename itself durable; not possible (nor needed) on every platform.
    with suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# --- file names -------------------------------------------------------------------------------

_UNSAFE = re.compile(r'[\\/:*?"<>|\x00-\x1f\x7f]')
_RESERVED = re.compile(r"^(CON|PRN|AUX|NUL|COM[0-9]|LPT[0-9])(\..*)?$", re.IGNORECASE)
_MAX_STEM = 120
MAX_NAME_BYTES = 255
"""The longest file name (one path component, in bytes) that common file systems allow."""
# atomic_write_text's temporary file wraps a name in "." and ".<pid>.<8 hex>.tmp" (22 bytes
# with a pid of up to 7 digits); a cassette name must leave room for them.
_TEMP_EXTRA_BYTES = 22
_MAX_CASSETTE_NAME_BYTES = MAX_NAME_BYTES - _TEMP_EXTRA_BYTES
_MAX_STEM_BYTES = _MAX_CASSETTE_NAME_BYTES - len(".json")


def _utf8(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass")


def _head(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits in ``max_bytes``."""
    return _utf8(text)[: max(0, max_bytes)].decode("utf-8", "ignore")


def fit_file_name(name: str, *, max_bytes: int = MAX_NAME_BYTES) -> str:
    """``name`` as it is when its UTF-8 form fits in ``max_bytes``; else the longest prefix that
    fits with ``-`` and a short hash of the whole name (distinct names stay distinct).

    >>> fit_file_name("short")
    'short'
    >>> len(fit_file_name("é" * 200).encode())  # 400 bytes would be refused: ENAMETOOLONG
    255
    """
    if len(_utf8(name)) <= max_bytes:
        return name
    digest = hashlib.sha256(_utf8(name)).hexdigest()[:8]
    return f"{_head(name, max_bytes - len(digest) - 1)}-{digest}"


def safe_file_name(name: str, *, max_length: int = _MAX_STEM) -> str:
    """A portable file name for ``name``: readable, and distinct for distinct names.

    Characters that are unsafe in a file name on some system become ``_``; when anything had
    to change (or the name is too long: ``max_length`` characters, or more UTF-8 bytes than a
    cassette name and its temporary file may have) a short hash of the original is appended,
    so ``test_x[a/b]`` and ``test_x[a_b]`` never share a file.

    >>> safe_file_name("test_ok[1-2]")
    'test_ok[1-2]'
    >>> safe_file_name("test_x[a/b-1]")  # doctest: +ELLIPSIS
    'test_x[a_b-1]-...'
    """
    clean = unicodedata.normalize("NFC", name)
    clean = _UNSAFE.sub("_", clean).strip(" .")
    if _RESERVED.match(clean) or not clean:
        clean = "_" + clean
    if clean == name and len(clean) <= max_length and len(_utf8(clean)) <= _MAX_STEM_BYTES:
        return clean
    digest = hashlib.sha256(_utf8(name)).hexdigest()[:8]
    head = _head(clean[: max_length - len(digest) - 1], _MAX_STEM_BYTES - len(digest) - 1)
    return f"{head}-{digest}"


def contained_cassette_path(
    root: str | os.PathLike[str],
    name: Any,
    *,
    allow_outside: bool = False,
    opt_in: str = "allow_outside=True",
) -> Path:
    """The cassette file ``name`` (a path relative to ``root``; ``.json`` added) names.

    What the pytest marker's ``cassette=`` resolves to. The path is resolved lexically and
    must stay inside ``root``: an absolute path, or ``..`` that leaves ``root``, raises
    :class:`~agui_replay.errors.InvalidArgumentError` unless ``allow_outside`` (``opt_in`` is
    how the error message names that switch). So do an empty name, one that names a folder
    (``"."``, ``"a/.."``), a NUL character and anything that is not a ``str`` or
    ``os.PathLike``. A component longer than the file system allows is shortened with a hash
    (:func:`fit_file_name`), so it never fails with ``ENAMETOOLONG``.

    >>> contained_cassette_path("cassettes", "shared/greeting").as_posix()
    'cassettes/shared/greeting.json'
    """
    if isinstance(name, os.PathLike):
        name = os.fspath(name)
    if not isinstance(name, str):
        raise InvalidArgumentError(
            f"takes a path relative to the cassette folder (a str or os.PathLike), not "
            f"{type(name).__name__}; e.g. 'weather/paris'"
        )
    if "\x00" in name:
        raise InvalidArgumentError(
            "contains a NUL character, which no file name can hold; remove it"
        )
    path = Path(name)
    if not name.strip() or path.name in ("", ".", ".."):
        raise InvalidArgumentError(
            "names no file (it is empty or a folder); give a file name relative to the "
            "cassette folder, e.g. 'weather/paris'"
        )
    folder = Path(root)
    if path.is_absolute():
        if not allow_outside:
            raise InvalidArgumentError(
                f"is an absolute path; a cassette lives inside the cassette folder {folder}: "
                f"give a path relative to it, or add {opt_in} to write outside it on purpose"
            )
        anchor, parts = Path(path.anchor), Path(os.path.normpath(path)).parts[1:]
    else:
        normal = os.path.normpath(path)
        if (normal == os.pardir or normal.startswith(os.pardir + os.sep)) and not allow_outside:
            raise InvalidArgumentError(
                f"leaves the cassette folder {folder} ('..'); give a path inside it, or add "
                f"{opt_in} to write outside it on purpose"
            )
        anchor, parts = folder, Path(normal).parts
    *folders, last = parts
    if not last.endswith(".json"):
        last += ".json"
    if len(_utf8(last)) > _MAX_CASSETTE_NAME_BYTES:
        last = fit_file_name(last.removesuffix(".json"), max_bytes=_MAX_STEM_BYTES) + ".json"
    fitted = [part if part == os.pardir else fit_file_name(part) for part in folders]
    return anchor.joinpath(*fitted, last)


PENDING_SUFFIX = ".pending"
"""The suffix of a pending change beside its cassette."""


def pending_path(cassette: Path) -> Path:
    """Where the pending change of ``cassette`` is kept (``NAME.json.pending``)."""
    return cassette.with_name(cassette.name + PENDING_SUFFIX)
