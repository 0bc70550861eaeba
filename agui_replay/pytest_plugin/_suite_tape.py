"""The suite's requests outside any test's cassette: made while test modules are imported and
collected, and in session-scoped fixtures (setup and teardown), recorded once per suite into
the session cassette and replayed from it offline, as the tests' own requests are.

The session cassette is ``_session.json`` in the cassette folder: a cassette with no runs,
whose ``http`` list holds those exchanges. The suite records it when its tests record
(``--agui-record``; ``once`` and ``new`` when it is missing) and replays it otherwise; a
suite with no session cassette that does not record is left as it was (its requests reach
the network). Threads do not belong to the session's causal chain: a timer or exporter that
an import started is background work (see ``agui_replay.providers.HttpTape``).

Under pytest-xdist every worker imports the modules: each records what it saw, sends it to
the controller, which writes the exchanges once each (the first worker's order).
"""

from __future__ import annotations

import contextlib
import json
import logging
import warnings
from collections.abc import Generator, Iterator
from typing import Any

import pytest

from agui_replay.pytest_plugin._ledger import Ledger
from agui_replay.pytest_plugin._options import SessionOptions

SESSION_CASSETTE = "_session.json"
"""The session cassette's file name, in the cassette folder."""

_WORKER_KEY = "agui_replay_session_http"
"""The key of a worker's recorded session exchanges (JSON) in its ``workeroutput``."""

_log = logging.getLogger("agui_replay.tape")


