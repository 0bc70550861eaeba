"""One default SSL context for the HTTP clients built while a test replays.

An ``httpx2.Client()`` (what the ``openai`` and ``anthropic`` SDKs build when given no
``http_client=``) or an ``httpx.Client()`` builds a new ``ssl.SSLContext`` and loads a CA
bundle into it: tens of milliseconds of CPU per client. While the network guard is up no TLS
connection can be made, so that work buys nothing; :func:`sharing_default_tls` lets every
transport built in its span take one context instead, built once per process by the library's
own ``create_ssl_context`` and kept per ``(trust_env, SSL_CERT_FILE, SSL_CERT_DIR)``.

What is shared, and what is not:

- Only the name the transports call, ``create_ssl_context`` in ``httpx2._transports.default``
  and ``httpx._transports.default``, is replaced, and only a call for the default
  (``verify=True`` and no ``cert``) is answered from the cache; any other call reaches the
  original unchanged. The public factories (``httpcore2.default_ssl_context``,
  ``httpx2.create_ssl_context``, ``httpx.create_ssl_context``) are left alone: their callers
  own what they get and may change it (``load_cert_chain``, ``verify_mode``), which must never
  reach a context other clients hold. (``httpx2``'s own ``create_ssl_context`` loads a
  ``cert=`` into the context ``httpcore2.default_ssl_context`` gave it, so sharing at that
  level would leak a client certificate into every later client.)
- A module that is not imported is never imported nor patched; one imported while the span is
  open is patched at the next (nested) entry.
- The shared context is an ordinary default one (certificates and host names verified), so a
  client that outlives the span still talks TLS safely.

The span is re-entrant and thread-safe; on its last exit each replaced name gets its original
function back (the same object), unless something else replaced it since.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["sharing_default_tls"]

_MODULES = ("httpx2._transports.default", "httpx._transports.default")
"""The modules whose transports call ``create_ssl_context`` by that name."""
_NAME = "create_ssl_context"
_PARAMETERS = ("verify", "cert", "trust_env")

_Factory = Callable[..., ssl.SSLContext]
_Key = tuple[_Factory, bool, str | None, str | None]

_lock = threading.RLock()
_depth = 0  # open spans, in every thread; read by the replacements without the lock
_patched: dict[str, tuple[_Factory, _Factory]] = {}  # module -> (original, replacement)
_contexts: dict[_Key, ssl.SSLContext] = {}  # for the life of the process


def _default_trust_env(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool | None:
    """``trust_env`` of a call asking for the default context; ``None`` for any other call."""
    if len(args) > len(_PARAMETERS) or not set(kwargs) <= set(_PARAMETERS):
        return None
    given = dict(zip(_PARAMETERS, args, strict=False))
    if set(given) & set(kwargs):
        return None  # a parameter given twice: the original raises
    given.update(kwargs)
    if given.get("verify", True) is not True or given.get("cert"):
        return None
    return bool(given.get("trust_env", True))


def _shared_context(original: _Factory, trust_env: bool) -> ssl.SSLContext:
    key: _Key = (
        original,
        trust_env,
        os.environ.get("SSL_CERT_FILE"),
        os.environ.get("SSL_CERT_DIR"),
    )
    with _lock:
        context = _contexts.get(key)
        if context is None:
            context = original(verify=True, cert=None, trust_env=trust_env)
            _contexts[key] = context
        return context


def _replacement(original: _Factory) -> _Factory:
    def create_ssl_context(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        if _depth > 0:
            trust_env = _default_trust_env(args, kwargs)
            if trust_env is not None:
                return _shared_context(original, trust_env)
        return original(*args, **kwargs)

    create_ssl_context.__wrapped__ = original  # type: ignore[attr-defined]
    create_ssl_context.__doc__ = original.__doc__
    return create_ssl_context


def _patch_imported() -> None:
    for name in _MODULES:
        module = sys.modules.get(name)
        if name in _patched or module is None:
            continue
        original = getattr(module, _NAME, None)
        if not callable(original):
            continue
        replacement = _replacement(original)
        setattr(module, _NAME, replacement)
        _patched[name] = (original, replacement)


def _restore() -> None:
    for name, (original, replacement) in _patched.items():
        module = sys.modules.get(name)
        if module is not None and getattr(module, _NAME, None) is replacement:
            setattr(module, _NAME, original)
        # Replaced since (or the module dropped): not ours to undo. A replacement left behind
        # calls its original once no span is open.
    _patched.clear()


@contextlib.contextmanager
def sharing_default_tls() -> Iterator[None]:
    """While open, the ``httpx2`` / ``httpx`` transports built with the default TLS settings
    share one SSL context (see the module's docstring)."""
    global _depth
    with _lock:
        _depth += 1
        _patch_imported()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _restore()
