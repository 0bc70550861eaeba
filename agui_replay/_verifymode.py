"""The two rule sets an AG-UI stream is verified against, as the type of a ``mode`` argument.

``"client"``: what the reference TypeScript client accepts; ``"strict"``: that, and the rules a
server should keep to where the client forgives (``docs/reference/verify.md`` lists them).
Defined by ``verify``; taken as an argument by ``client``, ``cassette``, ``assertions`` and
``server.testing``.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

__all__ = ["Mode"]

Mode: TypeAlias = Literal["client", "strict"]
