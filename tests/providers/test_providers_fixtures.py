"""The provider fixtures, run through the plugin entry point with pytester."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_fixtures_point_real_clients_at_the_fake(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_openai(fake_provider, openai_client, fake_provider_server):
            fake_provider.reply("Hel", "lo")
            r = openai_client.chat.completions.create(model="m", messages=[])
            assert r.choices[0].message.content == "Hello"
            assert str(openai_client.base_url).rstrip("/") == fake_provider_server.base_url
            assert fake_provider_server.base_url.startswith("http://127.0.0.1:")

        def test_anthropic(fake_provider, anthropic_client):
            fake_provider.reply("Hi")
            m = anthropic_client.messages.create(model="c", max_tokens=5, messages=[])
            assert m.content[0].text == "Hi"

        @pytest.mark.anyio
        async def test_async(fake_provider, async_openai_client):
            fake_provider.reply("A", "B")
            r = await async_openai_client.chat.completions.create(model="m", messages=[])
            assert r.choices[0].message.content == "AB"
        """
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_unserved_turns_fail_the_test_with_a_listing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        def test_leaves_turns(fake_provider):
            fake_provider.reply("never")
            fake_provider.tool_call("lookup", "{}")

        @pytest.mark.agui_allow_unused_turns
        def test_allowed(fake_provider):
            fake_provider.reply("never")

        def test_attribute_opt_out(fake_provider):
            fake_provider.allow_unused_turns = True
            fake_provider.reply("never")
        """
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*2 scripted turn(s) were never requested*",
            "*turn #0: reply: text 'never'*",
            "*turn #1: reply: tool calls lookup*",
        ]
    )


def test_failure_inside_the_fake_fails_the_test_even_if_swallowed(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        """
        import openai

        def test_agent_swallows_errors(fake_provider, openai_client):
            try:
                openai_client.chat.completions.create(model="m", messages=[])
            except openai.APIError:
                pass  # an agent that hides provider errors

        def test_already_failing(fake_provider):
            fake_provider.reply("unused")
            assert 1 == 2
        """
    )
    result = pytester.runpytest("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*ScriptExhaustedError*request #0*"])
    # the test's own failure is what is reported, not the unserved turn
    assert "never requested" not in result.stdout.str()


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines(["*agui_allow_unused_turns*"])


def test_server_stops_after_the_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import httpx2, pytest

        URL = []

        def test_one(fake_provider_server):
            URL.append(fake_provider_server.base_url)

        def test_two():
            with pytest.raises(httpx2.ConnectError):
                httpx2.get(URL[0] + "/models")
        """
    )
    # In a subprocess: after other in-process runs, pytester's sys.modules restore can leave two
    # copies of httpcore2, and its ConnectError then escapes httpx2's exception mapping.
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
