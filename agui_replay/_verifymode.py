"""The two rule sets an AG-UI stream is verified against, as the type of a ``mode`` argument.

``"client"``: what the reference TypeScript client accepts; ``"strict"``: that, and the rules a
server should keep to where the client forgives (``docs/reference/verify.md`` lists them).
Used by ``verify`` (the rule set it checks), and by ``client``, ``cassette``, ``assertions`` and
``server.testing``, which hand a mode on to it.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["Mode"]

Mode: TypeAlias = Literal["client", "strict"]
