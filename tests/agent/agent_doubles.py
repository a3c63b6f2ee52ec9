"""Helpers for the agent tests: a manual clock and running a tool as the loop would. The
scripted model and its response builders ship in `storyteller_daemon.testing.model`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from storyteller_daemon.agent.tools.arguments import parse_arguments
from storyteller_daemon.agent.tools.base import Envelope, invoke
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS, toolset
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import Heartbeat
from storyteller_daemon.testing.model import ScriptedModel, Step, calls, text

__all__ = ["ScriptedModel", "Step", "call_offered", "calls", "execute", "text"]


async def execute(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | str) -> Envelope:
    """Run a built-in tool as the loop would, from argument text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return await invoke(BUILTIN_TOOLS[name], parse_arguments(raw), ctx)


async def call_offered(ctx: ToolContext, name: str, arguments: Mapping[str, Any]) -> Envelope:
    """Run a tool a heartbeat turn of `ctx`'s storyteller offers (custom tools included)."""
    trigger = Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 5, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )
    tool = toolset(ctx.current, trigger, ctx).find(name)
    assert tool is not None, name
    return await invoke(tool, dict(arguments), ctx)
