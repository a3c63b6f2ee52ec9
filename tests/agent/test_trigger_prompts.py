"""Trigger rules end to end through the pipeline and the real agent with a recording model:
which triggers pass the attention gate, which tools each offers, the fields each prompt
carries, no guidance about tools that do not exist, and no markup reaching the model (§9.20)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest
from storyteller_daemon.agent.tools.registry import builtin_tools
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import (
    CustomTool,
    EventKind,
    Heartbeat,
    Scope,
    Storyteller,
)
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.tool_names import FULL_ONLY_TOOLS, FULL_PROFILE_TOOLS, ToolProfile
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.steps import attend_all, by_kind
from storyteller_daemon.testing.turns import turn_runner
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.events import CharacterState, Crime, Cursor, WorldEvent
from world_adapter.protocol import WorldClient
from world_adapter.sim import SimWorld
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.progs import HARBOUR_TOWN_PROGS

MAREN, OSRIC, PER, WREN = 1001, 1002, 2003, 2004
QUAY, WAREHOUSE_LANE = 101, 106
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

ECHO_TOOL = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip
SHOUT_TOOL = CustomTool(
    "shoutFromCrowd", "A voice in the crowd.", "12", True, (("room", "Where."), ("TEXT", "What."))
)


def recording_model() -> ScriptedModel:
    """Keeps every request; says ``interested`` to the gate and calls Noop in turns."""
    return ScriptedModel(
        then=by_kind(attention=attend_all(why="It matters."), turn=calls(("Noop", {})))
    )


def gate_requests(model: ScriptedModel) -> list[ModelRequest]:
    """The gate's requests (they offer no tool)."""
    return [r for r in model.requests if not r.tools]


def turn_requests(model: ScriptedModel) -> list[ModelRequest]:
    """The turns' requests."""
    return [r for r in model.requests if r.tools]


def body(request: ModelRequest) -> str:
    """Everything the request would send, as JSON text."""
    fields = dataclasses.asdict(request)
    fields["tools"] = [tool.to_api() for tool in request.tools]
    return json.dumps(fields, ensure_ascii=False)


def user_text(request: ModelRequest) -> str:
    return "\n".join(item["content"] for item in request.input if item.get("role") == "user")


@dataclass
class Rig:
    world: SimWorld
    store: Store
    model: ScriptedModel
    pipeline: Pipeline
    storyteller: Storyteller

    async def handle(self, event: WorldEvent) -> None:
        self.model.requests.clear()
        await self.pipeline.ingest(event)
        await asyncio.wait_for(self.pipeline.wait_idle(), 5)


@contextlib.asynccontextmanager
async def make_rig(
    sqlite_store: Store, world: SimWorld, client: WorldClient | None = None
) -> AsyncIterator[Rig]:
    """A pipeline and agent on `world`, which the daemon reaches through `client` (default:
    directly)."""
    st = await sqlite_store.storytellers.create("Harbour Watch")
    st = await sqlite_store.storytellers.save(
        replace(
            st,
            paused=False,
            subscriptions=frozenset(EventKind),
            surveillance=Surveillance(zones=frozenset({1})),
            custom_tools=(ECHO_TOOL, SHOUT_TOOL),
            speech_context_count=5,
        )
    )
    model = recording_model()
    stats = RuntimeStats()
    runner = turn_runner(
        sqlite_store,
        client or world,
        model,
        "speech",
        clock=FakeClock(T0),
        stats=stats,
        recorded=False,
    )
    pipeline = wired_pipeline(
        sqlite_store,
        runner=runner,
        clock=FakeClock(T0),
        storytellers=[st],
        zones=await world.zones(),
        stats=stats,
        speech=sqlite_store.speech,
    ).pipeline
    task = asyncio.create_task(pipeline.run())
    await settle()
    try:
        yield Rig(world, sqlite_store, model, pipeline, st)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def rig(sqlite_store: Store) -> AsyncIterator[Rig]:
    async with make_rig(sqlite_store, SimWorld.harbour_town(clock=lambda: T0)) as made:
        yield made


def names(request: ModelRequest) -> list[str]:
    return [tool.name for tool in request.tools]


