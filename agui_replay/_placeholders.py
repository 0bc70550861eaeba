"""Placeholder values for the key variables the model SDKs demand, set where unset while
nothing real can be reached with them.

Private, shared by ``recording`` (a replay, with the AWS credentials of clients built before
it) and the pytest plugin (a recording whose every upstream is a loopback stand-in).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping

_KEY_PLACEHOLDER = "sk-agui-replay-placeholder"

PLACEHOLDER_ENV: dict[str, str] = {
    **dict.fromkeys(
        (
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "AZURE_OPENAI_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "GROQ_API_KEY",
            "MISTRAL_API_KEY",
            "COHERE_API_KEY",
            "OPENROUTER_API_KEY",
            "DEEPSEEK_API_KEY",
        ),
        _KEY_PLACEHOLDER,
    ),
    "AWS_ACCESS_KEY_ID": "AKIAAGUIREPLAYPLACE0",
    "AWS_SECRET_ACCESS_KEY": "agui-replay-placeholder-secret-access-key",
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
}
"""The variables the supported SDKs demand before they send anything (API keys, AWS
credentials and region), each with a placeholder of the shape the SDK accepts. Optional
credentials that change how an SDK signs (``AWS_SESSION_TOKEN``, ``AWS_BEARER_TOKEN_BEDROCK``)
are not in it.

While a session replays (the ``agui`` fixture's setup to teardown in a replay-only session,
and every replayed run), or the pytest plugin records from loopback stand-ins only, each
variable of this list that is unset holds its placeholder, so ``openai.OpenAI()`` with no key
in the environment works: nothing is ever sent with a placeholder beyond loopback. A variable
the user set is never changed; the ones set here are removed afterwards. Placeholders are never
secrets to scrub (the key-shaped ones are scrubbed like any key-shaped string)."""


@contextlib.contextmanager
def placeholder_variables(placeholders: Mapping[str, str] = PLACEHOLDER_ENV) -> Iterator[list[str]]:
    """For the block, each variable of ``placeholders`` that is unset holds its placeholder;
    yields the names set. Afterwards those are unset again, unless something changed them
    meanwhile (then the new value stays)."""
    added = [name for name in placeholders if name not in os.environ]
    for name in added:
        os.environ[name] = placeholders[name]
    try:
        yield added
    finally:
        for name in added:
            if os.environ.get(name) == placeholders[name]:
                del os.environ[name]
