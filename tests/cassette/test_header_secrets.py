"""The secrets one header value holds: one rule for scrub, the recorder and capture."""

from __future__ import annotations

from agui_replay._secrets import header_value_secrets
from agui_replay.scrub import scrub

SIGV4 = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE123/20250101/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=0123abcd0123abcd"
)


def test_the_value_and_the_token_after_its_scheme() -> None:
    assert header_value_secrets("Authorization", " Bearer sk-test-0123456789 ") == [
        "Bearer sk-test-0123456789",
        "sk-test-0123456789",
    ]
    assert header_value_secrets("Authorization", "Basic dXNlcjpwYXNzd29yZA==")[1] == (
        "dXNlcjpwYXNzd29yZA=="
    )


def test_a_sigv4_signature_gives_its_key_id_and_signature() -> None:
    found = header_value_secrets("Authorization", SIGV4)
    assert found[0] == SIGV4
    assert found[1:] == ["AKIDEXAMPLE123", "0123abcd0123abcd"]


def test_each_cookie_value_is_a_secret_of_its_own() -> None:
    found = header_value_secrets("Cookie", "session=abcdefgh12345678; theme=dark")
    assert found == ["session=abcdefgh12345678; theme=dark", "abcdefgh12345678"]
    # only a request's Cookie: a Set-Cookie's attributes (dates, paths) are no secrets
    assert header_value_secrets("Set-Cookie", "id=abcdefgh12345678; Path=/; Max-Age=86400") == [
        "id=abcdefgh12345678; Path=/; Max-Age=86400"
    ]


def test_values_too_short_to_be_keys_are_left_alone() -> None:
    assert header_value_secrets("X-Api-Key", "x") == []
    assert header_value_secrets("Authorization", "Bearer abc") == ["Bearer abc"]  # not "abc"


def test_scrub_finds_a_cookie_value_and_a_sigv4_signature_elsewhere() -> None:
    doc = {
        "headers": {"Cookie": "session=abcdefgh12345678", "Authorization": SIGV4},
        "body": "session abcdefgh12345678 signed 0123abcd0123abcd by AKIDEXAMPLE123",
    }
    assert scrub(doc)["body"] == "session <scrubbed> signed <scrubbed> by <scrubbed>"
