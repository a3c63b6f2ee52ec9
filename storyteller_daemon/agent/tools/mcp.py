"""Tools from MCP servers, offered to a storyteller's turns beside the built-ins.

At the start of a turn, each server the storyteller is granted (`Storyteller.mcp_grants`) is
asked for its tools through the turn's `McpToolbox` (a taped service, so a replay answers from
the recording). A tool is offered when the grant's allow-list names it, under its prefixed name
``mcp__SERVER__TOOL``, with the server's description and its input schema made strict. A server
that cannot be reached, or a tool it no longer offers, is not offered; a call to it is refused
with the reason.

A call goes through the dispatcher like a custom tool's: it has an (empty) `Effect`, so the
policy counts it as a prog call (kill switch, shadow mode, approvals, turn, hourly and daily
caps). Arguments the strict schema made nullable and the model left null are dropped before the
call, since the server's own schema may not accept null. The server's answer comes back as
``{"Text": ..., "Structured": ...}``; a result the server marks as an error, and a server that
does not answer in time, are tool errors.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from storyteller_daemon.agent.effects import Effect
from storyteller_daemon.agent.schema import strict_schema
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.mcp import McpGrant, McpToolInfo, prefixed_name
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ToolError, ValidationError

log = logging.getLogger(__name__)

NO_EFFECT = Effect()


@dataclass(frozen=True)
class McpListing:
    """What one granted server offered at the start of a turn.

    Attributes:
        grant: the storyteller's grant of the server.
        tools: the server's tools, or None when it could not be asked.
        problem: why it could not be asked (the `ToolError`'s message).
    """

    grant: McpGrant
    tools: tuple[McpToolInfo, ...] | None = None
    problem: str = ""


async def mcp_listings(ctx: ToolContext, storyteller: Storyteller) -> tuple[McpListing, ...]:
    """Ask every server `storyteller` is granted for its tools (in grant order)."""
    listings: list[McpListing] = []
    for grant in storyteller.mcp_grants:
        if ctx.services.mcp is None:
            listings.append(McpListing(grant, problem="no MCP servers are configured"))
            continue
        try:
            tools = tuple(await ctx.services.mcp.list_tools(grant.server))
        except ToolError as exc:
            listings.append(McpListing(grant, problem=str(exc)))
            continue
        listings.append(McpListing(grant, tools))
    return tuple(listings)


@dataclass(frozen=True)
class _McpRunner:
    """The handler of one MCP tool."""

    server: str
    tool: str
    optional: frozenset[str]
    """Top-level properties the server's schema does not require (sent only when not null)."""

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if ctx.services.mcp is None:
            raise ToolError(f"MCP server '{self.server}' is not available to this turn.")
        sent = {k: v for k, v in arguments.items() if not (v is None and k in self.optional)}
        outcome = await ctx.services.mcp.call_tool(self.server, self.tool, sent)
        # What a server answers is outside text the daemon cannot vouch for, like players'
        # words: what the turn writes after reading it is marked so.
        ctx.taint.saw(True)
        if outcome.is_error:
            raise ToolError(
                f"MCP tool '{self.tool}' of server '{self.server}' failed: "
                f"{outcome.text or 'no reason given'}"
            )
        result: dict[str, Any] = {"Text": outcome.text}
        if outcome.structured is not None:
            result["Structured"] = outcome.structured
        return result


def build_mcp_tool(server: str, info: McpToolInfo) -> Tool:
    """The `Tool` the model calls a server's tool by.

    Raises:
        ValidationError: its prefixed name does not fit, or its schema is not an object's.
    """
    name = prefixed_name(server, info.name)
    schema = info.input_schema or {}
    try:
        parameters = strict_schema(schema)
    except ValueError as exc:
        raise ValidationError(f"MCP tool '{info.name}' of server '{server}': {exc}") from None
    required = set(schema.get("required") or ())
    optional = frozenset(p for p in (schema.get("properties") or {}) if p not in required)
    description = info.description.strip() or f"Tool {info.name} of MCP server {server}."
    return Tool(
        name,
        f"[MCP server {server}] {description}",
        parameters,
        _McpRunner(server, info.name, optional),
        effect=lambda arguments: NO_EFFECT,
        outside=True,
    )


async def approved_mcp_tool(storyteller: Storyteller, name: str, ctx: ToolContext) -> Tool:
    """The MCP tool an approved call names, built again from today's grant and listing, so a
    tool no longer allowed, or no longer offered by its server, fails instead of running.

    Raises:
        ToolError: the tool is not allowed or not offered now, or its server is unavailable.
    """
    for grant in storyteller.mcp_grants:
        for wanted in grant.tools:
            try:
                if prefixed_name(grant.server, wanted).lower() != name.lower():
                    continue
            except ValidationError:
                continue
            if ctx.services.mcp is None:
                raise ToolError(f"MCP server '{grant.server}' is not available.")
            for info in await ctx.services.mcp.list_tools(grant.server):
                if info.name == wanted:
                    return build_mcp_tool(grant.server, info)
            raise ToolError(f"MCP server '{grant.server}' no longer offers '{wanted}'.")
    raise ToolError(f"Storyteller {storyteller.name} may not call {name}.")


@dataclass(frozen=True)
class McpToolset:
    """The MCP tools of one turn.

    Attributes:
        offered: tools the turn offers, in grant and allow-list order.
        refusals: lower-cased prefixed name → why a call to it is refused in this turn.
    """

    offered: tuple[Tool, ...] = ()
    refusals: dict[str, str] = field(default_factory=dict)


def mcp_toolset(
    storyteller: Storyteller, listings: Sequence[McpListing], taken: frozenset[str]
) -> McpToolset:
    """The MCP tools a turn offers, and the reasons the others are held back.

    Args:
        storyteller: whose turn.
        listings: what the granted servers offered (`mcp_listings`).
        taken: lower-cased names already offered (built-ins, custom tools), which an MCP tool
            may not shadow.
    """
    offered: list[Tool] = []
    refusals: dict[str, str] = {}
    names = set(taken)
    for listing in listings:
        server = listing.grant.server
        by_name = {t.name: t for t in listing.tools or ()}
        for wanted in listing.grant.tools:
            try:
                name = prefixed_name(server, wanted)
            except ValidationError as exc:
                log.info("storyteller %s: %s", storyteller.id, exc)
                continue
            info = by_name.get(wanted)
            if listing.tools is None:
                refusals[name.lower()] = f"MCP server '{server}' is unavailable: {listing.problem}"
                continue
            if info is None:
                refusals[name.lower()] = f"MCP server '{server}' no longer offers '{wanted}'."
                continue
            if name.lower() in names:
                refusals[name.lower()] = (
                    f"MCP tool {name} is not offered: a custom tool has its name."
                )
                continue
            try:
                offered.append(build_mcp_tool(server, info))
            except ValidationError as exc:
                refusals[name.lower()] = str(exc)
                continue
            names.add(name.lower())
    return McpToolset(tuple(offered), refusals)
