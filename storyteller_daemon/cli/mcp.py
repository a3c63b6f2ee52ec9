"""``storyteller mcp``: the daemon's MCP server, for admins' AI clients (docs/mcp.md).

``serve`` answers over stdin and stdout (an MCP client starts it as a command) or over
streamable HTTP on ``[mcp.serve] host:port`` behind the bearer token. It reads the configured
database, whether or not the daemon runs; only the admin tools, when enabled, write to it.
"""

from __future__ import annotations

import asyncio
import os
from enum import StrEnum
from typing import Annotated

import typer

from storyteller_daemon.cli.support import (
    command_group,
    err_console,
    open_store,
    register,
    run_async,
    state,
)
from storyteller_daemon.errors import ConfigError

app = command_group("The daemon's MCP server: storytellers, runs and decisions for AI clients.")


class Transport(StrEnum):
    """How the server talks to its client."""

    STDIO = "stdio"
    HTTP = "http"


@register(app, "serve")
@run_async
async def serve(
    ctx: typer.Context,
    transport: Annotated[
        Transport,
        typer.Option(
            help="stdio (started by the client) or http (the host and port of mcp.serve)."
        ),
    ] = Transport.STDIO,
) -> None:
    """Serve the storytellers' data over MCP until the client leaves or SIGINT/SIGTERM."""
    from storyteller_daemon.app.logs import configure_logging
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.mcp.server import serve_http, serve_stdio
    from storyteller_daemon.runtime.daemon import stop_on_signals

    cfg = state(ctx).config()
    configure_logging(cfg.logging)  # stderr: stdout belongs to the protocol
    serve_cfg = cfg.mcp.serve
    token = os.environ.get(serve_cfg.token_env, "").strip() if serve_cfg.token_env else ""
    clock = SystemClock()
    if transport is Transport.HTTP and not token:
        raise ConfigError(
            "config",
            f"the HTTP transport needs a bearer token: set {serve_cfg.token_env or 'a variable'}"
            " (named by [mcp.serve] token_env)",
            key="mcp.serve.token_env",
        )
    async with open_store(ctx) as store:
        if transport is Transport.STDIO:
            await serve_stdio(store, serve_cfg, token_held=bool(token), clock=clock)
            return
        stop = asyncio.Event()
        with stop_on_signals(stop):
            await serve_http(
                store,
                serve_cfg,
                token=token,
                clock=clock,
                stop=stop,
                started=lambda http: err_console.print(f"serving MCP on {http.url}", markup=False),
            )
