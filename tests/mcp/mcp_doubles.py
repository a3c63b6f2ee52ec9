"""Real MCP servers for the tests, written with the SDK: over stdio (a script the test writes
and the hub starts) and over streamable HTTP (in this process, behind a bearer token)."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

TOKEN = "weather-token-1234"

WEATHER_SCRIPT = '''
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather")


@server.tool()
def forecast(city: str, days: int = 1) -> str:
    """The weather forecast for a city."""
    return f"Sunny in {city} for {days} day(s)."


@server.tool()
def evacuate(city: str) -> str:
    """Orders everyone out of a city (never granted in these tests)."""
    return f"{city} evacuated."


@server.tool()
def broken(city: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"no station near {city}")


if __name__ == "__main__":
    server.run()
'''


def weather_command(tmp_path: Path) -> list[str]:
    """The command and arguments that start the weather server over stdio."""
    script = tmp_path / "weather_server.py"
    script.write_text(WEATHER_SCRIPT, encoding="utf-8")
    return [sys.executable, str(script)]


DEAD_COMMAND = [sys.executable, "-c", "import sys; sys.exit(3)"]
"""A command that exits at once: a server that is down."""


@dataclass
class SlowServer:
    """An MCP server over HTTP whose ``hang`` tool never answers; ``started`` is set when a call
    of it has reached the server."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    calls: list[str] = field(default_factory=list)

    def app(self) -> Any:
        server = MCPServer("tides")

        @server.tool()
        async def tide(harbour: str) -> str:
            """High water at a harbour."""
            self.calls.append(f"tide {harbour}")
            return f"High water at {harbour}: 14:20."

        @server.tool()
        async def hang(harbour: str) -> str:
            """Never answers."""
            self.calls.append(f"hang {harbour}")
            self.started.set()
            await asyncio.Event().wait()
            return "unreachable"

        return server.streamable_http_app()