def profile_names(profile: ToolProfile) -> list[str]:
    return [tool.name for tool in builtin_tools(profile)]


# ---------------------------------------------------------------------- the rules


EF, FULL = ToolProfile.EVENT_FOCUSED, ToolProfile.FULL


@pytest.mark.parametrize(
    ("kind", "attention", "profile", "echo_tools", "scope", "label"),
    [
        (TriggerKind.ROOM_ECHO, True, EF, True, Scope.EVENT, "Room Echo"),
        (TriggerKind.SPEECH, True, EF, True, Scope.EVENT, "Character Speaks"),
        (TriggerKind.CRIME, True, EF, False, Scope.EVENT, "Character Crime"),
        (TriggerKind.STATE, False, FULL, False, Scope.EVENT, "Character State"),
        (TriggerKind.HEARTBEAT, False, FULL, False, Scope.TIME, "Heartbeat"),
        (TriggerKind.DIRECT, False, FULL, False, Scope.EVENT, "Direct Invocation"),
    ],
)
def test_trigger_rules_follow_futuremud(
    kind: TriggerKind,
    attention: bool,
    profile: ToolProfile,
    echo_tools: bool,
    scope: Scope,
    label: str,
) -> None:
    trigger = Trigger(kind, T0)
    assert trigger.needs_attention is attention
    assert trigger.profile is profile
    assert trigger.include_echo_tools is echo_tools
    assert trigger.scope is scope
    assert trigger.label == label


async def test_crimes_pass_attention_event_focused_without_echo_only_tools(rig: Rig) -> None:
    crime = rig.world.commit_crime(WREN, "Theft", victim_id=MAREN, witnesses=2)
    await rig.handle(crime)
    [gate] = gate_requests(rig.model)
    # The gate sees the crime on one line; the turn gets the whole prompt and the reason.
    assert 'crime: Theft by "Wren the cutpurse" against "Maren Tidewell"' in (user_text(gate))
    turns = turn_requests(rig.model)
    assert turns
    turn_text = turns[0].input[0]["content"]
    assert "A character has committed a crime in a room you watch." in turn_text
    assert "Crime Type: Theft" in turn_text
    assert turn_text.endswith('\n\nAttention reason:\n"It matters."')
    offered = names(turns[0])
    assert offered == profile_names(ToolProfile.EVENT_FOCUSED) + ["EchoToRoom"]
    assert "shoutFromCrowd" not in offered and not FULL_ONLY_TOOLS & set(offered)


async def test_state_changes_skip_attention_with_the_full_profile(rig: Rig) -> None:
    await rig.handle(rig.world.change_state(OSRIC, CharacterState.UNCONSCIOUS))
    assert gate_requests(rig.model) == []
    [turn] = turn_requests(rig.model)
    assert names(turn) == profile_names(ToolProfile.FULL) + ["EchoToRoom"]
    assert "State Change: Unconscious" in user_text(turn)
    assert "prefer Noop" not in (turn.instructions or "")


async def test_speech_passes_attention_with_echo_only_tools(rig: Rig) -> None:
    await rig.handle(rig.world.say(MAREN, "Meet me at dusk."))
    [gate] = gate_requests(rig.model)
    [turn] = turn_requests(rig.model)
    assert '"Maren Tidewell" says: "Meet me at dusk."' in user_text(gate)
    assert re.search(
        r"Spoken Text:\n<<world-text (\w{12}) from speech>>\n"
        r"Meet me at dusk.\n<<end world-text \1>>",
        user_text(turn),
    )
    assert names(turn) == profile_names(ToolProfile.EVENT_FOCUSED) + [
        "EchoToRoom",
        "shoutFromCrowd",
    ]


