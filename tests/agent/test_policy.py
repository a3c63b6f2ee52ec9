"""The policy point: each rule refuses what it must, names itself, and lets the rest through.

Turns run through the real tool loop with a scripted model that does what it is told, against
the sim world; a prog that ran shows as a new event in the world.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from agent_doubles import ScriptedModel, calls

from progs.types import ProgParameter, ProgType, ValueType
from storyteller_daemon.agent.effects import Effect, prog_effect
from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.policy_rules import kill_file_path
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig, PolicyConfig
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.sim import SimWorld

MAREN, WREN = 1001, 2004
QUAY, MARKET = 101, 102
SECRET = secrets.token_hex(16)  # made up per run: no key-shaped text in the source
ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip


@pytest.fixture
def teller(storyteller: Storyteller) -> Storyteller:
    return replace(storyteller, custom_tools=(ECHO,))


def echo_turn(world: SimWorld) -> Trigger:
    return Trigger.from_event(world.emote(MAREN, "shouts that the harbourmaster is a thief."))


def heartbeat() -> Trigger:
    return Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )


def echo(room: int, words: str = "A gull screams.") -> tuple[str, dict[str, Any]]:
    return ("EchoToRoom", {"Room": room, "Text": words})


async def turn(
    policy: Policy,
    teller: Storyteller,
    services: ToolContext,
    trigger: Trigger,
    *batches: tuple[str, dict[str, Any]],
    key: str = "turn-1",
) -> TurnRecord:
    model = ScriptedModel(*(calls(b) for b in batches), calls(("Noop", {})))
    loop = ToolLoop(model, LimitsConfig(), FakeClock(), policy=policy)
    return await loop.run(teller, trigger, "Something happened.", services, turn_key=key)


def policy(
    clock: FakeClock | None = None, kill_file: Path | None = None, **settings: Any
) -> Policy:
    return Policy(
        PolicyConfig(**settings),
        clock or FakeClock(),
        secrets=[SECRET, "short"],
        cells_of=lambda _: frozenset({QUAY, MARKET, 103}),
        kill_file=kill_file,
    )


def refusals(record: TurnRecord) -> list[str | None]:
    return [c.rule for c in record.calls if c.refused]


def test_the_effect_of_a_prog_call_comes_from_its_parameter_types() -> None:
    parameters = (
        ProgParameter("Room", ValueType(ProgType.LOCATION)),
        ProgParameter("Who", ValueType(ProgType.CHARACTER, collection=True)),
        ProgParameter("Text", ValueType(ProgType.TEXT)),
        ProgParameter("Count", ValueType(ProgType.NUMBER)),
    )
    effect = prog_effect(parameters, {"room": "101", "Who": [{"Id": 7}, 8], "Text": "hi"})
    assert effect == Effect(frozenset({101}), frozenset({7, 8}), ("hi",))
    bad = prog_effect(parameters, {"Room": "the quay", "Who": None, "Text": None})
    assert bad.rooms == {-1} and bad.characters == frozenset()


async def test_an_event_turn_acts_only_on_its_own_rooms(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    before = world.cursor.seq
    trigger = echo_turn(world)
    record = await turn(policy(), teller, services, trigger, echo(MARKET), echo(9999), echo(QUAY))
    assert refusals(record) == ["scope", "scope"]
    refused = record.calls[0].envelope
    assert refused["ok"] is False and "rule scope" in refused["error"]
    assert "room #102 is outside this turn's events" in refused["error"]
    assert record.calls[2].envelope["ok"] is True
    assert world.cursor.seq == before + 2  # the emote, and the one echo that ran


async def test_a_heartbeat_may_act_anywhere_it_watches_but_not_beyond(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    record = await turn(policy(), teller, services, heartbeat(), echo(MARKET), echo(9999))
    assert [c.envelope["ok"] for c in record.calls[:2]] == [True, False]
    assert record.calls[1].rule == "scope"


async def test_the_surveillance_scope_widens_event_turns(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    wide = policy(event_turn_scope="surveillance")
    record = await turn(wide, teller, services, echo_turn(world), echo(MARKET))
    assert record.calls[0].envelope["ok"] is True


async def test_caps_per_turn_per_target_and_per_hour(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    clock = FakeClock()
    strict = policy(clock, max_prog_calls_per_turn=2, max_prog_calls_per_hour=3)
    trigger = heartbeat()
    first = await turn(strict, teller, services, trigger, echo(QUAY), echo(QUAY, "Again."))
    assert refusals(first) == ["cooldown"]
    await clock.advance(601)
    second = await turn(
        strict, teller, services, trigger, echo(QUAY), echo(MARKET), echo(103), key="turn-2"
    )
    assert refusals(second) == ["turn_cap"]
    third = await turn(strict, teller, services, trigger, echo(103, "Later."), key="turn-3")
    assert refusals(third) == ["hourly_cap"]
    assert strict.stats.refused == {"cooldown": 1, "turn_cap": 1, "hourly_cap": 1}


async def test_the_kill_switch_stops_prog_calls_but_not_the_turn(
    teller: Storyteller, services: ToolContext, world: SimWorld, tmp_path: Path
) -> None:
    flag = tmp_path / "storyteller.kill"
    switched = policy(kill_file=flag)
    before = world.cursor.seq
    ok = await turn(switched, teller, services, heartbeat(), echo(QUAY))
    assert ok.calls[0].envelope["ok"] is True
    flag.touch()  # takes effect on the very next call
    record = await turn(switched, teller, services, heartbeat(), echo(MARKET), key="turn-2")
    assert refusals(record) == ["kill_switch"]
    assert world.cursor.seq == before + 1
    assert policy(kill_switch=True).killed


async def test_shadow_mode_records_what_would_run_and_runs_nothing(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    shadow = policy(shadow=[teller.name.upper()])
    before = world.cursor.seq
    record = await turn(shadow, teller, services, heartbeat(), echo(QUAY))
    [call] = record.calls[:1]
    assert call.shadowed and call.rule == "shadow" and not call.refused
    assert call.envelope["ok"] is True and call.envelope["result"]["simulated"] is True
    assert world.cursor.seq == before
    assert shadow.stats.shadowed == 1
    assert json.loads(call.arguments)["Room"] == QUAY  # what it would have done


async def test_no_argument_carries_a_secret_of_the_daemon(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    leak = ("CreateMemory", {"CharacterId": MAREN, "Title": "note", "Details": f"key {SECRET}"})
    guard = policy()
    record = await turn(guard, teller, services, heartbeat(), echo(QUAY, SECRET), leak)
    assert refusals(record) == ["secret", "secret"]
    assert guard.stats.refused == {"secret": 2}  # counted, so the refusal alert hears of them


async def test_long_text_is_refused(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    record = await turn(
        policy(max_text_chars=20), teller, services, heartbeat(), echo(QUAY, "x" * 21)
    )
    assert refusals(record) == ["text_cap"]


async def test_characters_must_be_named_by_the_events_or_be_in_their_rooms(
    services: ToolContext, storyteller: Storyteller, world: SimWorld
) -> None:
    whisper = CustomTool(
        "Whisper", "A whisper.", "WhisperToCharacter", False,
        (("Character", "Who hears it."), ("Text", "The words.")),
    )  # fmt: skip
    teller = replace(storyteller, custom_tools=(whisper,))
    elsewhere = next(c for c in (2001, 2002, 2003, 2004) if c not in world.occupants(QUAY))
    trigger = echo_turn(world)
    record = await turn(
        policy(),
        teller,
        services,
        trigger,
        ("Whisper", {"Character": elsewhere, "Text": "Psst."}),
        ("Whisper", {"Character": MAREN, "Text": "Psst."}),
    )
    assert refusals(record) == ["scope"]
    assert record.calls[1].envelope["ok"] is True


@pytest.mark.parametrize(
    ("kind", "offered"),
    [(TriggerKind.ROOM_ECHO, False), (TriggerKind.SPEECH, False), (TriggerKind.HEARTBEAT, True)],
)
async def test_destructive_tools_are_not_offered_on_turns_players_start(
    teller: Storyteller, services: ToolContext, world: SimWorld, kind: TriggerKind, offered: bool
) -> None:
    trigger = {
        TriggerKind.ROOM_ECHO: echo_turn(world),
        TriggerKind.SPEECH: Trigger.from_event(world.say(MAREN, "Forget all about me.")),
        TriggerKind.HEARTBEAT: heartbeat(),
    }[kind]
    record = await turn(policy(), teller, services, trigger, ("ForgetMemory", {"MemoryId": 1}))
    call = record.calls[0]
    assert call.refused is not offered
    if not offered:
        assert "destructive_by_trigger" in call.envelope["error"]
    allowed = policy(destructive_on_player_turns=True)
    record = await turn(allowed, teller, services, trigger, ("ForgetMemory", {"MemoryId": 1}))
    assert not record.calls[0].refused
    just_this_one = policy(destructive_on_player_turns=[teller.name.lower()])
    record = await turn(just_this_one, teller, services, trigger, ("ForgetMemory", {"MemoryId": 1}))
    assert not record.calls[0].refused
    others = policy(destructive_on_player_turns=["Someone Else"])
    record = await turn(others, teller, services, trigger, ("ForgetMemory", {"MemoryId": 1}))
    assert record.calls[0].refused is not offered


def test_the_kill_file_defaults_to_one_beside_a_sqlite_database(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'storyteller.db'}"
    assert kill_file_path(PolicyConfig(), url) == tmp_path / "storyteller.kill"
    assert kill_file_path(PolicyConfig(kill_file="/run/st.kill"), url) == Path("/run/st.kill")
    assert kill_file_path(PolicyConfig(), "postgresql+asyncpg://st@db/st") is None


async def test_one_player_sets_off_a_bounded_number_of_prog_calls(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    capped = policy(target_cooldown_seconds=0, max_prog_calls_per_player_per_hour=2)
    rules = []
    for n in range(3):
        record = await turn(capped, teller, services, echo_turn(world), echo(QUAY), key=f"t{n}")
        rules.append(record.calls[0].rule)
    assert rules == [None, None, "player_cap"]
    heartbeat_turn = await turn(capped, teller, services, heartbeat(), echo(QUAY), key="hb")
    assert heartbeat_turn.calls[0].envelope["ok"] is True  # no player started it


async def test_a_prog_text_may_not_carry_the_storytellers_instructions(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    secretive = replace(
        teller, system_prompt="You are the ward.\nNever reveal that Coyle is paid by the smugglers."
    )
    words = "The crier reads: never reveal that Coyle is paid by the smugglers!"
    record = await turn(policy(), secretive, services, heartbeat(), echo(QUAY, words))
    assert refusals(record) == ["instructions"]


async def test_built_ins_name_only_characters_in_scope_on_player_turns(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    elsewhere = next(c for c in (2001, 2002, 2004) if c not in world.occupants(QUAY))
    snoop = ("PlayerInformation", {"Id": elsewhere})
    plant = ("CreateMemory", {"Id": elsewhere, "Title": "thief", "Details": "stole a purse"})
    fine = ("CreateMemory", {"Id": MAREN, "Title": "loud", "Details": "shouted on the quay"})
    record = await turn(policy(), teller, services, echo_turn(world), snoop, plant, fine)
    assert refusals(record) == ["scope", "scope"]
    assert record.calls[2].envelope["ok"] is True
    record = await turn(policy(), teller, services, heartbeat(), snoop, key="hb")
    assert not record.calls[0].refused  # a heartbeat may look anywhere


async def test_markup_is_stripped_from_text_a_prog_shows_players(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    await turn(policy(), teller, services, heartbeat(), echo(QUAY, "\x1b[31mA red\x1b[0m sky."))
    assert "A red sky." in world.output_of(MAREN)


async def test_shadow_mode_and_scope_can_be_set_per_tool(
    storyteller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    crier = CustomTool(
        "Crier", "A town crier.", "EchoToRoom", False, (("Room", "Where."), ("Text", "What."))
    )
    teller = replace(storyteller, custom_tools=(ECHO, crier))
    per_tool = policy(shadow=["*/crier"], tool_scope={"Crier": "surveillance"})
    cry = ("Crier", {"Room": MARKET, "Text": "Hear ye!"})
    record = await turn(per_tool, teller, services, echo_turn(world), cry, echo(MARKET))
    crier_call, echo_call = record.calls[:2]
    assert crier_call.shadowed and crier_call.envelope["ok"] is True  # in scope, simulated
    assert echo_call.rule == "scope"  # the other tool keeps the event's rooms


async def test_a_tool_may_have_its_own_cooldown(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    clock = FakeClock()
    summons = policy(clock, tool_cooldown_seconds={"echotoroom": 1800})
    await turn(summons, teller, services, heartbeat(), echo(QUAY))
    await clock.advance(700)  # past the default ten minutes, not past this tool's thirty
    record = await turn(summons, teller, services, heartbeat(), echo(QUAY, "Again."), key="t2")
    assert refusals(record) == ["cooldown"]
    assert "once per 1800 s" in record.calls[0].envelope["error"]


async def test_one_storyteller_is_capped_per_hour_and_per_day(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    clock = FakeClock()
    capped = policy(
        clock,
        target_cooldown_seconds=0,
        max_prog_calls_per_storyteller_per_hour=2,
        max_prog_calls_per_storyteller_per_day=3,
    )
    rules = []
    for n in range(3):
        record = await turn(capped, teller, services, heartbeat(), echo(QUAY), key=f"a{n}")
        rules.append(record.calls[0].rule)
    assert rules == [None, None, "storyteller_cap"]
    assert "2 prog calls in the last hour" in record.calls[0].envelope["error"]
    await clock.advance(3600)
    record = await turn(capped, teller, services, heartbeat(), echo(QUAY), key="b1")
    assert record.calls[0].rule is None  # a new hour
    record = await turn(capped, teller, services, heartbeat(), echo(QUAY), key="b2")
    assert record.calls[0].rule == "storyteller_cap"
    assert "3 prog calls in the last day" in record.calls[0].envelope["error"]
    await clock.advance(86_400)
    record = await turn(capped, teller, services, heartbeat(), echo(QUAY), key="c1")
    assert record.calls[0].rule is None


async def test_event_turns_may_reach_rooms_a_set_number_of_exits_away(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    near = policy(event_turn_exits=1)  # the quay's neighbour, the market, is one exit east
    record = await turn(near, teller, services, echo_turn(world), echo(MARKET), echo(103))
    assert record.calls[0].envelope["ok"] is True
    assert refusals(record) == ["scope"]  # the tavern is two exits away
    assert "or 1 exits from them" in record.calls[1].envelope["error"]
    outside = policy(event_turn_exits=3)
    record = await turn(outside, teller, services, echo_turn(world), echo(105), key="t2")
    assert refusals(record) == ["scope"]  # one exit away, but not a room it watches


async def test_chat_mentions_are_taken_out_of_text_a_prog_shows_players(
    teller: Storyteller, services: ToolContext, world: SimWorld
) -> None:
    words = "@everyone @HERE and <@123>: the tide is out."
    await turn(policy(), teller, services, heartbeat(), echo(QUAY, words))
    assert "everyone HERE and <123>: the tide is out." in world.output_of(MAREN)
