"""Turns of one class send the same instructions and tools under one ``prompt_cache_key``; turn
classes whose tools differ (an echo's, a crime's, a state change's) get keys of their own."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from agent_doubles import ScriptedModel, calls

from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.models.interface import ModelRequest
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig, PolicyConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.events import CharacterState, Crime, Cursor, RoomEcho, StateChange

AT = datetime(2026, 1, 1, 20, 0, tzinfo=UTC)


def _echo(seq: int) -> Trigger:
    return Trigger.from_event(
        RoomEcho(
            cursor=Cursor("e", seq),
            cell_id=101,
            zone_id=1,
            occurred_at=AT,
            text=f"Someone hums a tune ({seq}).",
            source_character_id=1001,
        )
    )


def _crime(seq: int) -> Trigger:
    return Trigger.from_event(
        Crime(
            cursor=Cursor("e", seq),
            cell_id=101,
            zone_id=1,
            occurred_at=AT,
            crime_id=seq,
            crime_type="Theft",
            legal_authority="Harbour Watch",
            criminal_id=2003,
        )
    )


def _state(seq: int) -> Trigger:
    return Trigger.from_event(
        StateChange(
            cursor=Cursor("e", seq),
            cell_id=103,
            zone_id=1,
            occurred_at=AT,
            character_id=1002,
            state=CharacterState.PASS_OUT,
        )
    )


async def _first_request(
    storyteller: Storyteller, ctx: ToolContext, trigger: Trigger, seq: int
) -> ModelRequest:
    model = ScriptedModel(calls(("Noop", {})))
    loop = ToolLoop(
        model, LimitsConfig(), FakeClock(AT), policy=Policy(PolicyConfig(), FakeClock())
    )
    await loop.run(storyteller, trigger, f"Prompt {seq}.", ctx, turn_key=f"turn-{seq}")
    return model.requests[0]


def _prefix(request: ModelRequest) -> str:
    return (request.instructions or "") + json.dumps([t.to_api() for t in request.tools])


async def test_turns_of_one_class_share_their_prefix_and_key(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    first = await _first_request(storyteller, ctx, _echo(1), 1)
    second = await _first_request(storyteller, ctx, _echo(2), 2)
    assert _prefix(first) == _prefix(second)  # byte for byte
    assert first.prompt_cache_key == second.prompt_cache_key
    assert first.prompt_cache_key is not None
    assert first.prompt_cache_key.startswith(f"storyteller-{storyteller.id}-event-")


async def test_classes_with_other_tools_or_prompts_get_other_keys(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    echo = await _first_request(storyteller, ctx, _echo(1), 1)
    crime = await _first_request(storyteller, ctx, _crime(2), 2)
    state = await _first_request(storyteller, ctx, _state(3), 3)
    # A player's words withhold the tools that delete; a crime offers them, a state change
    # offers the full profile's look-ups too.
    assert {t.name for t in echo.tools} < {t.name for t in crime.tools}
    assert {t.name for t in crime.tools} < {t.name for t in state.tools}
    keys = {r.prompt_cache_key for r in (echo, crime, state)}
    assert len(keys) == 3
    rewritten = replace(storyteller, system_prompt="You watch the lighthouse.")
    again = await _first_request(rewritten, ctx, _echo(4), 4)
    assert again.prompt_cache_key not in keys
