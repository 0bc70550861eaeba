"""The plugin's normalization and id settings, run as a user runs them (pytester)."""

from __future__ import annotations

import json
import textwrap

import pytest

ARGS = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")

# An agent that mints ids the way frameworks do: uuid4 for messages, its own helper for an
# order number, and a time-stamped field in the state.
AGENT = textwrap.dedent(
    """
    import itertools, os, time, uuid

    _orders = itertools.count(int.from_bytes(os.urandom(2), "big"))

    def order_number():
        return f"order-{next(_orders)}"

    def agent(ctx):
        message_id = str(uuid.uuid4())
        ctx.emit({"type": "CUSTOM", "name": "order",
                  "value": {"order": order_number(), "message": message_id}})
        ctx.set_state({"order": order_number(), "updated_at": os.urandom(4).hex()})
        ctx.say("done")
    """
)


def _write(pytester: pytest.Pytester, test_body: str, conftest: str = "") -> None:
    pytester.makepyfile(agent_mod=AGENT)
    pytester.makeconftest(conftest or "")
    pytester.makepyfile(test_app=textwrap.dedent(test_body))
    pytester.makeini("[pytest]\npythonpath = .\n")


TEST_WITH_MARKER = """
    import pytest
    from agui_replay.normalize import ignore, replace
    from agent_mod import agent

    @pytest.mark.agui(normalize=[replace(r"order-\\d+", "<order>"),
                                 ignore("/snapshot/updated_at")])
    def test_orders(agui, agui_snapshot):
        events = agui.run(agent, "one order")
        assert events == agui_snapshot
"""


def test_marker_rules_make_a_random_agent_replay_and_snapshot(pytester: pytest.Pytester) -> None:
    _write(pytester, TEST_WITH_MARKER)
    pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "test_app" / "test_orders.json"
    stored = json.loads(cassette.read_text())
    events = stored["runs"][0]["events"]
    custom = next(e for e in events if e["type"] == "CUSTOM")
    assert custom["value"]["order"] == "<order>"
    assert custom["value"]["message"].startswith("<id-")  # the uuid4 found inside a payload
    snapshot = next(e for e in events if e["type"] == "STATE_SNAPSHOT")
    assert snapshot["snapshot"] == {"order": "<order>"}
    before = cassette.read_bytes()
    for _ in range(2):
        pytester.runpytest(*ARGS).assert_outcomes(passed=1)
    assert cassette.read_bytes() == before


def test_without_the_rules_the_same_agent_fails_replay(pytester: pytest.Pytester) -> None:
    _write(pytester, TEST_WITH_MARKER.replace("@pytest.mark.agui(", "@pytest.mark.skip_rules("))
    pytester.makeini(
        "[pytest]\npythonpath = .\nmarkers =\n    skip_rules(normalize): does nothing\n"
    )
    pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update").assert_outcomes(passed=1)
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*does not replay as recorded*", "*order*"])


def test_the_agui_normalizers_fixture_applies_to_runs_and_snapshots(
    pytester: pytest.Pytester,
) -> None:
    conftest = """
        import pytest
        from agui_replay.normalize import blank, replace

        @pytest.fixture
        def agui_normalizers():
            return [replace(r"order-\\d+", "<order>"), blank("/snapshot/updated_at")]
    """
    body = """
        from agent_mod import agent

        def test_orders(agui, agui_snapshot):
            assert agui.run(agent, "one order") == agui_snapshot
    """
    _write(pytester, body, textwrap.dedent(conftest))
    pytester.runpytest(*ARGS, "--agui-record", "--snapshot-update").assert_outcomes(passed=1)
    snap = next((pytester.path / "__snapshots__").rglob("*.agui.jsonl")).read_text()
    assert '"updated_at": "<blank>"' in snap
    assert "<order>" in snap
    pytester.runpytest(*ARGS).assert_outcomes(passed=1)


DETERMINISTIC = """
    import json, os, uuid
    import pytest

    SEEN = []

    def report():
        with open(os.environ["IDS_LOG"], "a") as out:
            out.write(json.dumps(SEEN) + "\\n")
        SEEN.clear()

    def agent(ctx):
        SEEN.append(str(uuid.uuid4()))
        ctx.say("hi")

    @pytest.mark.agui(record_mode="rewrite")
    def test_a(agui):
        agui.run(agent, "x")
        agui.run(agent, "y")
        report()

    @pytest.mark.agui(record_mode="rewrite", deterministic_ids=False)
    def test_b(agui):
        agui.run(agent, "x")
        report()
"""


