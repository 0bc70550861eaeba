"""Deterministic ids for one run: ``{run_id}-msg-{n}`` and ``{run_id}-call-{n}``.

A recorded stream only diffs cleanly when its ids do not change from run to run, so the ids are
derived from the run id and two counters rather than drawn from a UUID.

>>> ids = RunIds("r")
>>> ids.next_message(), ids.next_tool_call(), ids.next_message()
('r-msg-1', 'r-call-1', 'r-msg-2')
>>> RunIds("").next_message()
'run-msg-1'
"""

from __future__ import annotations

__all__ = ["MessageId", "RunIds", "ToolCallId"]


class MessageId(str):
    """A message id: an ordinary ``str`` (``ctx.say("hi") == "r-msg-1"``)."""

    __slots__ = ()

    def as_str(self) -> str:
        """The id as a plain ``str``, not this subclass."""
        return str.__str__(self)


class ToolCallId(str):
    """A tool call id: an ordinary ``str``."""

    __slots__ = ()

    def as_str(self) -> str:
        """The id as a plain ``str``."""
        return str.__str__(self)


class RunIds:
    """The two counters of one run.

    The message counter is shared by text messages, reasoning blocks and tool-result messages
    (a tool call takes its result id when it opens), so ids read in the order things happened.
    """

    __slots__ = ("_messages", "_prefix", "_tool_calls")

    def __init__(self, run_id: str) -> None:
        # An empty run id would give "-msg-1", which reads like a bug in every log line.
        self._prefix = run_id or "run"
        self._messages = 0
        self._tool_calls = 0

    @property
    def prefix(self) -> str:
        """What every id starts with: the run id, or ``"run"`` when the run id is empty."""
        return self._prefix

    def next_message(self) -> MessageId:
        """The next message id, starting at ``{prefix}-msg-1``."""
        self._messages += 1
        return MessageId(f"{self._prefix}-msg-{self._messages}")

    def next_tool_call(self) -> ToolCallId:
        """The next tool call id, starting at ``{prefix}-call-1``."""
        self._tool_calls += 1
        return ToolCallId(f"{self._prefix}-call-{self._tool_calls}")
