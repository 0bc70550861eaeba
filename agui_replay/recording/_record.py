"""The record side of a session: a run recorded through the provider's recorder, the check that
its upstream answered, and the cassette its runs are written as."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agui_replay._secrets import MIN_SECRET_LENGTH
from agui_replay.cassette import Cassette, CassetteRun, save_cassette
from agui_replay.recording._modes import RecordMode, UpstreamError
from agui_replay.recording._steady import steady_cassette, without_volatile

if TYPE_CHECKING:
    from agui_replay.recording._runs import PendingRun, RunRecord
    from agui_replay.recording._session import CassetteSession

__all__ = ["RunRecorder"]

_log = logging.getLogger("agui_replay.session")


class RunRecorder:
    """Records a session's runs, and writes them at its end."""

    def __init__(self, session: CassetteSession) -> None:
        self.session = session
        self.discard = False
        """The test failed and its recording is not to be written."""

    def begin(self, pending: PendingRun) -> None:
        """Start recording run ``pending``: the session's hook first, then the recorder."""
        session = self.session
        if session.before_record is not None:
            session.before_record()
        pending.first_interaction = session.provider._record()

    def upstream_failed(self, pending: PendingRun) -> UpstreamError | None:
        """The error of a recorded run whose upstream failed (``None``: it did not, or the
        session records errors on purpose); the session then writes nothing."""
        session = self.session
        recorder = session.provider.recorder
        if pending.replay or session.record_errors or recorder is None:
            return None
        own = list(recorder.interactions[pending.first_interaction :])
        mine = {id(i) for i in own}
        found = [(i, what) for i, what in list(recorder.failures) if id(i) in mine]
        # A 4xx (a wrong or missing key, an unknown model, a wrong base path) is a failure too:
        # the SDK raises on it, and a cassette of it would replay the error as the agent's run.
        counted = {id(i) for i, _ in found}
        found += [
            (i, f"{i.request.method} {self._upstream_of(i)} answered {i.response.status}")
            for i in own
            if i.response.status >= 400 and id(i) not in counted
        ]
        if not found:
            return None
        shown = []
        checks: list[str] = []
        for interaction, what in found:
            body = " ".join(interaction.response.text.split())
            shown.append(f"  {what}" + (f": {body[:300]}" if body else ""))
            for check in _upstream_checks(interaction):
                if check not in checks:
                    checks.append(check)
        message = (
            f"{session.path}: run #{pending.index} was not recorded, the upstream failed:\n"
            + "\n".join(shown)
            + "\nNothing was written (an existing cassette stays as it was). Check "
            + "; ".join(checks)
            + "; to record this failure on purpose (a test of error handling), use "
            "`@pytest.mark.agui(record_errors=True)`."
        )
        session.upstream_failures.append(message)
        return UpstreamError(message)

    def _upstream_of(self, interaction: Any) -> str:
        """The URL a recorded provider request went to (its upstream's origin and path)."""
        upstreams = self.session.upstreams()
        base = upstreams.get(interaction.provider or "default") or upstreams.get("default")
        path = interaction.request.path
        if base is None:
            return f"{interaction.provider} {path}"
        parts = urlsplit(base)
        return f"{parts.scheme}://{parts.netloc}{path}"

    def save(self, http: list[dict[str, Any]]) -> Path | None:
        """Write the cassette when a run was recorded (with ``http``, the test's other
        exchanges) and nothing keeps it from being written; returns its path."""
        session = self.session
        outcome, failures = session.outcome, session.upstream_failures
        if self.discard and outcome == "recorded" and not failures:
            session.discarded = True
            _log.debug("%s: the test failed, its recording is not written", session.path)
            return None
        if outcome != "recorded" or failures:
            _log.debug(
                "%s: nothing to write (%s)",
                session.path,
                "an upstream failed" if failures else f"runs {outcome}",
            )
            return None
        recorded = session.recorded_runs
        runs = [self._run_to_store(r, recorded) for r in session.runs]
        if session.mode is RecordMode.NEW:
            runs = recorded + runs[len(recorded) :]
        self._learn_recorded_secrets()
        meta: dict[str, Any] = {"provider": {"base_path": session.base_path}}
        cassette = Cassette(runs=runs, name=session.name, meta=meta, http=http)
        path = session.path
        if path.exists():
            # An unchanged re-record leaves the file byte-identical (see recording.steady).
            steady = steady_cassette(
                cassette, path, secrets=session.secrets, keep_date=not session.renew_recorded_at
            )
            if steady is None:
                _log.debug("%s: re-recorded unchanged, the file is left as it was", path)
                session.unchanged = True
                return path
            cassette = steady
        _log.debug("%s: writing %d run(s)", path, len(runs))
        return save_cassette(cassette, path, secrets=session.secrets)

    @staticmethod
    def _run_to_store(run: RunRecord, recorded: list[CassetteRun]) -> CassetteRun:
        if run.action == "replayed":
            return recorded[run.index]
        interactions = without_volatile(run.interactions)  # no date, request ids, counters
        return CassetteRun(input=run.stored_input, events=run.normalized, interactions=interactions)

    def _learn_recorded_secrets(self) -> None:
        """The keys the recorder saw in the requests' auth headers and query strings (a key
        passed in code, not through a variable) are scrubbed from the events too (those long
        enough to be a key, as :func:`~agui_replay.scrub.scrub` does with header values)."""
        secrets = self.session.secrets
        recorder = self.session.provider.recorder
        if recorder is None:
            return
        known = set(secrets)
        for secret in recorder.scrubber.secrets:
            if len(secret) >= MIN_SECRET_LENGTH and secret not in known:
                secrets.append(secret)


_KEY_VARIABLES = {
    "default": "OPENAI_API_KEY",
    "openai": "OPENAI_API_KEY",
    "azure": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "gemini": "GEMINI_API_KEY or GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "bedrock": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_BEARER_TOKEN_BEDROCK)",
}
_UPSTREAM_SETTINGS = "`--agui-upstream`, the `agui_upstream` fixture or ini"


def _upstream_checks(interaction: Any) -> list[str]:
    """What to check for a failed provider request, most likely first (by its status)."""
    status = interaction.response.status
    variable = _KEY_VARIABLES.get(interaction.provider or "default")
    key = f"the API key in ${variable}" if variable else "the API key in the environment"
    body = interaction.request.body
    model = body.get("model") if isinstance(body, Mapping) else None
    model_name = f"the model name ({model!r})" if isinstance(model, str) else "the model name"
    base = f"the base URL ({_UPSTREAM_SETTINGS})"
    if status in (401, 403):
        return [f"{key} (missing, wrong or without access)", model_name, base]
    if status == 404:
        return [model_name, base, key]
    if 400 <= status < 500 and status != 429:
        return [model_name, "the request the agent builds", key]
    return [key, "the network", base]
