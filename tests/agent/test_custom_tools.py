"""Custom prog tools: validity, offering per trigger, dispatch and idempotency, on the sim world."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.tools.base import invoke
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.custom import validate_custom_tool
from storyteller_daemon.agent.tools.registry import Toolset, builtin_tools, toolset, with_catalogue
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.domain.tool_names import ToolProfile
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState
from world_adapter.sim import SimWorld

MAREN, WREN = 1001, 2004
QUAY = 101

ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip
SHOUT = CustomTool(
    "shoutFromCrowd", "A voice in the crowd.", "12", True, (("room", "Where."), ("TEXT", "What."))
)
RECORD = CustomTool(
    "RecordCue", "Records a cue.", "AIStorytellerToolRecordCue", False, (("Cue", ""),)
)
BROKEN = CustomTool("Broken", "Does not compile.", "BrokenProg", False, (("Text", "t"),))
MISSING = CustomTool("Ghost", "No prog.", "NoSuchProg", False, ())
STALE = CustomTool(
    "Stale", "Stale descriptions.", "EchoToRoom", False, (("Room", "r"), ("Words", "w"))
)
UNSUPPORTED = CustomTool("Profile", "Dictionary param?", "HarbourWatchStatus", False, (("X", "x"),))
CLASHING = CustomTool(
    "noop", "Collides with Noop.", "EchoToRoom", False, (("Room", "r"), ("Text", "t"))
)

ALL = (ECHO, SHOUT, RECORD, BROKEN, MISSING, STALE, UNSUPPORTED, CLASHING)


@pytest.fixture
async def tooled(ctx: ToolContext) -> ToolContext:
    """The turn context of a storyteller with every kind of custom tool, catalogue loaded."""
    storyteller = replace(ctx.current, custom_tools=ALL)
    return await with_catalogue(ctx.for_turn(storyteller, "turn-1"))


def _trigger(world: SimWorld, kind: TriggerKind) -> Trigger:
    if kind is TriggerKind.ROOM_ECHO:
        return Trigger.from_event(world.emote(MAREN, "waves."))
    if kind is TriggerKind.SPEECH:
        return Trigger.from_event(world.say(MAREN, "Hello."))
    if kind is TriggerKind.CRIME:
        return Trigger.from_event(world.commit_crime(WREN, "Theft", victim_id=MAREN))
    if kind is TriggerKind.STATE:
        return Trigger.from_event(world.change_state(MAREN, CharacterState.UNCONSCIOUS))
    if kind is TriggerKind.HEARTBEAT:
        return Trigger(kind, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR)
    return Trigger(kind, datetime(2026, 1, 1, tzinfo=UTC), text="Look around.")


def _names(tools: Toolset) -> list[str]:
    return [t.name for t in tools.offered]


async def test_validity_reasons(world: SimWorld) -> None:
    catalogue = await world.progs()
    assert validate_custom_tool(ECHO, catalogue) is None
    assert validate_custom_tool(SHOUT, catalogue) is None
    assert "does not compile" in (validate_custom_tool(BROKEN, catalogue) or "")
    assert "has no prog" in (validate_custom_tool(MISSING, catalogue) or "")
    assert "do not match" in (validate_custom_tool(STALE, catalogue) or "")
    assert "do not match" in (validate_custom_tool(UNSUPPORTED, catalogue) or "")
    assert "collides with the built-in" in (validate_custom_tool(CLASHING, catalogue) or "")


async def test_valid_tools_follow_the_built_ins_sorted_by_name(
    tooled: ToolContext, world: SimWorld
) -> None:
    tools = toolset(tooled.current, _trigger(world, TriggerKind.ROOM_ECHO), tooled)
    built_ins = [t.name for t in builtin_tools(ToolProfile.EVENT_FOCUSED)]
    assert _names(tools) == [*built_ins, "EchoToRoom", "RecordCue", "shoutFromCrowd"]


@pytest.mark.parametrize(
    ("kind", "echo_offered"),
    [
        (TriggerKind.ROOM_ECHO, True),
        (TriggerKind.SPEECH, True),
        (TriggerKind.CRIME, False),
        (TriggerKind.STATE, False),
        (TriggerKind.HEARTBEAT, False),
        (TriggerKind.DIRECT, False),
    ],
)
async def test_echo_only_tools_are_offered_on_echoes_and_speech_only(
    tooled: ToolContext, world: SimWorld, kind: TriggerKind, echo_offered: bool
) -> None:
    tools = toolset(tooled.current, _trigger(world, kind), tooled)
    assert ("shoutFromCrowd" in _names(tools)) is echo_offered
    if not echo_offered:
        assert tools.find("SHOUTFROMCROWD") is None
        assert "only for room echoes and speech" in tools.refusal("shoutfromcrowd")


async def test_invalid_tools_are_refused_with_their_reason(
    tooled: ToolContext, world: SimWorld
) -> None:
    tools = toolset(tooled.current, _trigger(world, TriggerKind.ROOM_ECHO), tooled)
    for name in ("Broken", "Ghost", "Stale", "Profile"):
        assert tools.find(name) is None
    assert (
        tools.refusal("broken")
        == "Custom tool 'Broken' is invalid because its prog does not compile."
    )
    assert tools.refusal("Landmarks") == "Tool 'Landmarks' is not available for this trigger."


async def test_custom_tool_schema_is_strict_and_described(
    tooled: ToolContext, world: SimWorld
) -> None:
    tools = toolset(tooled.current, _trigger(world, TriggerKind.ROOM_ECHO), tooled)
    echo = tools.find("echotoroom")
    assert echo is not None
    schema = echo.parameters
    assert schema["required"] == ["Room", "Text"] and schema["additionalProperties"] is False
    assert schema["properties"]["Room"]["type"] == "integer"
    assert "Room to echo into." in schema["properties"]["Room"]["description"]
    shout = tools.find("shoutFromCrowd")
    assert shout is not None and list(shout.parameters["properties"]) == ["Room", "Text"]


async def test_dispatch_runs_the_prog_and_returns_futuremud_shape(
    tooled: ToolContext, world: SimWorld
) -> None:
    tools = toolset(tooled.current, _trigger(world, TriggerKind.ROOM_ECHO), tooled)
    echo = tools.find("EchoToRoom")
    assert echo is not None
    envelope = await invoke(echo, {"Room": QUAY, "Text": "A gull shrieks overhead."}, tooled)
    assert envelope == {
        "ok": True,
        "result": {"Function": "EchoToRoom", "ReturnType": "Boolean", "Result": True},
    }
    assert world.output_of(MAREN)[-1] == "A gull shrieks overhead."


async def test_a_rerun_of_the_same_turn_never_acts_twice(
    tooled: ToolContext, world: SimWorld
) -> None:
    tools = toolset(tooled.current, _trigger(world, TriggerKind.ROOM_ECHO), tooled)
    echo = tools.find("EchoToRoom")
    assert echo is not None
    arguments = {"Room": QUAY, "Text": "Bells ring out."}
    before = len(world.output_of(MAREN))
    first = await invoke(echo, arguments, tooled)
    again = await invoke(echo, dict(arguments), replace(tooled))
    assert first == again and first["ok"]
    assert len(world.output_of(MAREN)) == before + 1
    other_turn = replace(tooled, turn_key="turn-2")
    await invoke(echo, arguments, other_turn)
    assert len(world.output_of(MAREN)) == before + 2


async def test_argument_and_world_errors_become_error_envelopes(
    tooled: ToolContext, world: SimWorld
) -> None:
    tools = toolset(tooled.current, _trigger(world, TriggerKind.ROOM_ECHO), tooled)
    echo = tools.find("EchoToRoom")
    assert echo is not None
    missing = await invoke(echo, {"Room": QUAY}, tooled)
    assert missing == {"ok": False, "error": "Missing required custom-tool parameter 'Text'."}
    wrong = await invoke(echo, {"Room": "the quay", "Text": "x"}, tooled)
    assert wrong["ok"] is False and "Room" in wrong["error"]
    nowhere = await invoke(echo, {"Room": 999, "Text": "x"}, tooled)
    assert nowhere["ok"] is False and "999" in nowhere["error"]


async def test_a_world_without_a_catalogue_offers_built_ins_only(
    services: ToolContext, storyteller: Storyteller, world: SimWorld
) -> None:
    unavailable = InstrumentedWorld(world).fail("progs", WorldCommandError("bridge down"))
    services = replace(services, services=replace(services.services, world=unavailable))
    ctx = await with_catalogue(services.for_turn(replace(storyteller, custom_tools=ALL), "t"))
    assert ctx.progs == ()
    tools = toolset(ctx.current, _trigger(world, TriggerKind.ROOM_ECHO), ctx)
    assert _names(tools) == [t.name for t in builtin_tools(ToolProfile.EVENT_FOCUSED)]
