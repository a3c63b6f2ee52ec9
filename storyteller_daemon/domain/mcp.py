"""Tools from MCP servers: which a storyteller may use, and how the model sees their names.

The servers themselves (a command to start, or a URL and the name of the variable holding its
token) are the operator's, in the ``[mcp.servers.NAME]`` tables of the configuration file: a
storyteller's settings, which travel in exported XML, only name a server and list the tools
of it the storyteller may call (`McpGrant`). Importing a storyteller can therefore never start
a program or reach an address the operator did not configure.

The model sees each granted tool as ``mcp__SERVER__TOOL`` (`prefixed_name`), which cannot be
mistaken for a built-in or a prog-running custom tool.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storyteller_daemon.errors import ValidationError

PREFIX = "mcp__"
SEPARATOR = "__"
SERVER_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}$")
"""Lower-case letters, digits and '-', at most 24: short enough that prefixed names fit. The
configuration checks its ``[mcp.servers]`` names with the same pattern (`config.mcp`, which
cannot import this module; a test keeps the two equal), without pulling pydantic in here."""
_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_UNFIT = re.compile(r"[^a-zA-Z0-9_-]")
MAX_TOOL_NAME_CHARS = 128


def validate_server_name(name: str) -> str:
    """Check an MCP server's name (as the configuration and the settings spell it)."""
    if not SERVER_NAME_PATTERN.match(name):
        raise ValidationError(
            f"MCP server name '{name}' is invalid: use 1-24 lower-case letters, digits or '-', "
            "starting with a letter or digit."
        )
    return name


def validate_mcp_tool_name(name: str) -> str:
    """Check the name of a tool as its MCP server lists it (non-blank, printable, bounded)."""
    if not name.strip() or len(name) > MAX_TOOL_NAME_CHARS or not name.isprintable():
        raise ValidationError(
            f"MCP tool name {name!r} is invalid: give the tool's name as its server lists it "
            f"(1-{MAX_TOOL_NAME_CHARS} printable characters)."
        )
    return name


def prefixed_name(server: str, tool: str) -> str:
    """The name the model calls a server's tool by: ``mcp__SERVER__TOOL``.

    Characters the model API does not allow in function names become ``_``.

    Raises:
        ValidationError: the result is longer than the API's 64 characters.
    """
    name = f"{PREFIX}{server}{SEPARATOR}{_UNFIT.sub('_', tool)}"
    if not _FUNCTION_NAME.match(name):
        raise ValidationError(
            f"MCP tool '{tool}' of server '{server}' cannot be offered: its name as the model "
            f"would see it ({name}) is over 64 characters."
        )
    return name


@dataclass(frozen=True)
class McpGrant:
    """The tools of one MCP server a storyteller may call.

    Attributes:
        server: the server's name in the configuration (``[mcp.servers.NAME]``).
        tools: the allow-list: tool names exactly as the server lists them. A tool the server
            offers but this list leaves out is never shown to the model.
    """

    server: str
    tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        validate_server_name(self.server)
        for tool in self.tools:
            validate_mcp_tool_name(tool)
        if len(set(self.tools)) != len(self.tools):
            raise ValidationError(f"MCP server '{self.server}' lists a tool twice.")

    def allows(self, tool: str) -> bool:
        """Whether the allow-list names `tool` (exactly: MCP tool names are case-sensitive)."""
        return tool in self.tools


def validate_grants(grants: Sequence[McpGrant]) -> tuple[McpGrant, ...]:
    """Grants with each server named once."""
    names = [g.server for g in grants]
    if len(set(names)) != len(names):
        raise ValidationError("An MCP server is granted twice; list each server once.")
    return tuple(grants)


@dataclass(frozen=True)
class McpToolInfo:
    """A tool as its MCP server lists it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class McpOutcome:
    """What one call of an MCP tool answered.

    Attributes:
        text: the text parts of the result, joined (other content kinds are named, not kept).
        structured: the structured result, when the server gave one.
        is_error: the server reported the call as failed (the text says why).
    """

    text: str = ""
    structured: dict[str, Any] | None = None
    is_error: bool = False
