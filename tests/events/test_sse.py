"""SSE encoding, and the incremental decoder: the same events whatever the chunk boundaries,
bad frames reported with their offset, oversized frames capped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ag_ui.core import RunStartedEvent, TextMessageContentEvent
from ag_ui.encoder import EventEncoder
from hypothesis import given, settings
from hypothesis import strategies as st

from agui_replay.errors import AguiReplayError, EventDecodeError, SSEDecodeError
from agui_replay.events import parse_event
from agui_replay.sse import (
    SSEDecoder,
    SSEFrame,
    SSEParser,
    decode_sse,
    encode_sse,
)
from tests.events.test_events import WIRE_EVENTS

# -- encoding --------------------------------------------------------------------------------


@pytest.mark.parametrize("wire", WIRE_EVENTS, ids=[e["type"] for e in WIRE_EVENTS])
def test_encode_is_byte_identical_to_the_reference_encoder(wire: dict[str, Any]) -> None:
    model = parse_event(wire)
    reference = EventEncoder().encode(model).encode("utf-8")
    assert encode_sse(wire) == reference
    assert encode_sse(model) == reference


def test_encode_is_compact_utf8_and_omits_unset_fields() -> None:
    frame = encode_sse(TextMessageContentEvent(message_id="m", delta="ü 😀"))
    assert (
        frame == 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"ü 😀"}\n\n'.encode()
    )
    frame = encode_sse(RunStartedEvent(thread_id="t", run_id="r"))
    assert b"null" not in frame


def test_encode_refuses_an_invalid_wire_dict() -> None:
    with pytest.raises(EventDecodeError) as info:
        encode_sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m"})
    assert info.value.field == "delta"


def test_encode_then_decode_round_trips_every_event() -> None:
    body = b"".join(encode_sse(e) for e in WIRE_EVENTS)
    assert decode_sse(body) == WIRE_EVENTS


# -- a payload that exercises every framing rule, split at every byte -------------------------

FRAME_1 = b'\xef\xbb\xbfdata: {"type":"RUN_STARTED","threadId":"t","runId":"r"}\r\n\r\n'
FRAME_2 = b": keep-alive\n\n"
FRAME_3 = 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"é😀"}\r\r'.encode()
FRAME_4 = b'data: {"type":"RAW",\ndata:"event":\r\ndata:  [1,\rdata: 2]}\n\n'
FRAME_5 = b'event: ignored\nid: 7\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}'
PAYLOAD = FRAME_1 + FRAME_2 + FRAME_3 + FRAME_4 + FRAME_5
EXPECTED = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "é😀"},
    {"type": "RAW", "event": [1, 2]},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]
# Where each dispatched frame starts, counted by hand: the BOM takes bytes 0-2.
EXPECTED_OFFSETS = [
    3,
    len(FRAME_1) + len(FRAME_2),
    len(FRAME_1) + len(FRAME_2) + len(FRAME_3),
    len(FRAME_1) + len(FRAME_2) + len(FRAME_3) + len(FRAME_4),
]


def _parse_in_pieces(data: bytes, cuts: list[int]) -> list[SSEFrame]:
    parser = SSEParser()
    frames: list[SSEFrame] = []
    start = 0
    for cut in [*cuts, len(data)]:
        frames += parser.feed(data[start:cut])
        start = cut
    frames += parser.close()
    assert parser.errors == []
    return frames


def test_payload_parses_whole() -> None:
    frames = _parse_in_pieces(PAYLOAD, [])
    assert [json.loads(f.data) for f in frames] == EXPECTED
    assert [f.offset for f in frames] == EXPECTED_OFFSETS
    # The multi-line data keeps its line structure, joined with LF; one space is stripped.
    assert frames[2].data == '{"type":"RAW",\n"event":\n [1,\n2]}'
    assert frames[3].event == "ignored"
    assert frames[3].id == "7"


@pytest.mark.parametrize("cut", range(1, len(PAYLOAD)))
def test_payload_split_at_every_byte(cut: int) -> None:
    frames = _parse_in_pieces(PAYLOAD, [cut])
    assert [json.loads(f.data) for f in frames] == EXPECTED
    assert [f.offset for f in frames] == EXPECTED_OFFSETS


def test_payload_split_at_every_pair_of_bytes() -> None:
    whole = _parse_in_pieces(PAYLOAD, [])
    for first in range(1, len(PAYLOAD)):
        for second in range(first, len(PAYLOAD), 7):
            assert _parse_in_pieces(PAYLOAD, [first, second]) == whole


def test_payload_fed_one_byte_at_a_time_through_the_decoder() -> None:
    decoder = SSEDecoder()
    events: list[dict[str, Any]] = []
    for i in range(len(PAYLOAD)):
        events += decoder.feed(PAYLOAD[i : i + 1])
    events += decoder.close()
    assert events == EXPECTED
    assert decoder.errors == []


def test_crlf_split_between_cr_and_lf_is_one_line_ending() -> None:
    parser = SSEParser()
    # Had the LF counted as a second line ending, the blank line would dispatch "a" alone.
    assert parser.feed(b"data: a\r") == []
    assert parser.feed(b"\ndata: b\r") == []
    frames = parser.feed(b"\n\r\n")
    assert [f.data for f in frames] == ["a\nb"]


def test_multibyte_character_split_inside_its_bytes() -> None:
    encoded = 'data: {"type":"RAW","event":"😀"}\n\n'.encode()
    emoji_at = encoded.index("😀".encode())
    for cut in range(emoji_at + 1, emoji_at + 4):
        decoder = SSEDecoder()
        events = decoder.feed(encoded[:cut]) + decoder.feed(encoded[cut:]) + decoder.close()
        assert events == [{"type": "RAW", "event": "😀"}]


# -- single rules ---------------------------------------------------------------------------


def test_bom_only_at_the_very_start_is_skipped() -> None:
    frames = SSEParser().feed(b"\xef\xbb\xbfdata: x\n\n\xef\xbb\xbfdata: y\n\ndata: z\n\n")
    # The second BOM makes "\ufeffdata" an unknown field name, which the spec ignores.
    assert [f.data for f in frames] == ["x", "z"]


def test_a_short_stream_that_is_only_part_of_a_bom() -> None:
    parser = SSEParser()
    assert parser.feed(b"\xef\xbb") == []
    assert parser.close() == []


def test_comments_are_skipped_everywhere() -> None:
    frames = SSEParser().feed(b": hello\ndata: a\n:\n: more\ndata: b\n\n: bye\n\n")
    assert [f.data for f in frames] == ["a\nb"]


def test_field_without_colon_and_space_handling() -> None:
    frames = SSEParser().feed(b"data\n\ndata:x\n\ndata:  two spaces\n\ndata: \n\n")
    assert [f.data for f in frames] == ["", "x", " two spaces", ""]


def test_frames_without_data_are_not_dispatched() -> None:
    assert SSEParser().feed(b"event: x\n\nid: 1\n\nretry: 10\n\n\n\n") == []


def test_event_id_and_retry_fields() -> None:
    parser = SSEParser()
    frames = parser.feed(
        b"event: message_start\nid: a\nretry: 1500\ndata: 1\n\n"
        b"data: 2\n\n"
        b"id: b\x00c\nretry: soon\nunknown: field\ndata: 3\n\n"
    )
    assert frames == [
        SSEFrame(event="message_start", data="1", id="a", retry=1500, offset=0),
        # The last event id persists across frames; the event name does not.
        SSEFrame(event=None, data="2", id="a", retry=None, offset=frames[1].offset),
        # An id holding NUL is ignored, as is a retry that is not all digits.
        SSEFrame(event=None, data="3", id="a", retry=None, offset=frames[2].offset),
    ]


def test_provider_style_typed_events() -> None:
    body = (
        b"event: message_start\n"
        b'data: {"type":"message_start"}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","delta":{"text":"Hi"}}\n\n'
        b"data: [DONE]\n\n"
    )
    frames = SSEParser().feed(body)
    assert [(f.event, f.data) for f in frames] == [
        ("message_start", '{"type":"message_start"}'),
        ("content_block_delta", '{"type":"content_block_delta","delta":{"text":"Hi"}}'),
        (None, "[DONE]"),
    ]


@pytest.mark.parametrize("ending", [b"", b"\n", b"\r\n", b"\r"])
def test_final_frame_without_blank_line_is_dispatched_on_close(ending: bytes) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"type":"RAW","event":1}' + ending) == []
    assert decoder.close() == [{"type": "RAW", "event": 1}]


def test_close_on_an_empty_stream() -> None:
    assert SSEDecoder().close() == []
    assert decode_sse(b"") == []


def test_invalid_utf8_is_replaced_not_raised() -> None:
    frames = SSEParser().feed(b"data: \xff\xfe\n\n")
    assert frames[0].data == "\ufffd\ufffd"


def test_empty_data_frames_are_ignored_by_the_decoder() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data:\n\ndata: \n\n: ping\n\n") == []
    assert decoder.errors == []


def test_big_integers_stay_exact_integers() -> None:
    big = 123456789012345678901234567890
    events = decode_sse(f'data: {{"type":"RAW","event":[{big},-{big},1.5]}}\n\n'.encode())
    assert events[0]["event"] == [big, -big, 1.5]
    assert [type(v) for v in events[0]["event"]] == [int, int, float]


# -- bad frames: recorded with their offset, decoding goes on -------------------------------


def test_bad_json_frame_is_recorded_and_later_frames_decode() -> None:
    good = b'data: {"type":"RAW","event":1}\n\n'
    bad = b"data: {not json\n\n"
    not_object = b"data: [1, 2]\n\n"
    body = good + bad + good + not_object + good
    for cut in (0, len(good) + 3, len(body) - 5):
        decoder = SSEDecoder()
        events = decoder.feed(body[:cut]) + decoder.feed(body[cut:]) + decoder.close()
        assert events == [{"type": "RAW", "event": 1}] * 3
        assert [e.offset for e in decoder.errors] == [len(good), 2 * len(good) + len(bad)]
        first, second = decoder.errors
        assert str(first).startswith(f"SSE frame at byte {len(good)}: data is not valid JSON")
        assert "'{not json'" in str(first)
        assert first.frame == b"{not json"
        assert "list, not a JSON object" in str(second)


@pytest.mark.parametrize("value", ["NaN", "Infinity", '"\\ud800"', "[" * 5000 + "]" * 5000])
def test_json_that_python_would_bend_is_refused(value: str) -> None:
    decoder = SSEDecoder()
    assert decoder.feed(f'data: {{"type":"RAW","event":{value}}}\n\n'.encode()) == []
    assert len(decoder.errors) == 1


def test_strict_decoder_raises_the_first_error() -> None:
    decoder = SSEDecoder(strict=True)
    with pytest.raises(SSEDecodeError) as info:
        decoder.feed(b'data: {"type":"RAW","event":1}\n\ndata: nope\n\n')
    assert info.value.offset == len(b'data: {"type":"RAW","event":1}\n\n')
    with pytest.raises(SSEDecodeError):
        decode_sse(b"data: nope\n\n")
    assert decode_sse(b"data: nope\n\n", strict=False) == []


def test_default_frame_cap_is_16_mib() -> None:
    assert SSEDecoder().max_frame_bytes == 16 * 1024 * 1024
    assert SSEParser().max_frame_bytes == 16 * 1024 * 1024


def _capped_body() -> tuple[bytes, int]:
    small = b'data: {"type":"RAW","event":1}\n\n'
    huge = b'data: {"type":"RAW","event":"' + b"x" * 300 + b'"}\ndata: more\n\n'
    return small + huge + small + b": c\n" + b"data: " + b"y" * 200 + b"\n\n" + small, len(small)


@pytest.mark.parametrize("piece", [1, 7, 64, 10_000])
def test_frame_over_the_cap_is_reported_and_skipped(piece: int) -> None:
    body, small_len = _capped_body()
    decoder = SSEDecoder(max_frame_bytes=100)
    events: list[dict[str, Any]] = []
    for start in range(0, len(body), piece):
        events += decoder.feed(body[start : start + piece])
    events += decoder.close()
    assert events == [{"type": "RAW", "event": 1}] * 3
    huge_at = small_len
    second_at = body.index(b": c\n")
    assert [e.offset for e in decoder.errors] == [huge_at, second_at]
    message = str(decoder.errors[0])
    assert message.startswith(f"SSE frame at byte {huge_at}: frame larger than max_frame_bytes=100")
    assert "SSEDecoder(max_frame_bytes=" in message


def test_frame_exactly_at_the_cap_is_kept() -> None:
    # The size runs from the frame's first byte to the end of its last line's content: a CRLF
    # that arrives split must not decide whether the frame fits.
    frame = b"data: a\r\ndata: " + b"z" * 10  # 25 bytes
    parser = SSEParser(max_frame_bytes=len(frame))
    assert [f.data for f in parser.feed(frame + b"\r\n\r\n")] == ["a\n" + "z" * 10]
    parser = SSEParser(max_frame_bytes=len(frame) - 1)
    assert parser.feed(frame + b"\r\n\r\n") == []
    assert len(parser.errors) == 1


def test_strict_parser_raises_on_an_oversized_frame() -> None:
    parser = SSEParser(max_frame_bytes=10, strict=True)
    with pytest.raises(SSEDecodeError, match="max_frame_bytes=10"):
        parser.feed(b"data: 0123456789\n\n")


# -- fuzzing ----------------------------------------------------------------------------------

_sse_bytes = st.lists(
    st.sampled_from(
        [
            b"data: ",
            b"data:",
            b"event: x",
            b": c",
            b"\n",
            b"\r",
            b"\r\n",
            b"{",
            b"}",
            b'"type"',
            b":",
            b'"RAW"',
            b",",
            b"\xef\xbb\xbf",
            b"\xff",
            b"\xc3",
            b"[",
            b"1e999",
            b"\x00",
            b"id: ",
        ]
    )
    | st.binary(max_size=6),
    max_size=30,
).map(b"".join)


@settings(max_examples=300, deadline=None)
@given(_sse_bytes, st.lists(st.integers(min_value=0, max_value=200), max_size=5), st.booleans())
def test_decoder_on_random_bytes_raises_only_its_own_errors(
    data: bytes, cuts: list[int], strict: bool
) -> None:
    decoder = SSEDecoder(max_frame_bytes=24, strict=strict)
    points = sorted({min(c, len(data)) for c in cuts})
    start = 0
    try:
        for cut in [*points, len(data)]:
            for event in decoder.feed(data[start:cut]):
                assert isinstance(event, dict)
            start = cut
        decoder.close()
    except AguiReplayError:
        assert strict


@settings(max_examples=150, deadline=None)
@given(_sse_bytes, st.integers(min_value=1, max_value=40))
def test_split_points_never_change_the_result(data: bytes, cut: int) -> None:
    def run(cuts: list[int]) -> tuple[list[SSEFrame], list[int]]:
        parser = SSEParser(max_frame_bytes=24)
        frames: list[SSEFrame] = []
        start = 0
        for c in [*cuts, len(data)]:
            frames += parser.feed(data[start:c])
            start = c
        frames += parser.close()
        return frames, [e.offset for e in parser.errors]

    whole = run([])
    assert run([min(cut, len(data))]) == whole
    assert run(list(range(1, len(data)))) == whole