def _ids(result: pytest.RunResult) -> list[list[str]]:
    """The ids each test of the inner run saw (written to $IDS_LOG), then the log emptied."""
    import os
    from pathlib import Path

    result.assert_outcomes(passed=1)
    log = Path(os.environ["IDS_LOG"])
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    return seen


@pytest.fixture(autouse=True)
def _ids_log(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IDS_LOG", str(pytester.path / "ids.jsonl"))


def test_ids_are_deterministic_by_default_and_the_marker_turns_it_off(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_ids_mod=textwrap.dedent(DETERMINISTIC))
    first = _ids(pytester.runpytest(*ARGS, "-k", "test_a"))
    again = _ids(pytester.runpytest(*ARGS, "-k", "test_a"))
    assert first == again
    assert first[0][0] != first[0][1]  # run 1 and run 2 of one cassette differ
    off = [_ids(pytester.runpytest(*ARGS, "-k", "test_b"))[0][0] for _ in range(2)]
    assert off[0] != off[1]


def test_the_ini_key_turns_deterministic_ids_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ids_mod=textwrap.dedent(DETERMINISTIC))
    pytester.makeini("[pytest]\nagui_deterministic_ids = false\n")
    runs = [_ids(pytester.runpytest(*ARGS, "-k", "test_a"))[0] for _ in range(2)]
    assert runs[0] != runs[1]


def test_id_generators_from_the_marker_and_the_ini(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        my_ids="""
        import os
        def new_id():
            return "ord_" + os.urandom(12).hex()
        """,
        test_gen="""
        import json, os
        import pytest
        from my_ids import new_id

        SEEN = []

        def report():
            with open(os.environ["IDS_LOG"], "a") as out:
                out.write(json.dumps(SEEN) + "\\n")
            SEEN.clear()

        def agent(ctx):
            SEEN.append(new_id())
            ctx.say("hi")

        @pytest.mark.agui(record_mode="rewrite", id_generators=["my_ids.new_id"])
        def test_marker(agui):
            agui.run(agent, "x")
            report()

        @pytest.mark.agui(record_mode="rewrite")
        def test_ini(agui):
            agui.run(agent, "x")
            report()
        """,
    )
    pytester.makeini("[pytest]\npythonpath = .\n")
    marker = [_ids(pytester.runpytest(*ARGS, "-k", "test_marker"))[0] for _ in range(2)]
    assert marker[0] == marker[1]
    assert marker[0][0].startswith("ord_")
    plain = [_ids(pytester.runpytest(*ARGS, "-k", "test_ini"))[0] for _ in range(2)]
    assert plain[0] != plain[1]
    pytester.makeini("[pytest]\npythonpath = .\nagui_id_generators =\n    my_ids.new_id\n")
    ini = [_ids(pytester.runpytest(*ARGS, "-k", "test_ini"))[0] for _ in range(2)]
    assert ini[0] == ini[1]


def test_bad_settings_fail_that_test_with_a_clear_message(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.agui(id_generators=["no_such_pkg.fn"])
        def test_generator(agui):
            pass

        @pytest.mark.agui(normalize=["order-\\\\d+"])
        def test_rule(agui):
            pass

        @pytest.mark.agui(normalize=5)
        def test_value(agui):
            pass

        def test_fine(agui):
            pass
        """
    )
    result = pytester.runpytest(*ARGS)
    result.assert_outcomes(passed=1, errors=3)
    result.stdout.fnmatch_lines(
        [
            "*cannot import 'no_such_pkg'*",
            "*normalizers[[]0[]]: 'order-*' is not a rule*",
            "*normalize=...) takes True, False or a list of rules*",
        ],
        consecutive=False,
    )


def test_the_ids_do_not_depend_on_where_the_project_lives(pytester: pytest.Pytester) -> None:
    # A uuid the agent sends to its provider must be the same in a CI clone at another path.
    import shutil

    one = pytester.mkdir("checkout-one")
    (one / "test_ids_mod.py").write_text(textwrap.dedent(DETERMINISTIC))
    two = pytester.path / "somewhere" / "else"
    shutil.copytree(one, two)
    seen = [
        _ids(pytester.runpytest(*ARGS, "-k", "test_a", "--rootdir", str(folder), str(folder)))
        for folder in (one, two)
    ]
    assert seen[0] == seen[1]
