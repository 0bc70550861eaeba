"""What counts as a secret in a request, agreed by everything that keeps secrets out of files.

Private, shared by ``scrub`` (its defaults), ``providers`` (the recorder learns the secrets of
each request it forwards, and never stores a SigV4 attempt's signing headers), ``recording``
(configured secrets too short to scrub are refused with a warning) and ``cli`` (``capture``
learns the secrets of the headers it forwards).
"""

from __future__ import annotations

import re

__all__ = ["MIN_SECRET_LENGTH", "SIGNING_HEADERS", "header_value_secrets", "sigv4_secrets"]

MIN_SECRET_LENGTH = 8
"""Values taken from secret headers are only treated as secrets everywhere when they are at
least this long, and a recording session ignores (with a warning) a configured secret that is
shorter: replacing a 3-character value in every string would wreck bodies."""

SIGNING_HEADERS: frozenset[str] = frozenset(
    {"x-amz-date", "x-amz-content-sha256", "amz-sdk-invocation-id", "amz-sdk-request"}
)
"""Headers of an AWS SigV4 request (lower case) whose values are not stored: they change with
every request, so a cassette would change with every re-record. Not secrets: their values are
not looked for elsewhere."""

# SigV4: "AWS4-HMAC-SHA256 Credential=AKID/date/region/service/aws4_request, ..., Signature=hex"
_SIGV4_PARTS = re.compile(r"(?:Credential=([^/,\s]+)/|Signature=([0-9a-fA-F]+))")


def sigv4_secrets(value: str) -> list[str]:
    """The access key id and the signature of a SigV4 ``Authorization`` value (after its
    ``AWS4-HMAC-SHA256`` scheme).

    >>> sigv4_secrets("Credential=AKIDEXAMPLE/20250101/us-east-1/bedrock/aws4_request, "
    ...               "SignedHeaders=host;x-amz-date, Signature=0123abcd")
    ['AKIDEXAMPLE', '0123abcd']
    """
    found: list[str] = []
    for m in _SIGV4_PARTS.finditer(value):
        found.extend(g for g in m.groups() if g)
    return found


def header_value_secrets(name: str, value: str) -> list[str]:
    """The secrets that one value of a secret header holds, each at least
    :data:`MIN_SECRET_LENGTH` long: the value itself, the token after an auth scheme
    (``Bearer <token>``, ``Basic <base64>``), a SigV4 signature's access key id and signature,
    and each value of a ``Cookie`` header. Every copy of them, anywhere, is scrubbed.

    >>> header_value_secrets("Authorization", "Bearer sk-test-0123456789")
    ['Bearer sk-test-0123456789', 'sk-test-0123456789']
    >>> header_value_secrets("Cookie", "session=abcdefgh12345678; theme=dark")
    ['session=abcdefgh12345678; theme=dark', 'abcdefgh12345678']
    """
    value = value.strip()
    found = [value]
    scheme, _, token = value.partition(" ")
    if token and scheme.isalpha():
        found.append(token.strip())
    elif token and scheme.startswith("AWS4-"):
        found.extend(sigv4_secrets(token))
    if name.lower() == "cookie":
        found.extend(pair.partition("=")[2].strip() for pair in value.split(";"))
    return [s for s in found if len(s) >= MIN_SECRET_LENGTH]
