"""``urllib3`` requests (and so ``requests``' and ``botocore``'s) answered in process.

During a run, ``HTTPConnectionPool.urlopen`` (which every pool, ``PoolManager``, ``requests``
adapter and ``botocore`` endpoint sends through, however and whenever it was built) hands a
routed request to the router instead of taking a connection. The planned response is an
``http.client`` response over memory (:func:`._urllib.plan_response`) wrapped in ``urllib3``'s
``HTTPResponse`` as ``urllib3`` wraps a socket's, so ``preload_content=False`` streams it
chunk by chunk (``stream()`` reads each HTTP chunk as it comes) and everything else
(``retries`` on the response, ``release_conn``, decoding) behaves as usual. The request's
``Retry`` is applied as ``urlopen`` applies it: a read error (a read timeout, a body cut
short while it is preloaded) or a status it retries (``status_forcelist``, a ``Retry-After``)
asks the router again, so a replay's ``faults.status`` / ``faults.timeout`` reach a client
that retries as they would over a socket. The pool's connections are never touched.
Redirects of a routed response are left to the caller, as ``requests`` and ``PoolManager``
ask (they pass ``redirect=False``).

Private to :mod:`agui_replay.providers`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from agui_replay.providers._plan import Failure, Library
from agui_replay.providers._transport._urllib import Answer, plan_response

__all__ = ["install", "patch_urlopen", "request_body"]

Route = Callable[[str | None, int | None, str], "Answer | None"]
"""``route(host, port or None for the scheme's default, origin) -> answer | None``."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def request_body(body: Any) -> bytes:
    """The bytes of a ``urlopen`` body: bytes, text, a file or an iterable of either."""
    if body is None:
        return b""
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):
        return body.encode("utf-8")
    if hasattr(body, "read"):
        return request_body(body.read())
    if isinstance(body, Iterable):
        return b"".join(request_body(part) for part in body)
    raise TypeError(f"urllib3 request body of type {type(body).__name__}")


def _text(value: Any) -> str:
    # botocore gives some header values as bytes (its SigV4 Authorization among them)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("latin-1")
    return str(value)


def _headers(pool: Any, headers: Mapping[str, str] | None, netloc: str) -> dict[str, str]:
    given = pool.headers if headers is None else headers
    out = {_text(k).lower(): _text(v) for k, v in dict(given).items()}
    out.setdefault("host", netloc)
    return out


class _Urllib3(Library):
    """urllib3's read timeout (``requests`` and ``botocore`` wrap it in their own)."""

    def timeout(self, message: str, request: Any) -> BaseException:
        from urllib3.exceptions import ReadTimeoutError

        return ReadTimeoutError(None, "", message)  # type: ignore[arg-type]


_URLLIB3 = _Urllib3()


def install(route: Callable[..., Any]) -> list[tuple[Any, str, Any]]:
    """Patch ``HTTPConnectionPool.urlopen`` (when urllib3 is installed) to answer routed
    requests through ``route(host, port, origin, asynchronous=False)``."""
    try:
        from urllib3.connectionpool import HTTPConnectionPool as pool
    except ImportError:
        return []
    original = pool.urlopen
    pool.urlopen = patch_urlopen(pool, functools.partial(route, asynchronous=False))  # type: ignore[method-assign]
    return [(pool, "urlopen", original)]


def patch_urlopen(cls: Any, route: Route) -> Any:
    """``cls.urlopen`` (``urllib3.HTTPConnectionPool``'s) answering routed requests in
    process; the others go to the original, with the arguments they came with."""
    original = cls.urlopen
    signature = inspect.signature(original)

    def urlopen(self: Any, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        scheme, host, port = self.scheme, self.host, self.port
        target = url
        if "://" in url:  # absolute form: through a proxy, or given whole
            parts = urlsplit(url)
            scheme, host, port = parts.scheme, parts.hostname or host, parts.port
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        explicit = None if port in (None, _DEFAULT_PORTS.get(scheme)) else port
        netloc = f"[{host}]" if host and ":" in host else str(host)
        if explicit is not None:
            netloc = f"{netloc}:{explicit}"
        answer = route(host, explicit, f"{scheme}://{netloc}")
        if answer is None:
            return original(self, method, url, *args, **kwargs)
        given = signature.bind(self, method, url, *args, **kwargs)
        given.apply_defaults()
        arg = given.arguments
        return _retrying(
            self,
            answer,
            method,
            target,
            _headers(self, arg["headers"], netloc),
            request_body(arg["body"]),
            url=url,
            retries=arg["retries"],
            redirect=arg["redirect"],
            preload_content=arg["preload_content"],
            decode_content=arg["decode_content"],
        )

    urlopen.__wrapped__ = original  # type: ignore[attr-defined]
    return urlopen


def _retrying(
    pool: Any,
    answer: Answer,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    *,
    url: str,
    retries: Any,
    redirect: bool,
    preload_content: bool,
    decode_content: bool,
) -> Any:
    """:func:`_answered`, asked again as ``urlopen`` retries: on a read error its ``Retry``
    allows (else that error, or ``MaxRetryError``, is raised as ``urlopen`` raises it), and on
    a status it retries (``MaxRetryError`` once exhausted, or the last answer when the
    ``Retry`` says ``raise_on_status=False``)."""
    from urllib3.exceptions import MaxRetryError, ProtocolError, ReadTimeoutError
    from urllib3.util.retry import Retry

    if not isinstance(retries, Retry):
        retries = Retry.from_int(retries, redirect=redirect, default=pool.retries)
    while True:
        try:
            response = _answered(
                pool,
                answer,
                method,
                target,
                headers,
                body,
                url=url,
                retries=retries,
                preload_content=preload_content,
                decode_content=decode_content,
            )
        except (ReadTimeoutError, ProtocolError) as exc:
            error: Exception = exc
            if isinstance(exc, ReadTimeoutError) and exc.pool is None:
                # raised without the pool: named as urlopen names it ("HTTPConnectionPool(...)")
                text = str(exc).removeprefix("None: ")
                error = ReadTimeoutError(pool, url, text)
            retries = retries.increment(
                method, url, error=error, _pool=pool, _stacktrace=exc.__traceback__
            )
            retries.sleep()
            continue
        has_retry_after = bool(response.headers.get("Retry-After"))
        if not retries.is_retry(method, response.status, has_retry_after):
            return response
        try:
            retries = retries.increment(method, url, response=response, _pool=pool)
        except MaxRetryError:
            if retries.raise_on_status:
                response.drain_conn()
                raise
            return response
        response.drain_conn()
        retries.sleep(response)


def _answered(
    pool: Any,
    answer: Answer,
    method: str,
    target: str,
    headers: dict[str, str],
    body: bytes,
    *,
    url: str,
    retries: Any,
    preload_content: bool,
    decode_content: bool,
) -> Any:
    from urllib3._collections import HTTPHeaderDict
    from urllib3.response import HTTPResponse
    from urllib3.util.retry import Retry

    try:
        plan = answer(method, target, headers, body)
    except Failure as failure:
        raise (_URLLIB3.error(failure) or failure) from failure
    raw = plan_response(plan, method)
    response = HTTPResponse(
        body=raw,
        headers=HTTPHeaderDict(list(raw.msg.items())),
        status=raw.status,
        version=raw.version,
        reason=raw.reason,
        preload_content=preload_content,
        decode_content=decode_content,
        original_response=raw,
        request_method=method,
        request_url=url,
    )
    if not isinstance(retries, Retry):
        retries = Retry.from_int(retries, default=pool.retries)
    response.retries = retries
    response._pool = pool
    return response
