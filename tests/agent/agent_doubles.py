"""Helpers for the agent tests: a manual clock and running a tool as the loop would. The
scripted model and its response builders ship in `storyteller_daemon.testing.model`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from storyteller_daemon.agent.tools.base import Envelope, ToolContext, invoke, parse_arguments
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS
from storyteller_daemon.testing.model import ScriptedModel, Step, calls, text

__all__ = ["ManualClock", "ScriptedModel", "Step", "calls", "execute", "text"]


class ManualClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def execute(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | str) -> Envelope:
    """Run a built-in tool as the loop would, from argument text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return await invoke(BUILTIN_TOOLS[name], parse_arguments(raw), ctx)
