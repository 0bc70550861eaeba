"""Chunking helpers, and proof that the SDK reassembles any chunking the fake streams."""

from __future__ import annotations

import json

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.providers import FakeProvider
from agui_replay.providers._chunking import by_char, by_size, by_word, split_at
from agui_replay.strategies import chunk_splits


def test_by_word_keeps_the_whitespace_with_the_next_word() -> None:
    assert by_word("Hello big  world ") == ["Hello", " big", "  world", " "]
    assert by_word("  lead") == ["  lead"]
    assert by_word("") == []


def test_other_splitters() -> None:
    assert by_char("héé") == ["h", "é", "é"]
    assert by_size("abcdefg", 3) == ["abc", "def", "g"]
    assert split_at("abcdef", [4, 2, 2, 0, 9]) == ["ab", "cd", "ef"]
    with pytest.raises(ValueError, match="size >= 1"):
        by_size("x", 0)


@given(st.text(max_size=40))
@settings(max_examples=50, deadline=None)
def test_splitters_join_back(text: str) -> None:
    for chunks in (by_word(text), by_char(text), by_size(text, 3)):
        assert "".join(chunks) == text
        assert all(chunks)


@given(st.data())
@settings(max_examples=50, deadline=None)
def test_chunkings_strategy_yields_nonempty_splits(data: st.DataObject) -> None:
    text = data.draw(st.text(min_size=0, max_size=20))
    chunks = data.draw(chunk_splits(text, max_chunks=5))
    assert "".join(chunks) == text
    assert all(chunks)
    assert len(chunks) <= max(1, min(5, len(text)))


ARGS = '{"city": "Paris", "days": [1, 2]}'


@given(text_chunks=chunk_splits("Bonjour, tout le monde!"), arg_chunks=chunk_splits(ARGS))
@settings(max_examples=20, deadline=None)
def test_sdk_reassembles_any_chunking(text_chunks: list[str], arg_chunks: list[str]) -> None:
    fake = FakeProvider()
    fake.reply(*text_chunks)
    fake.tool_call("get_weather", *arg_chunks)
    client = openai.OpenAI(
        base_url="http://fake.invalid/v1",
        api_key="k",
        http_client=httpx2.Client(transport=fake.transport()),
    )
    stream = client.chat.completions.create(model="m", messages=[], stream=True)
    pieces = [c.choices[0].delta.content for c in stream if c.choices]
    assert pieces[1:-1] == text_chunks  # exactly the drawn chunking, in order
    with client.chat.completions.stream(model="m", messages=[]) as s:
        final = s.get_final_completion()
    calls = final.choices[0].message.tool_calls or []
    assert json.loads(calls[0].function.arguments) == json.loads(ARGS)
    client.close()
    fake.check()
