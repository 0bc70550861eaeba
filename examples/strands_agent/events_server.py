"""The city-events MCP server the Strands agent uses: one tool, ``whats_on(city)``.

A real MCP server made with the ``mcp`` package (``MCPServer``, formerly ``FastMCP``), served
over streamable HTTP. ``conftest.py`` starts it on 127.0.0.1 (port ``EVENTS_PORT`` of
``agent.py``) only while a test records; a replay answers the agent's MCP traffic from the
cassette, with the server stopped. Run it by hand::

    python examples/strands_agent/events_server.py 18632

Imports nothing from Strands, so it runs in any venv that has ``mcp``.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

__all__ = ["EVENTS", "events", "whats_on"]

EVENTS = {
    "lisbon": ["a fado night in Alfama at 21:00", "the Feira da Ladra flea market from 09:00"],
    "oslo": ["a ski jumping cup at Holmenkollen at 13:00"],
}
"""What is on tomorrow, per city."""

events = MCPServer("city-events")


@events.tool()
def whats_on(city: str) -> str:
    """What is on in a city tomorrow: concerts, markets, sport.

    Args:
        city: The city's name, e.g. "Lisbon".
    """
    listed = EVENTS.get(city.strip().lower())
    if not listed:
        return f"Nothing is listed in {city} tomorrow."
    return f"Tomorrow in {city}: " + "; ".join(listed) + "."


if __name__ == "__main__":
    events.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
