"""Cassette format, loader errors, atomic writes, file names and scrubbing on save."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import agui_replay
from agui_replay._files import safe_file_name
from agui_replay.cassette import (
    Cassette,
    CassetteRun,
    dumps_cassette,
    load_cassette,
    loads_cassette,
    save_cassette,
)
from agui_replay.cassette._format import FORMAT_VERSION, event_line
from agui_replay.cassette._lines import document_line
from agui_replay.errors import AguiReplayError, CassetteError
from agui_replay.providers._interaction import Interaction

KEY = "sk-proj-Zx81mQa7TtY2vLp9Wc4Rn0Kd"


def _events(run_id: str = "r", n_text: int = 3) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": "t", "runId": run_id}]
    events.append(
        {"type": "TEXT_MESSAGE_START", "messageId": f"{run_id}-msg-1", "role": "assistant"}
    )
    for i in range(n_text):
        events.append(
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": f"{run_id}-msg-1", "delta": f"part {i} "}
        )
    events.append({"type": "TEXT_MESSAGE_END", "messageId": f"{run_id}-msg-1"})
    events.append({"type": "STATE_SNAPSHOT", "snapshot": {"b": [1, 2.5, True, None], "a": "ü"}})
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": run_id})
    return events


def _interaction(chunks: list[str] | None = None) -> dict[str, Any]:
    chunks = chunks if chunks is not None else ['data: {"x": 1}\n\n', "data: [DONE]\n\n"]
    return {
        "request": {
            "method": "POST",
            "path": "/v1/chat/completions",
            "headers": {"content-type": "application/json"},
            "body": {"model": "gpt-test", "stream": True, "messages": [{"role": "user"}]},
        },
        "response": {
            "status": 200,
            "headers": {"content-type": "text/event-stream"},
            "chunks": [{"offset": 0.001 * i, "data": d} for i, d in enumerate(chunks)],
        },
    }


def _input(run_id: str = "r") -> dict[str, Any]:
    return {
        "threadId": "t",
        "runId": run_id,
        "state": {},
        "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def _cassette(runs: int = 1) -> Cassette:
    return Cassette(
        runs=[
            CassetteRun(
                input=_input(f"r{i}"), events=_events(f"r{i}"), interactions=[_interaction()]
            )
            for i in range(runs)
        ]
    )


# --- round trip and layout -------------------------------------------------------------------


def test_round_trip_keeps_every_value(tmp_path: Path) -> None:
    cassette = _cassette(runs=2)
    cassette.name = "test_x"
    cassette.meta = {"mode": "rewrite"}
    path = save_cassette(cassette, tmp_path / "c.json")
    loaded = load_cassette(path)
    assert loaded.version == FORMAT_VERSION == 3
    assert loaded.library_version == agui_replay.__version__
    assert loaded.recorded_at == cassette.recorded_at
    assert loaded.name == "test_x"
    assert loaded.meta == {"mode": "rewrite"}
    assert [r.input for r in loaded.runs] == [r.input for r in cassette.runs]
    assert [r.interactions for r in loaded.runs] == [r.interactions for r in cassette.runs]
    assert loaded.runs[1].events == cassette.runs[1].events
    assert loaded.events == cassette.runs[0].events + cassette.runs[1].events
    # JSON-strict: 2.5 stays a float, True stays a bool (not 1)
    snapshot = loaded.runs[0].events[-2]["snapshot"]["b"]
    assert [type(v) for v in snapshot] == [int, float, bool, type(None)]


def test_provider_interaction_dicts_round_trip(tmp_path: Path) -> None:
    interaction = Interaction.from_dict(_interaction())
    cassette = Cassette(
        runs=[CassetteRun(input=_input(), events=_events(), interactions=[interaction.to_dict()])]
    )
    loaded = load_cassette(save_cassette(cassette, tmp_path / "c.json"))
    assert Interaction.from_dict(loaded.runs[0].interactions[0]) == interaction


def test_each_event_and_each_chunk_is_one_line_of_the_file() -> None:
    cassette = _cassette()
    text = dumps_cassette(cassette)
    lines = text.splitlines()
    event_lines = [
        line.strip().rstrip(",") for line in lines if line.strip().startswith('{"type": "')
    ]
    assert [json.loads(line) for line in event_lines] == cassette.runs[0].events
    chunk_lines = [line for line in lines if '"offset"' in line]
    assert len(chunk_lines) == 2
    assert [json.loads(c.strip().rstrip(","))["data"] for c in chunk_lines] == [
        'data: {"x": 1}\n\n',
        "data: [DONE]\n\n",
    ]
    # the envelope is pretty-printed: the version has a line of its own, near the top
    assert lines[0] == "{"
    assert lines[1] == '  "version": 3,'
    assert text.endswith("}\n")
    json.loads(text)  # and the whole file is plain JSON


def test_changing_one_event_changes_exactly_one_line() -> None:
    a = _cassette()
    b = _cassette()
    b.recorded_at = a.recorded_at
    b.runs[0].events[3]["delta"] = "changed "
    diff = [
        (x, y)
        for x, y in zip(dumps_cassette(a).splitlines(), dumps_cassette(b).splitlines(), strict=True)
        if x != y
    ]
    assert len(diff) == 1
    assert "changed" in diff[0][1]


def test_key_order_is_stable_whatever_the_input_order() -> None:
    a = _cassette()
    b = _cassette()
    b.recorded_at = a.recorded_at
    b.runs[0].events = [dict(reversed(list(e.items()))) for e in b.runs[0].events]
    b.runs[0].input = dict(reversed(list(b.runs[0].input.items())))
    b.runs[0].interactions[0]["request"] = dict(
        reversed(list(b.runs[0].interactions[0]["request"].items()))
    )
    assert dumps_cassette(a) == dumps_cassette(b)


def test_unicode_is_written_readably() -> None:
    cassette = _cassette()
    cassette.runs[0].events[2]["delta"] = "안녕하세요 👋"
    assert "안녕하세요 👋" in dumps_cassette(cassette)


# --- loader errors ------------------------------------------------------------------------------


def test_missing_file_says_how_to_record(tmp_path: Path) -> None:
    path = tmp_path / "cassettes" / "test_mod" / "test_x.json"
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    assert str(path) in str(info.value)
    assert "--agui-record" in str(info.value)
    assert info.value.path == str(path)
    hint = "Run `pytest --agui-record tests/test_mod.py::test_x` to record it."
    with pytest.raises(CassetteError, match=re.escape("tests/test_mod.py::test_x")):
        load_cassette(path, missing_hint=hint)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    text = dumps_cassette(_cassette()).splitlines()
    n = next(i for i, line in enumerate(text) if '"TEXT_MESSAGE_END"' in line)
    indent = len(text[n]) - len(text[n].lstrip())
    text[n] = text[n].replace("{", "@{", 1)  # a stray character on line n + 1
    path.write_text("\n".join(text), encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    assert info.value.line == n + 1
    assert f"{path}:{n + 1}:" in str(info.value)
    assert f"column {indent + 1}" in str(info.value)
    assert "--agui-record" in str(info.value)


def test_unknown_version_says_what_is_supported_and_how_to_fix(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    doc = json.loads(dumps_cassette(_cassette()))
    doc["version"] = 7
    doc["library_version"] = "9.0.0"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    message = str(info.value)
    assert "version 7" in message
    assert "9.0.0" in message
    assert "reads format version 1" in message
    assert "--agui-record" in message
    assert "upgrade" in message
    assert info.value.line == 2


def test_wrong_shape_names_document_path_and_file_line(tmp_path: Path) -> None:
    doc = json.loads(dumps_cassette(_cassette(runs=2)))
    doc["runs"][1]["events"][3]["delta"] = 12
    raw = _write_layout(doc)
    path = tmp_path / "c.json"
    path.write_text(raw, encoding="utf-8")
    target_line = next(
        n
        for n, line in enumerate(raw.splitlines(), 1)
        if '"delta": 12, "messageId": "r1-msg-1"' in line
    )
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    message = str(info.value)
    assert "runs[1].events[3]" in message
    assert "event #3" in message
    assert "delta" in message
    assert info.value.line == target_line
    assert f"{path}:{target_line}:" in message


@pytest.mark.parametrize(
    ("mutate", "where", "needle"),
    [
        (
            lambda d: d["runs"][0]["interactions"][0]["response"]["chunks"][1].update(data=5),
            "runs[0].interactions[0].response.chunks[1].data",
            '"data": 5',
        ),
        (
            lambda d: d["runs"][0]["interactions"][0]["response"]["chunks"][0].update(offset=-1),
            "runs[0].interactions[0].response.chunks[0].offset",
            '"offset": -1',
        ),
        (
            lambda d: d["runs"][0]["interactions"][0]["request"].pop("method"),
            "runs[0].interactions[0].request",
            '"request": {',
        ),
        (
            lambda d: d["runs"][0]["events"].__setitem__(2, ["not", "an", "event"]),
            "runs[0].events[2]",
            '["not", "an", "event"]',
        ),
        (
            lambda d: d["runs"][0]["events"].__setitem__(2, {"type": "THINKING_START"}),
            "runs[0].events[2]",
            "THINKING_START",
        ),
        (lambda d: d["runs"][0]["input"].pop("threadId"), "runs[0].input", '"input": {'),
        (lambda d: d.update(runs={"a": 1}), "runs", '"runs": {'),
    ],
)
def test_each_shape_error_points_at_its_place(
    tmp_path: Path, mutate: Any, where: str, needle: str
) -> None:
    doc = json.loads(dumps_cassette(_cassette()))
    mutate(doc)
    raw = _write_layout(doc)  # our layout, unvalidated, so the needle sits on a known line
    path = tmp_path / "c.json"
    path.write_text(raw, encoding="utf-8")
    with pytest.raises(CassetteError) as info:
        load_cassette(path)
    assert where in str(info.value)
    expected_line = next(n for n, line in enumerate(raw.splitlines(), 1) if needle in line)
    assert info.value.line == expected_line, str(info.value)


def _write_layout(doc: dict[str, Any]) -> str:
    """The document in cassette layout, without validation (events/chunks one per line)."""
    from agui_replay.cassette._format import _pretty

    return "".join(_pretty(doc, 0, [])) + "\n"


_INTERACTION = ("runs", 0, "interactions", 0)
_CHUNKS = (*_INTERACTION, "response", "chunks")


def _at(doc: dict[str, Any], *path: str | int) -> Any:
    for part in path:
        doc = doc[part]  # type: ignore[index]
    return doc


@pytest.mark.parametrize("validate", ["shape", "full"])
@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: _at(d, *_CHUNKS).__setitem__(1, "data: x"), "chunks[1]"),
        (lambda d: _at(d, *_CHUNKS)[0].update(offset=True), "chunks[0].offset"),
        (lambda d: _at(d, *_CHUNKS)[0].update(offset="0.1"), "chunks[0].offset"),
        (lambda d: _at(d, *_CHUNKS)[1].pop("data"), "chunks[1]"),
        (lambda d: _at(d, *_CHUNKS[:-1]).update(chunks={}), "response.chunks"),
        (lambda d: _at(d, *_CHUNKS[:-1]).update(status=True), "response.status"),
        (lambda d: _at(d, *_CHUNKS[:-1]).update(status="200"), "response.status"),
        (lambda d: _at(d, *_CHUNKS[:-1]).update(headers={"a": 1}), "response.headers.a"),
        (lambda d: _at(d, *_INTERACTION, "request").update(headers=[["a"]]), "headers[0]"),
        (lambda d: _at(d, *_INTERACTION, "request").update(path=None), "request.path"),
        (lambda d: _at(d, *_INTERACTION).pop("response"), "interactions[0]"),
        (lambda d: d["runs"][0]["interactions"].append(None), "interactions[1]"),
        (lambda d: d["runs"][0]["events"][3].update(type=7), "events[3]"),
        (lambda d: d["runs"][0]["events"][4].pop("type"), "events[4]"),
    ],
)
def test_the_loader_misses_no_bad_shape(mutate: Any, where: str, validate: Any) -> None:
    # Well-formed files are checked by a quick pass; every bad one must still be named.
    doc = json.loads(dumps_cassette(_cassette(runs=2)))
    mutate(doc)
    with pytest.raises(CassetteError) as info:
        loads_cassette(json.dumps(doc), validate=validate)
    assert where in str(info.value)
    assert info.value.line is not None


def test_every_shape_the_format_allows_still_loads() -> None:
    doc = json.loads(dumps_cassette(_cassette()))
    interaction = doc["runs"][0]["interactions"][0]
    interaction["request"]["headers"] = [["content-type", "application/json"]]
    interaction["response"]["headers"] = {"set-cookie": ["a=1", "b=2"]}
    interaction["response"]["chunks"] = [{"data": "data: 1\n\n"}, {"offset": 2, "data": ""}]
    loaded = loads_cassette(json.dumps(doc).encode(), validate="shape")
    assert loaded.runs[0].interactions[0] == interaction


def test_bytes_with_a_bom_load_and_bad_bytes_name_their_offset() -> None:
    text = dumps_cassette(_cassette())
    assert loads_cassette(b"\xef\xbb\xbf" + text.encode()).runs[0].events == _events("r0")
    bad = b"\xef\xbb\xbf" + text.encode().replace(b"part 1", b"part \xff")
    offset = bad.index(b"\xff")
    with pytest.raises(CassetteError) as info:
        loads_cassette(bad)
    assert f"bad byte at offset {offset}" in str(info.value)
    assert info.value.line == bad[:offset].count(b"\n") + 1


def test_event_line_finds_each_event_of_each_run() -> None:
    cassette = _cassette(runs=2)
    text = dumps_cassette(cassette)
    lines = text.splitlines()
    for r, run in enumerate(cassette.runs):
        for e, event in enumerate(run.events):
            line = event_line(text, r, e)
            assert line is not None
            assert json.loads(lines[line - 1].strip().rstrip(",")) == event
    assert event_line(text, 0, 0) != event_line(text, 1, 0)


def test_document_line_follows_keys_and_indexes_in_any_layout() -> None:
    text = '{"a": 1,\n "b": [\n  {"c": 2},\n\n  {"c": 3, "d": [4,\n 5]}\n ]\n}'
    assert document_line(text, []) == 1
    assert document_line(text, ["b"]) == 2
    assert document_line(text, ["b", 0]) == 3
    assert document_line(text, ["b", 1]) == 5
    assert document_line(text, ["b", 1, "d", 1]) == 6
    # a path beyond the document: the deepest part that is there
    assert document_line(text, ["b", 1, "zzz"]) == 5
    assert document_line(text, ["b", 9]) == 2
    assert document_line('{"a": [1, tru', ["a", 2]) is None


def test_event_type_error_mentions_thinking_events(tmp_path: Path) -> None:
    doc = json.loads(dumps_cassette(_cassette()))
    doc["runs"][0]["events"][1] = {"type": "THINKING_TEXT_MESSAGE_START"}
    with pytest.raises(CassetteError, match="REASONING"):
        loads_cassette(json.dumps(doc))


def test_not_a_cassette(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="not an agui-replay cassette"):
        loads_cassette('{"interactions": []}')
    with pytest.raises(CassetteError, match="JSON object"):
        loads_cassette("[1, 2]")
    with pytest.raises(CassetteError, match="UTF-8"):
        loads_cassette(b'{"version": 1, "x": "\xff"}')


def test_shape_validation_mode_skips_model_validation() -> None:
    doc = json.loads(dumps_cassette(_cassette()))
    doc["runs"][0]["events"][2].pop("delta")
    with pytest.raises(CassetteError):
        loads_cassette(json.dumps(doc))
    loaded = loads_cassette(json.dumps(doc), validate="shape")
    assert "delta" not in loaded.runs[0].events[2]
    doc["runs"][0]["events"][2]["type"] = "NOPE"
    with pytest.raises(CassetteError, match="NOPE"):
        loads_cassette(json.dumps(doc), validate="shape")


def test_bom_and_big_integers_load() -> None:
    # 2**70 + 1 has no float of its own (2**70 has, and would compare equal as a float)
    cassette = _cassette()
    numbers = {"big": 2**70 + 1, "small": -(2**64) - 1, "ok": 7}
    words = "żółć 안녕 12345678901234567890"  # not ASCII, and a long run of digits in a string
    cassette.runs[0].events[-2]["snapshot"] = {**numbers, "words": words}
    text = "\ufeff" + dumps_cassette(cassette)
    for loaded in (loads_cassette(text), loads_cassette(text.encode())):
        snapshot = loaded.runs[0].events[-2]["snapshot"]
        assert snapshot == {**numbers, "words": words}
        assert [type(snapshot[k]) for k in numbers] == [int, int, int]


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_from_dict_refuses_what_json_cannot_hold_and_names_the_place(bad: float) -> None:
    doc = _cassette().to_dict()
    doc["runs"][0]["events"][-2]["snapshot"] = {"b": [1, bad]}
    with pytest.raises(CassetteError) as caught:
        Cassette.from_dict(doc, source="built.json")
    message = str(caught.value)
    assert "built.json" in message
    assert "runs[0].events[6].snapshot.b[1]" in message
    assert "is not a JSON number" in message
    assert "replace it" in message
    # provider chunks too
    doc = _cassette().to_dict()
    doc["runs"][0]["interactions"][0]["request"]["body"] = {"temperature": bad}
    with pytest.raises(CassetteError, match=r"runs\[0\]\.interactions\[0\]\.request"):
        Cassette.from_dict(doc)


@pytest.mark.parametrize("key", [None, True, (1, 2)])
def test_a_non_finite_number_under_a_key_json_cannot_hold_is_named(key: object) -> None:
    # found by tests/package/test_fuzz_entry_points.py: the message builder itself raised TypeError
    doc = {"runs": [{"events": [{key: float("inf")}]}]}
    with pytest.raises(CassetteError) as caught:
        Cassette.from_dict(doc, source="built.json")
    assert f"runs[0].events[0][{key!r}]: NaN or infinity" in str(caught.value)


def test_big_integers_survive_a_save_and_a_load(tmp_path: Path) -> None:
    cassette = _cassette()
    cassette.runs[0].events[-2]["snapshot"] = {"id": 12345678901234567890123, "n": [2**65]}
    loaded = load_cassette(save_cassette(cassette, tmp_path / "big.json"))
    assert loaded.runs[0].events[-2]["snapshot"] == {"id": 12345678901234567890123, "n": [2**65]}


@settings(max_examples=30, deadline=None)
@given(st.lists(st.text(max_size=20), min_size=1, max_size=5))
def test_any_deltas_round_trip(deltas: list[str]) -> None:
    cassette = _cassette()
    cassette.runs[0].events[2:5] = [
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "r0-msg-1", "delta": d or "x"} for d in deltas
    ]
    loaded = loads_cassette(dumps_cassette(cassette, scrub_secrets=False))
    assert loaded.runs[0].events == cassette.runs[0].events


def test_cassette_error_is_an_agui_replay_error(tmp_path: Path) -> None:
    with pytest.raises(AguiReplayError):
        load_cassette(tmp_path / "nope.json")


# --- atomic writes ------------------------------------------------------------------------------


def test_exception_during_serialization_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_cassette(_cassette(), path)
    before = path.read_bytes()
    bad = _cassette()
    bad.runs[0].events.append({"type": "CUSTOM", "name": "x", "value": float("nan")})
    with pytest.raises(CassetteError) as info:
        save_cassette(bad, path)
    assert "runs[0].events[8]" in str(info.value)
    assert str(path) in str(info.value)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json"]  # no temp file left


def test_non_json_value_is_refused(tmp_path: Path) -> None:
    bad = _cassette()
    bad.runs[0].events[-2]["snapshot"] = {"blob": b"bytes"}
    with pytest.raises(CassetteError, match="JSON"):
        save_cassette(bad, tmp_path / "c.json")
    assert list(tmp_path.iterdir()) == []


def test_file_mode_follows_umask(tmp_path: Path) -> None:
    path = save_cassette(_cassette(), tmp_path / "c.json")
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


_WRITER = textwrap.dedent(
    """
    import sys
    from agui_replay.cassette import Cassette, CassetteRun, save_cassette
    path, n, marker = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    events = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    events += [{"type": "CUSTOM", "name": "c", "value": marker * 50} for _ in range(n)]
    events.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    run = CassetteRun(input={"threadId": "t", "runId": "r", "messages": [], "state": None,
                             "tools": [], "context": [], "forwardedProps": None}, events=events)
    print("start", flush=True)
    save_cassette(Cassette(runs=[run]), path)
    print("done", flush=True)
    """
)


def test_killed_writer_leaves_previous_cassette_intact(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_cassette(_cassette(), path)
    before = path.read_bytes()
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path), "100000", "k"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "start"
    # wait until the temporary file exists and has grown, i.e. the write is under way
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        temps = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        if temps and temps[0].stat().st_size > 1_000_000:
            break
        time.sleep(0.005)
    else:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        pytest.fail("the writer never started writing its temporary file")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == before
    load_cassette(path)  # still a valid cassette
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "c.json"]
    assert all(name.startswith(".c.json.") and name.endswith(".tmp") for name in leftovers)


def test_concurrent_writers_in_one_folder(tmp_path: Path) -> None:
    folder = tmp_path / "cassettes" / "test_mod"  # not created yet: both race to create it
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(folder / f"test_{i % 3}.json"), "2000", str(i)],
            stdout=subprocess.DEVNULL,
        )
        for i in range(6)
    ]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    names = sorted(p.name for p in folder.iterdir())
    assert names == [f"test_{i}.json" for i in range(3)]
    for i in range(3):
        loaded = load_cassette(folder / f"test_{i}.json")
        values = {e["value"] for e in loaded.runs[0].events if e["type"] == "CUSTOM"}
        # one writer's content, whole: never a mix of two
        assert values in ({str(i) * 50}, {str(i + 3) * 50})


# --- file names ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "test_x[a/b-1]",
        "test_x[a\\b]",
        'test_x[q"uote]',
        "test_x[\x00\x1f]",
        "test_x[c:d*e?]",
        "CON",
        "..",
        " ",
    ],
)
def test_unsafe_names_become_safe(name: str, tmp_path: Path) -> None:
    safe = safe_file_name(name)
    assert not set(safe) & set('\\/:*?"<>|')
    assert all(ord(c) >= 32 for c in safe)
    assert safe not in ("", ".", "..")
    assert safe.upper() != "CON"
    (tmp_path / f"{safe}.json").write_text("{}")  # really a usable file name


def test_names_stay_readable_and_unique() -> None:
    assert safe_file_name("test_x[a/b-1]").startswith("test_x[a_b-1]-")
    assert safe_file_name("test_x[a/b]") != safe_file_name("test_x[a_b]")
    assert safe_file_name("test_x[a_b]") == "test_x[a_b]"
    assert safe_file_name("test_한국어[✓]") == "test_한국어[✓]"
    long_a, long_b = "test_" + "a" * 300 + "1", "test_" + "a" * 300 + "2"
    assert len(safe_file_name(long_a)) <= 120
    assert safe_file_name(long_a) != safe_file_name(long_b)
    assert safe_file_name(long_a).startswith("test_aaaa")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=200), min_size=2, max_size=2, unique=True))
def test_distinct_names_never_share_a_file(names: list[str]) -> None:
    a, b = (safe_file_name(n) for n in names)
    assert a != b


# --- scrubbing on save ---------------------------------------------------------------------------


def test_a_key_is_nowhere_in_the_written_file(tmp_path: Path) -> None:
    interaction = _interaction(
        [
            'data: {"choices": [{"delta": {"content": "your key is ' + KEY[:13],
            KEY[13:] + '"}}]}\n\n',  # the key split across two chunks
            "data: [DONE]\n\n",
        ]
    )
    interaction["request"]["headers"]["Authorization"] = f"Bearer {KEY}"
    interaction["request"]["headers"]["X-Api-Key"] = "custom-secret-value-123"
    interaction["request"]["body"]["note"] = "custom-secret-value-123 and " + KEY
    events = _events()
    events[2]["delta"] = "key: " + KEY[:5]
    events[3]["delta"] = KEY[5:] + " "  # and split across two deltas of one message
    run_input = _input()
    run_input["forwardedProps"] = {"token": "my-own-secret"}
    cassette = Cassette(
        runs=[CassetteRun(input=run_input, events=events, interactions=[interaction])]
    )
    path = save_cassette(cassette, tmp_path / "c.json", secrets=["my-own-secret"])
    data = path.read_bytes()
    for secret in (KEY, "custom-secret-value-123", "my-own-secret", KEY[:13], KEY[13:]):
        assert secret.encode() not in data, secret
    loaded = load_cassette(path)
    chunks = loaded.runs[0].interactions[0]["response"]["chunks"]
    assert len(chunks) == 3  # chunk boundaries survive
    assert "".join(c["data"] for c in chunks).count("<scrubbed>") == 1
    headers = loaded.runs[0].interactions[0]["request"]["headers"]
    assert headers["Authorization"] == headers["X-Api-Key"] == "<scrubbed>"
    assert headers["content-type"] == "application/json"
    # the caller's cassette object is untouched
    assert (
        cassette.runs[0].interactions[0]["request"]["headers"]["Authorization"] == f"Bearer {KEY}"
    )


def test_scrubbing_can_be_turned_off(tmp_path: Path) -> None:
    cassette = _cassette()
    cassette.runs[0].interactions[0]["request"]["body"]["k"] = KEY
    path = save_cassette(cassette, tmp_path / "c.json", scrub_secrets=False)
    assert KEY.encode() in path.read_bytes()


# --- scrub() on its own --------------------------------------------------------------------------


def test_scrub_headers_in_both_shapes_any_case() -> None:
    from agui_replay.scrub import scrub

    doc = {
        "request": {
            "headers": [["AUTHORIZATION", "Basic dXNlcjpwYXNzd29yZA=="], ["Accept", "*/*"]],
            "body": "echo dXNlcjpwYXNzd29yZA== back",
        },
        "response": {"headers": {"Set-Cookie": ["a=session-123456789", "b=2"], "api-key": "k"}},
    }
    out = scrub(doc)
    assert out["request"]["headers"] == [["AUTHORIZATION", "<scrubbed>"], ["Accept", "*/*"]]
    assert out["request"]["body"] == "echo <scrubbed> back"  # the token, found in the header
    assert out["response"]["headers"] == {
        "Set-Cookie": ["<scrubbed>", "<scrubbed>"],
        "api-key": "<scrubbed>",
    }
    assert doc["request"]["headers"][0][1].startswith("Basic ")  # a copy, input untouched


def test_short_header_values_are_not_replaced_everywhere() -> None:
    from agui_replay.scrub import scrub

    out = scrub({"headers": {"cookie": "b=2"}, "body": "a=1&b=2"})
    assert out == {"headers": {"cookie": "<scrubbed>"}, "body": "a=1&b=2"}


def test_patterns_can_be_turned_off_and_do_not_eat_words() -> None:
    from agui_replay.scrub import scrub

    text = f"task-force disk-usage-statistics-report key={KEY}"
    assert scrub(text) == "task-force disk-usage-statistics-report key=<scrubbed>"
    assert scrub(text, patterns=()) == text
    assert scrub(text, patterns=(), secrets=["force"]) == text.replace("force", "<scrubbed>")


@settings(max_examples=80, deadline=None)
@given(
    st.text(alphabet="ab .\n", max_size=15),
    st.text(alphabet=" .,\n", max_size=15),  # nothing a key could run on into
    st.lists(st.integers(0, 200), max_size=6),
)
def test_any_chunking_of_a_stream_is_scrubbed_like_the_whole(
    before: str, after: str, cuts: list[int]
) -> None:
    from agui_replay.scrub import DEFAULT_SECRET_PATTERNS
    from agui_replay.scrub._scrubber import scrub_sequence

    text = before + " " + KEY + after + " hunter2"
    bounds = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    import re as _re

    regexes = [*DEFAULT_SECRET_PATTERNS, _re.compile("hunter2")]
    out = scrub_sequence(pieces, regexes)
    assert len(out) == len(pieces)
    joined = "".join(out)
    assert KEY[:6] not in joined
    assert "hunter2" not in joined
    assert joined == before + " <scrubbed>" + after + " <scrubbed>"
