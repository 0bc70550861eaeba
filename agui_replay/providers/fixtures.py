"""pytest fixtures for the fake providers (re-exported by ``agui_replay.pytest_plugin``)."""

from __future__ import annotations

__all__: list[str] = []
