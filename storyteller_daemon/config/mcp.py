"""The ``[mcp]`` section: the MCP servers storytellers may use, and ``storyteller mcp serve``.

``[mcp.servers.NAME]`` tables are the operator's list of tool servers: a command started with
its arguments (talked to over its stdin and stdout), or a streamable-HTTP URL with the name of
the variable holding its bearer token. A storyteller's settings only name these servers and
list the tools it may call (`storyteller_daemon.domain.mcp`). ``[mcp.serve]`` configures the
daemon's own MCP server, which admins' AI clients connect to.
"""

from __future__ import annotations

import re
from typing import Annotated, Self

from pydantic import AfterValidator, Field, model_validator

from storyteller_daemon.config.fields import (
    ENV_NAME_PATTERN,
    EnvVarName,
    PositiveFloat,
    PositiveInt,
    _Section,
)

SERVER_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}$")
"""Lower-case letters, digits and '-', at most 24: `domain.mcp.SERVER_NAME_PATTERN`, which
settings are checked with (a test keeps the two equal)."""


def _check_env_names(names: tuple[str, ...]) -> tuple[str, ...]:
    for name in names:
        if not ENV_NAME_PATTERN.match(name):
            raise ValueError(f"{name!r} is not the name of an environment variable")
    return names


class McpServerConfig(_Section):
    """One MCP server storytellers may be granted: a command (stdio) or a URL (HTTP)."""

    command: str = ""
    """The program to start; the daemon talks to it over its stdin and stdout."""
    args: Annotated[tuple[str, ...], Field(strict=False)] = ()
    cwd: str = ""
    """Working directory of the command (empty: the daemon's)."""
    pass_env: Annotated[tuple[str, ...], Field(strict=False), AfterValidator(_check_env_names)] = ()
    """Names of the daemon's environment variables handed to the command (it gets only a
    minimal environment otherwise: PATH, HOME and the like)."""
    url: str = ""
    """A streamable-HTTP endpoint (http:// or https://), instead of a command."""
    token_env: EnvVarName = ""
    """For a URL: the variable holding the bearer token sent with every request."""
    timeout_seconds: PositiveFloat = 15.0
    """How long one tool call may take before the model is told the server did not answer."""
    connect_timeout_seconds: PositiveFloat = 10.0
    """How long starting or reaching the server, and listing its tools, may take."""

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        if bool(self.command.strip()) == bool(self.url.strip()):
            raise ValueError("give either command (a program to start) or url, not both")
        if self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("url must start with http:// or https://")
        if self.command and self.token_env:
            raise ValueError("token_env is for url servers; pass a command's secrets with pass_env")
        return self


def _check_server_names(servers: dict[str, McpServerConfig]) -> dict[str, McpServerConfig]:
    for name in servers:
        if not SERVER_NAME_PATTERN.match(name):
            raise ValueError(
                f"MCP server name {name!r} is invalid: use 1-24 lower-case letters, digits or "
                "'-', starting with a letter or digit"
            )
    return servers


class McpServeConfig(_Section):
    """``storyteller mcp serve``: the daemon's data, read by admins' AI clients."""

    host: str = Field(default="127.0.0.1", min_length=1)
    """Address of the HTTP transport; only loopback addresses are accepted (tunnel for more)."""
    port: Annotated[int, Field(ge=0, le=65535)] = 8765
    """TCP port of the HTTP transport; 0 picks a free one."""
    token_env: EnvVarName = "STORYTELLER_MCP_TOKEN"  # noqa: S105 - a variable's name
    """The variable holding the bearer token: every HTTP request must present it, and admin
    actions over stdio need it in the server's environment."""
    admin_actions: bool = False
    """Offer the admin tools (pause, resume); read-only otherwise."""
    max_items: PositiveInt = 50
    """Most entries a listing or a search answers with."""


class McpConfig(_Section):
    """MCP both ways: tool servers for storytellers, and the daemon's own server."""

    servers: Annotated[dict[str, McpServerConfig], AfterValidator(_check_server_names)] = Field(
        default_factory=dict
    )
    retry_seconds: PositiveFloat = 60.0
    """After a server could not be reached, turns get an error at once for this long before
    it is tried again (so a dead server never holds a turn up twice in a row)."""
    max_result_chars: PositiveInt = 8000
    """A tool result's text is cut to this many characters before the model sees it."""
    serve: McpServeConfig = Field(default_factory=McpServeConfig)
