"""One set of named matchers and one reel answer provider and tool requests alike.

What a replay compares is a list of named matchers (method, origin, path, query, body less the
``match_ignore`` globs, headers, callables); each difference is a JSON pointer into the
request. The reel picks, among the unused entries of a request's provider or host, the one the
matchers find equal.
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_replay.errors import InvalidArgumentError
from agui_replay.providers._matchers import HOST, PROVIDER, Matchers, match_rules
from agui_replay.providers._replaying import Entry, Reel


def _get(url: str, **more: Any) -> dict[str, Any]:
    return {"method": "GET", "url": url, "headers": {}, "body": None, **more}


def test_the_query_is_compared_as_parameters_and_named_by_pointer() -> None:
    matchers = Matchers(HOST)
    same, _ = matchers.compare(
        _get("https://a.test/w?x=1&city=Rome"), _get("https://a.test/w?city=Rome&x=1")
    )
    assert same is None
    mismatch, _ = matchers.compare(
        _get("https://a.test/w?city=Paris"), _get("https://a.test/w?city=Rome")
    )
    assert mismatch is not None
    assert mismatch.pointer == "/query/city/0"
    assert mismatch.text.splitlines() == [
        "  first difference at /query/city/0",
        '    recorded: "Paris"',
        '    received: "Rome"',
    ]


def test_method_and_origin_come_before_the_body() -> None:
    matchers = Matchers([*HOST, "body"])
    recorded = _get("https://a.test/x", body={"n": 1})
    assert matchers.compare(recorded, {**recorded, "method": "POST"})[0].pointer == "/method"  # type: ignore[union-attr]
    other = _get("http://a.test/x", body={"n": 2})
    assert matchers.compare(recorded, other)[0].pointer == "/origin"  # type: ignore[union-attr]
    assert matchers.compare(recorded, _get("https://a.test/x", body={"n": 1.0}))[0] is None
    assert matchers.compare(recorded, _get("https://a.test/x", body={"n": True}))[0] is not None


def test_a_provider_body_names_its_fields_in_reading_order_and_match_ignore_lets_through() -> None:
    recorded = {
        "method": "POST",
        "path": "/v1/chat/completions?x=1",
        "body": {"messages": [{"content": "a"}], "model": "m"},
    }
    changed = {
        "method": "POST",
        "path": "/v1/chat/completions",
        "body": {"messages": [{"content": "b"}], "model": "n"},
    }
    mismatch, ignored = Matchers(PROVIDER).compare(recorded, changed)
    assert (mismatch.pointer if mismatch else None, ignored) == ("/body/model", None)
    loose = Matchers(PROVIDER, ignore=["/messages/*/content", "/model"])
    assert loose.compare(recorded, changed) == (None, "/model")


def test_headers_never_compare_the_mcp_session_and_callables_say_why() -> None:
    def same_city(recorded: Any, request: Any) -> bool:
        assert recorded["url"] == request["url"], "another city"
        return True

    matchers = Matchers([*HOST, *match_rules(["headers", same_city])])
    recorded = _get("https://a.test/x", headers={"mcp-session-id": "1", "accept": "a"})
    assert (
        matchers.compare(
            recorded, _get("https://a.test/x", headers={"mcp-session-id": "2", "accept": "a"})
        )[0]
        is None
    )
    header = matchers.compare(recorded, _get("https://a.test/x", headers={"accept": "b"}))[0]
    assert header is not None
    assert header.pointer == "/headers/accept"
    with pytest.raises(InvalidArgumentError, match="match_on: 'cookies' is not one of"):
        match_rules(["cookies"])


def test_a_reel_matches_requests_in_flight_by_content_not_by_arrival() -> None:
    reel = Reel(Matchers(HOST), "unordered")
    for i, city in enumerate(("Paris", "Rome")):
        reel.entries.append(Entry(i, _get(f"https://a.test/w?city={city}"), city, "https://a.test"))

    def ours(entry: Entry) -> bool:
        return entry.key == "https://a.test"

    with reel.lock:
        rome = reel.pick(_get("https://a.test/w?city=Rome"), ours)
        paris = reel.pick(_get("https://a.test/w?city=Paris"), ours)
        again = reel.pick(_get("https://a.test/w?city=Paris"), ours)
    assert [p.entry.response for p in (rome, paris) if p.entry] == ["Rome", "Paris"]
    assert again.entry is None
    assert again.mismatch is None


def test_in_order_only_the_first_unused_entry_may_answer() -> None:
    reel = Reel(Matchers(HOST), "order")
    for i, city in enumerate(("Paris", "Rome")):
        reel.entries.append(Entry(i, _get(f"https://a.test/w?city={city}"), city, None))
    with reel.lock:
        pick = reel.pick(_get("https://a.test/w?city=Rome"), lambda entry: True)
    assert pick.entry is None
    assert pick.mismatch is not None
    entry, mismatch = pick.mismatch
    assert (entry.response, mismatch.pointer) == ("Paris", "/query/city/0")
