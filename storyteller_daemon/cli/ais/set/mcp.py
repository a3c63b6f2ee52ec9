"""``storyteller ais set REF mcp …``: the MCP servers a storyteller may use, and which tools.

A server is named as the configuration's ``[mcp.servers.NAME]`` table names it; its tools are
listed exactly as the server lists them (MCP tool names are case-sensitive). Only the listed
tools are ever shown to the model, as ``mcp__SERVER__TOOL``. A server missing from the
configuration is accepted with a note, so settings can be prepared before the server is
configured; its tools are offered once it is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

import typer

from storyteller_daemon.cli.ais.set.selection import apply_change
from storyteller_daemon.cli.support import command_group, register, run_async, state
from storyteller_daemon.domain.mcp import McpGrant, prefixed_name, validate_server_name
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import NotFoundError

app = command_group("MCP tools: allow tools of a configured MCP server, or remove them.")

Server = Annotated[str, typer.Argument(metavar="SERVER", help="A server of [mcp.servers].")]
Tools = Annotated[
    list[str], typer.Argument(metavar="TOOL...", help="Tool names as the server lists them.")
]
SomeTools = Annotated[
    list[str] | None,
    typer.Argument(metavar="[TOOL...]", help="Only these tools (default: the whole server)."),
]


def _grants_without(st: Storyteller, server: str) -> tuple[McpGrant, ...]:
    return tuple(g for g in st.mcp_grants if g.server != server)


def _configured_note(ctx: typer.Context, server: str) -> str:
    servers = state(ctx).config().mcp.servers
    if server in servers:
        return ""
    return f" (no [mcp.servers.{server}] in the configuration yet: not offered until there is)"


@register(app, "add", "allow")
@run_async
async def add_tools(ctx: typer.Context, server: Server, tools: Tools) -> None:
    """Allow TOOLs of SERVER; the model sees each as mcp__SERVER__TOOL."""
    validate_server_name(server)
    for tool in tools:
        prefixed_name(server, tool)  # refuses a name the model API could not take
    note = _configured_note(ctx, server)

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        current = st.mcp_grant(server)
        have = current.tools if current is not None else ()
        grant = McpGrant(server, (*have, *(t for t in dict.fromkeys(tools) if t not in have)))
        kept = _grants_without(st, server)
        message = (
            f"Storyteller {st.name} may call {', '.join(grant.tools)} of MCP server {server}{note}."
        )
        return replace(st, mcp_grants=(*kept, grant)), message

    await apply_change(ctx, change)


@register(app, "remove", "delete")
@run_async
async def remove_tools(ctx: typer.Context, server: Server, tools: SomeTools = None) -> None:
    """Remove TOOLs of SERVER from the allow-list, or the whole server without TOOLs."""

    def change(st: Storyteller) -> tuple[Storyteller, str]:
        current = st.mcp_grant(server)
        if current is None:
            raise NotFoundError(f"Storyteller {st.name} has no tools of MCP server '{server}'.")
        if not tools:
            return replace(st, mcp_grants=_grants_without(st, server)), (
                f"Storyteller {st.name} no longer uses MCP server {server}."
            )
        missing = [t for t in tools if not current.allows(t)]
        if missing:
            raise NotFoundError(
                f"MCP server '{server}' of storyteller {st.name} has no allowed tool "
                f"{', '.join(missing)}."
            )
        left = tuple(t for t in current.tools if t not in tools)
        grants = tuple(replace(g, tools=left) if g is current else g for g in st.mcp_grants)
        if not left:
            grants = _grants_without(st, server)
        return replace(st, mcp_grants=grants), (
            f"Storyteller {st.name} may no longer call {', '.join(tools)} of MCP server {server}."
        )

    await apply_change(ctx, change)