class SuiteTape:
    """The session cassette's tape, installed around collection, session-scoped fixtures and
    the last test's teardown (the hooks of :class:`SuiteHooks`)."""

    def __init__(self, options: SessionOptions, config: pytest.Config, ledger: Ledger) -> None:
        self.options, self.config, self.ledger = options, config, ledger
        self.path = options.cassette_dir / SESSION_CASSETTE
        self.tape: Any = None
        self.gathered: list[list[dict[str, Any]]] = []
        self._open: list[contextlib.ExitStack] = []
        """The exchanges the xdist workers recorded (the controller's)."""

    @property
    def worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def _mode(self) -> str | None:
        """``record``, ``replay`` or ``None`` (no tape: nothing recorded, none to replay)."""
        options = self.options
        if options.refresh:
            return "replay" if self.path.is_file() else None
        mode = str(options.cli_mode or self.config.getini("agui_record_mode")).strip().lower()
        if mode == "rewrite" or (mode in ("once", "new") and not self.path.is_file()):
            return "record"
        return "replay" if self.path.is_file() else None

    def start(self) -> None:
        """Open the tape (its windows install it), or none."""
        mode = self._mode()
        if mode is not None or self.path.is_file():
            self.ledger.claimed.add(self.options.shown(self.path))  # never unused
        xdist_controller = not self.worker and _xdist_runs(self.config)
        if mode is None or xdist_controller:
            return
        from agui_replay.providers import HttpTape

        secrets: list[str] = []
        recorded: list[dict[str, Any]] = []
        if mode == "record":
            from agui_replay.recording import DEFAULT_SECRET_ENV, secrets_from_env

            with warnings.catch_warnings():  # a too-short key: the tests' fixture warns
                warnings.simplefilter("ignore")
                secrets = secrets_from_env([*DEFAULT_SECRET_ENV, *self.options.secret_env])
        else:
            from agui_replay.cassette import load_cassette

            recorded = list(load_cassette(self.path).http)
        self.tape = HttpTape(
            "record" if mode == "record" else "replay",
            recorded=recorded,
            secrets=secrets,
            ignore=self.options.ignore_hosts,
            drop=self.options.drop_hosts,
            match_on=self.options.match_on,
            where=self.options.shown(self.path),
            threads=False,
            chained=False,
        )

    @contextlib.contextmanager
    def window(self) -> Iterator[None]:
        """The block's requests go to the session's tape (a test's tape inside wins)."""
        if self.tape is None:
            yield
            return
        with self.tape.installed():
            yield

    def open_window(self) -> None:
        """:meth:`window` opened until :meth:`close_window` (around a fixture's teardown)."""
        stack = contextlib.ExitStack()
        stack.enter_context(self.window())
        self._open.append(stack)

    def close_window(self) -> None:
        if self._open:
            self._open.pop().close()

    def finish(self, session: pytest.Session) -> None:
        """Write what was recorded (a worker sends it to the controller), note what a replay
        answered as background work, close the tape."""
        tape, self.tape = self.tape, None
        if tape is not None:
            tape.close()
            self.ledger.background.update(_hosts(tape.background))
            shown = self.options.shown(self.path)
            self.ledger.large.update(f"{shown}: {note}" for note in tape.large)
            if tape.mode == "record":
                if self.worker:
                    output = self.config.workeroutput  # type: ignore[attr-defined]
                    output[_WORKER_KEY] = json.dumps(tape.exchanges)
                    return
                self.gathered.append(tape.exchanges)
        if self.gathered and not self.worker:
            self._write()

    def worker_down(self, node: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        data = output.get(_WORKER_KEY)
        if isinstance(data, str):
            self.gathered.append(json.loads(data))

    def _write(self) -> None:
        """The session cassette, each exchange once; unchanged exchanges write nothing. A run
        that collected part of the suite (paths, ``-k``, ``-m``) keeps what the others
        recorded before and adds what it saw."""
        from agui_replay.cassette import Cassette, load_cassette, save_cassette

        old: list[dict[str, Any]] = []
        if self.path.is_file():
            with contextlib.suppress(Exception):  # unreadable: written anew
                old = list(load_cassette(self.path).http)
        option = self.config.option
        whole = self.ledger.whole_suite and not (
            getattr(option, "keyword", "") or getattr(option, "markexpr", "")
        )
        seen: set[str] = set()
        http: list[dict[str, Any]] = []
        for exchanges in [[] if whole else old, *self.gathered]:
            for exchange in exchanges:
                key = json.dumps(exchange, sort_keys=True, default=str)
                if key not in seen:
                    seen.add(key)
                    http.append(exchange)
        self.gathered = []
        if [_essence(e) for e in http] == [_essence(e) for e in old]:
            return  # the same requests and answers: the file keeps its bytes
        if not http:
            if self.path.is_file():
                self.path.unlink()
            return
        save_cassette(Cassette(runs=[], http=http), self.path)
        self.ledger.recorded.add(self.options.shown(self.path))
        _log.debug("recorded %d session request(s) into %s", len(http), self.path)


def _essence(exchange: dict[str, Any]) -> Any:
    """What a re-record compares: the request, and the answer's status, failure and bytes
    (not its headers, a ``date`` among them, nor the chunks' timing)."""
    response = exchange.get("response") or {}
    chunks = response.get("chunks") or []
    data = [c.get("data") if isinstance(c, dict) else c for c in chunks]
    answer = (response.get("status"), response.get("failure"), response.get("body"), data)
    return json.dumps([exchange.get("request"), exchange.get("background"), answer], default=str)


def _hosts(requests: list[str]) -> list[str]:
    """``METHOD URL`` requests -> their hosts, one per request (a Counter's update)."""
    from urllib.parse import urlsplit

    return [urlsplit(r.partition(" ")[2]).netloc for r in requests]


def _xdist_runs(config: pytest.Config) -> bool:
    """This process is the controller of pytest-xdist workers."""
    return bool(getattr(config.option, "numprocesses", None)) and config.pluginmanager.hasplugin(
        "dsession"
    )


class SuiteHooks:
    """The hooks that open the session tape's windows (registered in ``pytest_configure``)."""

    def __init__(self, tape: SuiteTape) -> None:
        self.tape = tape

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.tape.start()

    @pytest.hookimpl(wrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, Any, Any]:
        with self.tape.window():
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(
        self, fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
    ) -> Generator[None, Any, Any]:
        if fixturedef.scope != "session" or self.tape.tape is None:
            return (yield)
        # Finalizers run last in, first out: the window opens before the fixture's teardown
        # (added after its setup) and closes after it (added before).
        fixturedef.addfinalizer(self.tape.close_window)
        try:
            with self.tape.window():
                return (yield)
        finally:
            fixturedef.addfinalizer(self.tape.open_window)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.tape.worker_down(node)

    @pytest.hookimpl(tryfirst=True)  # before the tracker sends the worker's ledger
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        self.tape.finish(session)