@pytest.mark.parametrize("model_available", [False, True])
async def test_pass_heartbeat_missing_api_key_does_not_execute_status_prog(
    sqlite_store: Store, model_available: bool
) -> None:
    world = InstrumentedWorld(SimWorld.harbour_town(clock=lambda: T0))
    async with make_rig(sqlite_store, world.inner, world) as rig:
        beating = replace(
            rig.storyteller,
            heartbeats=frozenset({Heartbeat.FIVE_MINUTES}),
            status_progs=((Heartbeat.FIVE_MINUTES, "AIStorytellerStatusFiveMinute"),),
        )
        rig.pipeline.router.update([beating], await world.zones())
        rig.pipeline.model_available = model_available
        queued = await rig.pipeline.heartbeat(beating.id or 0, Heartbeat.FIVE_MINUTES)
        assert queued is model_available
        await rig.pipeline.wait_idle()
    prog_runs = [call.args[0] for call in world.calls_to("execute_prog")]
    assert prog_runs == (["AIStorytellerStatusFiveMinute"] if model_available else [])
    assert bool(rig.model.requests) is model_available


@pytest.mark.parametrize("model_available", [False, True])
async def test_cell_on_room_echo_missing_api_key_does_not_parse_echo(
    sqlite_store: Store, model_available: bool
) -> None:
    world = InstrumentedWorld(SimWorld.harbour_town(clock=lambda: T0))
    async with make_rig(sqlite_store, world.inner, world) as rig:
        rig.pipeline.model_available = model_available
        await rig.handle(world.inner.emote(MAREN, "waves."))
    # Without a key the echo never becomes a prompt: no room look-up, no request.
    assert (world.count("room") > 0) is model_available
    assert bool(rig.model.requests) is model_available


# ---------------------------------------------------------------------- the fields


async def test_speech_prompt_fields_without_a_target(rig: Rig) -> None:
    await rig.handle(rig.world.say(PER, "Ropes are cheap today.", volume="Shout"))
    assert '"Dockhand Per" shout: "Ropes are cheap today."' in user_text(
        gate_requests(rig.model)[0]
    )
    lines = user_text(turn_requests(rig.model)[0]).split("\n")
    start = lines.index("A character has spoken in a room you watch.")
    assert lines[start : start + 8] == [
        "A character has spoken in a room you watch.",
        "Location: Harbour Quay [#101]",
        'Speaker: "Dockhand Per" [#2003]',
        'Language: "Common"',
        'Accent: "a clipped harbour accent"',
        "Volume: Shout",
        "Spoken Text:",
        lines[start + 7],
    ]
    assert lines[start + 7].startswith("<<world-text ") and lines[start + 7].endswith(" speech>>")
    assert lines[start + 8] == "Ropes are cheap today."
    assert not any(line.startswith("Target:") for line in lines)


async def test_crime_prompt_fields_with_a_third_party_and_no_victim(rig: Rig) -> None:
    crime = Crime(
        cursor=Cursor("x", 1),
        cell_id=WAREHOUSE_LANE,
        zone_id=1,
        occurred_at=T0,
        crime_id=1234567,
        crime_type="DestructionOfProperty",
        legal_authority="Harbour Ward Watch",
        criminal_id=WREN,
        third_party="item #88123",
        witness_count=12345,
    )
    await rig.handle(crime)
    text = user_text(turn_requests(rig.model)[0])
    event = text[text.index("A character has committed") : text.index("\n\nAttention reason")]
    event = event.split("\n")
    assert event == [
        "A character has committed a crime in a room you watch.",
        "Location: Warehouse Lane [#106]",
        "Crime Id: 1234567",
        "Crime Type: Destruction Of Property",
        'Legal Authority: "Harbour Ward Watch"',
        'Criminal: "Wren the cutpurse" [#2004]',
        'Criminal Description: "a slight, sharp-eyed girl in an oversized coat"',
        'Third Party: "item #88123"',
        "Witness Count: 12345",
        "Real-Time Stamp (UTC): 2026-03-01T12:00:00+00:00",
    ]


# ---------------------------------------------------------------------- tool guidance

_CAMEL_CASE = re.compile(r"\b[A-Z][a-z]+(?:[A-Z][a-z]+)+\b")
_KNOWN_TOOLS = (
    *FULL_PROFILE_TOOLS,
    "BypassAttention",
    "EndBypassAttention",
    ECHO_TOOL.name,
    SHOUT_TOOL.name,
)


def tool_names_in(text: str) -> set[str]:
    """Names in `text` that look like tools: known tool names and CamelCase words."""
    known = {name for name in _KNOWN_TOOLS if re.search(rf"\b{name}\b", text)}
    return known | set(_CAMEL_CASE.findall(text))


