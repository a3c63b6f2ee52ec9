"""Which tools a turn offers, and how a call finds its tool.

Built-ins are registered here once, by name; a profile lists which names it offers
(`storyteller_daemon.domain.tool_names`), and a name the profile lists but nobody has
registered yet is simply not offered. Adding a built-in is therefore: write its module, add its
``TOOLS`` to `_BUILTIN_MODULES`. The tool loop does not change.

A turn's `Toolset` is the profile's built-ins in declaration order followed by the valid custom
tools, then the tools of the storyteller's MCP servers (`mcp`). A call to anything else (a
built-in of another profile, an echo-only tool on a crime, an invalid custom tool, an unknown
name) is refused with a reason, where FutureMUD ran it anyway.
Names match case-insensitively; custom tool names cannot collide with built-ins that way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from storyteller_daemon.agent.models.interface import ToolSpec
from storyteller_daemon.agent.policy_rules import DESTRUCTIVE_RULE
from storyteller_daemon.agent.tools import (
    landmarks,
    memories,
    pathing,
    plans,
    players,
    references,
    scenes,
    situations,
    story_plans,
)
from storyteller_daemon.agent.tools import time as date_time
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.custom import catalogue, custom_toolset
from storyteller_daemon.agent.tools.mcp import McpListing, mcp_toolset
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.mcp import prefixed_name
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES, DIRECTOR_TOOLS, ToolProfile
from storyteller_daemon.errors import ValidationError

NOOP = "Noop"
NOOP_MESSAGE = "No action taken."


async def noop(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Noop: the model's way of saying nothing needs doing."""
    return {"message": NOOP_MESSAGE}


NOOP_TOOL = Tool.define(
    NOOP,
    "Call this when nothing (more) needs doing. It does nothing and ends the turn, whether "
    "called alone or as the last call of a response, after your actions.",
    noop,
)

_BUILTIN_MODULES: tuple[tuple[Tool, ...], ...] = (
    situations.TOOLS,
    (NOOP_TOOL,),
    players.TOOLS,
    memories.TOOLS,
    landmarks.TOOLS,
    references.TOOLS,
    pathing.TOOLS,
    plans.TOOLS,
    date_time.TOOLS,
    story_plans.TOOLS,
    scenes.TOOLS,
)


def _register(groups: Iterable[tuple[Tool, ...]]) -> Mapping[str, Tool]:
    tools: dict[str, Tool] = {}
    for tool in (t for group in groups for t in group):
        if tool.name not in BUILTIN_TOOL_NAMES:
            raise RuntimeError(f"built-in tool {tool.name} is not in any profile")
        if tool.name in tools:
            raise RuntimeError(f"built-in tool {tool.name} is registered twice")
        tools[tool.name] = tool
    return MappingProxyType(tools)


BUILTIN_TOOLS: Mapping[str, Tool] = _register(_BUILTIN_MODULES)
"""Every implemented built-in, by name."""


def builtin_tools(profile: ToolProfile, *, director: bool = False) -> tuple[Tool, ...]:
    """The implemented built-ins of a profile, in FutureMUD's declaration order, followed by
    the director's tools for a storyteller that plans."""
    names = (*profile.tool_names, *DIRECTOR_TOOLS) if director else profile.tool_names
    return tuple(BUILTIN_TOOLS[n] for n in names if n in BUILTIN_TOOLS)


def plannable_tools(storyteller: Storyteller, ctx: ToolContext) -> frozenset[str]:
    """The tools a plan of `storyteller` may name: those it is offered on heartbeat turns (the
    full profile's built-ins, the director's, its valid custom tools that are not echo-only,
    its granted MCP tools). `ctx.progs` must be loaded."""
    names = {t.name for t in builtin_tools(ToolProfile.FULL, director=True)}
    custom = custom_toolset(storyteller, ctx.progs or (), include_echo_tools=False)
    names |= {t.name for t in custom.offered}
    for grant in storyteller.mcp_grants:
        for tool in grant.tools:
            try:
                names.add(prefixed_name(grant.server, tool))
            except ValidationError:
                continue
    return frozenset(names)


def is_noop(name: str) -> bool:
    """Whether a call name is Noop (case-insensitively, as FutureMUD's batch check)."""
    return name.strip().lower() == NOOP.lower()


@dataclass(frozen=True)
class Toolset:
    """The tools of one turn.

    Attributes:
        offered: the tools sent with every request of the turn, in order.
        refusals: lower-cased name → why a call to a tool that is known but held back in this
            turn is refused.
        withheld: built-ins the policy keeps out of this turn (rule ``destructive_by_trigger``).
    """

    offered: tuple[Tool, ...]
    refusals: Mapping[str, str] = field(default_factory=dict)
    withheld: frozenset[str] = frozenset()

    def withholds(self, name: str) -> bool:
        """Whether a call names a built-in the policy keeps out of this turn."""
        wanted = name.strip().lower()
        return any(w.lower() == wanted for w in self.withheld)

    def specs(self) -> tuple[ToolSpec, ...]:
        """The request's ``tools``."""
        return tuple(t.spec() for t in self.offered)

    def find(self, name: str) -> Tool | None:
        """The offered tool a call names (case-insensitively), if any."""
        wanted = name.strip().lower()
        return next((t for t in self.offered if t.name.lower() == wanted), None)

    def refusal(self, name: str) -> str:
        """The error shown for a call to a tool that is not offered."""
        return self.refusals.get(name.strip().lower(), f"Unknown function '{name}'.")


def toolset(
    storyteller: Storyteller,
    trigger: Trigger,
    ctx: ToolContext,
    *,
    withheld: frozenset[str] = frozenset(),
    mcp: Sequence[McpListing] = (),
) -> Toolset:
    """The tools a storyteller's turn offers for a trigger (`ctx.progs` must be loaded).

    `withheld` names built-ins the policy keeps out of this turn (see `agent.policy`); `mcp`
    is what the storyteller's MCP servers offered at the start of the turn (`mcp_listings`).
    """
    director = storyteller.direction.plans
    builtins = tuple(
        t for t in builtin_tools(trigger.profile, director=director) if t.name not in withheld
    )
    offered_names = {t.name for t in builtins}
    refusals = {
        name.lower(): f"Tool '{name}' is not available for this trigger."
        for name in BUILTIN_TOOLS
        if name not in offered_names
    }
    if not director:
        for name in DIRECTOR_TOOLS:
            refusals[name.lower()] = f"Tool '{name}' is offered only to storytellers that plan."
    for name in withheld:
        refusals[name.lower()] = (
            f"Tool '{name}' is not offered on turns a player's words or actions start "
            f"(policy rule {DESTRUCTIVE_RULE})."
        )
    custom = custom_toolset(
        storyteller, ctx.progs or (), include_echo_tools=trigger.include_echo_tools
    )
    refusals.update(custom.refusals)
    taken = frozenset(t.name.lower() for t in builtins + custom.offered) | frozenset(refusals)
    remote = mcp_toolset(storyteller, mcp, taken)
    refusals.update(remote.refusals)
    return Toolset(builtins + custom.offered + remote.offered, refusals, withheld)


async def with_catalogue(ctx: ToolContext) -> ToolContext:
    """`ctx` with the world's prog catalogue loaded, so one turn asks the world only once."""
    if ctx.progs is not None:
        return ctx
    return replace(ctx, progs=await catalogue(ctx))