async def test_prompts_name_only_tools_the_request_offers(rig: Rig) -> None:
    events: list[Callable[[], WorldEvent]] = [
        lambda: rig.world.emote(MAREN, "waves."),
        lambda: rig.world.say(MAREN, "Hello."),
        lambda: rig.world.commit_crime(WREN, "Theft", victim_id=MAREN),
        lambda: rig.world.change_state(OSRIC, CharacterState.DEAD),
    ]
    checked, mentioned = 0, set()
    for make in events:
        await rig.handle(make())
        for request in rig.model.requests:  # the gate's requests offer no tool at all
            offered = set(names(request))
            text = (request.instructions or "") + "\n" + user_text(request)
            assert tool_names_in(text) <= offered, text
            mentioned |= tool_names_in(text)
            checked += 1
    assert checked == 2 * len(events) - 1  # a state change has no gate request
    # The check sees tool names: the event-focused guidance names Noop, which is on offer.
    assert mentioned == {"Noop"}
    assert tool_names_in("call BypassAttention or ShowLandmark") == {
        "BypassAttention",
        "ShowLandmark",
    }


# ---------------------------------------------------------------------- markup (§9.20)

RAW_FRAGMENTS = (
    "\x1b",
    "\x03",
    "\x04",
    "<send",
    "</send>",
    "<b>",
    "#`",
    "#2Maren",
    "Maren#0",
    "#1dusk",
    "#eQuay",
    "#9Cutpurse",
    "#3Assault",
)


def colourful_world() -> SimWorld:
    rooms = tuple(
        replace(room, name="\x1b[1;33mHarbour #eQuay#0\x1b[0m") if room.id == QUAY else room
        for room in HARBOUR_TOWN_MAP.rooms
    )
    people = []
    for sheet in HARBOUR_TOWN_PEOPLE:
        if sheet.id == MAREN:
            sheet = replace(
                sheet,
                name="<send href='look maren'>#2Maren#0 Tidewell</send>",
                short_description=(
                    "a #`200;120;40;weather-tanned\x1b[0m woman with salt-stiff braids"
                ),
                accent="a \x03b\x04clipped\x03/b\x04 harbour accent",
            )
        elif sheet.id == WREN:
            sheet = replace(sheet, name="Wren the #9Cutpurse#0")
        people.append(sheet)
    return SimWorld(
        replace(HARBOUR_TOWN_MAP, rooms=rooms),
        people,
        HARBOUR_TOWN_PROGS,
        clock=lambda: T0,
    )


async def test_no_markup_reaches_the_model(sqlite_store: Store) -> None:
    sent: list[ModelRequest] = []
    async with make_rig(sqlite_store, colourful_world()) as rig:
        world = rig.world
        steps: list[Callable[[], WorldEvent]] = [
            lambda: world.say(MAREN, "An \x1b[31mearlier\x1b[0m <b>word</b>.", target_id=PER),
            lambda: world.emote(MAREN, "\x1b[31mspits\x1b[0m into the <b>harbour</b>."),
            lambda: world.say(MAREN, "\x03send href='x'\x04Meet\x03/send\x04 me at #1dusk#0."),
            lambda: world.commit_crime(WREN, "#3AssaultWithWeapon#0", victim_id=MAREN),
            lambda: world.say(PER, "Later."),  # the earlier lines come back as speech context
        ]
        for make in steps:
            await rig.handle(make())
            sent += rig.model.requests
    texts = [body(request) for request in sent]
    assert len(sent) == 10  # a gate request and a turn request per step
    joined = "\n".join(texts)
    for fragment in RAW_FRAGMENTS:
        assert fragment not in joined, repr(fragment)
    # What the markup wrapped does reach the model.
    for plain in (
        "Harbour Quay",
        "Maren Tidewell",
        "a weather-tanned woman with salt-stiff braids",
        "a clipped harbour accent",
        "spits into the harbour.",
        "Meet me at dusk.",
        "Wren the Cutpurse",
        "Assault With Weapon",
        "An earlier word.",
    ):
        assert plain in joined, plain
    assert any("Recent Speech Context" in t for t in texts)
