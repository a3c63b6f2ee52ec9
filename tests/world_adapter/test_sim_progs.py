"""The sim world's progs: catalogue, effects, argument checks and idempotency."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from storyteller_daemon.testing import FakeClock
from world_adapter.errors import WorldCommandError
from world_adapter.events import Cursor, RoomEcho
from world_adapter.sim import SimWorld
from world_adapter.sim.arguments import bind_arguments
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.progs import HARBOUR_TOWN_PROGS, SimProg

MAREN, OSRIC, ILSA, HOLT, AGNA, PER, WREN = 1001, 1002, 1003, 2001, 2002, 2003, 2004
INSPECTED = [
    "Shard", "Zone", "Gender", "Race", "Culture", "Trait", "Clan", "Ethnicity", "ClanRank",
    "ClanAppointment", "ClanPaygrade", "Currency", "Exit", "DateTime", "TimeSpan", "Language",
    "Accent", "Merit", "MudDateTime", "Calendar", "Clock", "Knowledge", "Role", "Drug", "Shop",
]  # fmt: skip
START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def world(clock: FakeClock) -> SimWorld:
    return SimWorld.harbour_town(clock=clock.now)


async def _run(world: SimWorld, prog: str, key: str = "k", **arguments: Any) -> Any:
    return (await world.execute_prog(prog, arguments, key)).value


async def test_the_catalogue_has_the_agreed_signatures(world: SimWorld) -> None:
    found = {
        p.id: (
            p.name,
            [(q.name, q.type.describe()) for q in p.parameters],
            p.return_type.describe(),
        )
        for p in await world.progs()
    }
    assert found == {
        1: ("AIStorytellerStatusFiveMinute", [], "Text"),
        2: ("AIStorytellerStatusHourly", [], "Text"),
        3: ("AIStorytellerToolRecordCue", [("Cue", "Text")], "Text"),
        10: ("HarbourWatchStatus", [], "Text"),
        11: ("EchoToRoom", [("Room", "Location"), ("Text", "Text")], "Boolean"),
        12: ("CrowdShout", [("Room", "Location"), ("Text", "Text")], "Boolean"),
        13: ("DispatchWatchman", [("Room", "Location"), ("Reason", "Text")], "Text"),
        14: ("WhisperToCharacter", [("Character", "Character"), ("Text", "Text")], "Boolean"),
        15: ("HarbourPlayerProfile", [("Character", "Character")], "Dictionary"),
        16: ("BrokenProg", [("Text", "Text")], "Text"),
        20: ("InspectReferences", [(t, t) for t in INSPECTED], "Dictionary"),
        21: ("FormOfAddress", [("Gender", "Gender")], "Text"),
        22: ("InspectOutfit", [("Outfit", "Outfit")], "Dictionary"),
        23: ("InspectOutfitItem", [("OutfitItem", "OutfitItem")], "Dictionary"),
        24: ("InspectEffect", [("Effect", "Effect")], "Dictionary"),
        25: ("EchoToRooms", [("Rooms", "Collection<Location>"), ("Text", "Text")], "Number"),
        26: (
            "InspectThings",
            [
                ("Character", "Character"),
                ("Location", "Location"),
                ("Item", "Item"),
                ("Exit", "Exit"),
            ],
            "Dictionary",
        ),
        27: (
            "InspectValues",
            [
                ("Text", "Text"),
                ("Number", "Number"),
                ("Boolean", "Boolean"),
                ("Characters", "Collection<Character>"),
                ("Items", "Collection<Item>"),
            ],
            "Dictionary",
        ),
    }
    assert [p.compile_error for p in await world.progs() if p.compile_error] == [
        "Unknown variable @foo on line 2"
    ]


async def test_heartbeat_and_cue_progs_return_their_texts(world: SimWorld) -> None:
    assert await _run(world, "1", "a") == "Five-minute heartbeat check complete."
    assert await _run(world, "aistorytellerstatushourly", "b") == (
        "Hourly heartbeat check complete. Consider reviewing unresolved situations."
    )
    outcome = await world.execute_prog("3", {"cue": "The tide brings a stranger."}, "c")
    assert outcome.prog == "AIStorytellerToolRecordCue" and outcome.return_type == "Text"
    assert outcome.value == "Narrative cue captured: The tide brings a stranger."


async def test_watch_status_lists_ward_players_and_last_hour_crimes(
    world: SimWorld, clock: FakeClock
) -> None:
    world.commit_crime(WREN, "Theft", victim_id=PER)
    clock.set_now(START + timedelta(minutes=30))
    world.move(WREN, 101)
    world.commit_crime(WREN, "Theft", victim_id=MAREN)
    world.commit_crime(WREN, "Theft", victim_id=PER)
    world.commit_crime(ILSA, "Vandalism")  # Old Town: not the ward's business
    clock.set_now(START + timedelta(minutes=70))
    assert await _run(world, "HarbourWatchStatus", "a") == (
        "Harbour Ward: 2 player(s) online: Maren Tidewell at Harbour Quay; Osric Vell at "
        "The Drowned Lantern. Crimes in the last hour: 2 (Theft at Harbour Quay x2)."
    )
    world.set_online(MAREN, False)
    world.set_online(OSRIC, False)
    clock.set_now(START + timedelta(hours=3))
    assert await _run(world, "HarbourWatchStatus", "b") == (
        "Harbour Ward: no players online. Crimes in the last hour: none."
    )


async def test_echo_to_room_reaches_everyone_there_as_a_prog_event(world: SimWorld) -> None:
    outcome = await world.execute_prog("EchoToRoom", {"Room": 101, "Text": "A gull screams."}, "k")
    assert (outcome.value, outcome.return_type) == (True, "Boolean")
    assert world.output_of(MAREN) == ["A gull screams."]
    assert world.output_of(PER) == ["A gull screams."]
    assert world.output_of(OSRIC) == []
    event = await anext(world.subscribe(frozenset({101}), Cursor("sim-1", 0)))
    assert isinstance(event, RoomEcho)
    assert (event.origin, event.text, event.source_character_id) == (
        "prog",
        "A gull screams.",
        None,
    )


async def test_crowd_shout(world: SimWorld) -> None:
    assert await _run(world, "12", Room=103, Text="Thief!") is True
    line = 'A voice from the crowd shouts, "Thief!"'
    assert world.output_of(OSRIC) == [line]
    assert world.cursor.seq == 1


async def test_dispatching_the_watchman_moves_holt(world: SimWorld) -> None:
    message = await _run(world, "DispatchWatchman", Room=102, Reason="a brawl at the stalls")
    assert message == (
        "Watch Sergeant Holt has been dispatched to Fish Market and has arrived. "
        "Reason: a brawl at the stalls"
    )
    assert world.status(HOLT).location_id == 102
    assert world.output_of(AGNA) == ["Watch Sergeant Holt arrives."]
    assert world.output_of(HOLT) == ["You arrive at Fish Market."]
    departure = await anext(world.subscribe(frozenset({203}), Cursor("sim-1", 0)))
    assert isinstance(departure, RoomEcho)
    assert (departure.origin, departure.text) == ("prog", "Watch Sergeant Holt leaves.")


async def test_dispatching_holt_where_he_is_or_when_he_cannot_go(world: SimWorld) -> None:
    assert await _run(world, "13", "a", Room=203, Reason="paperwork") == (
        "Watch Sergeant Holt is already at Watch House, looking into: paperwork"
    )
    world.set_online(HOLT, False)
    assert await _run(world, "13", "b", Room=101, Reason="a theft") == (
        "Watch Sergeant Holt cannot be dispatched: he is in no state to respond."
    )
    assert world.cursor.seq == 0 and world.status(HOLT).location_id == 203


async def test_whisper_reaches_only_its_character(world: SimWorld) -> None:
    assert await _run(world, "WhisperToCharacter", "a", Character=MAREN, Text="Psst.") is True
    assert world.output_of(MAREN) == ["Psst."]
    assert world.output_of(PER) == []
    assert world.cursor.seq == 0
    world.set_online(ILSA, False)
    assert await _run(world, "WhisperToCharacter", "b", Character=ILSA, Text="Psst.") is False
    assert world.output_of(ILSA) == []


async def test_player_profile_is_a_dictionary(world: SimWorld) -> None:
    outcome = await world.execute_prog("15", {"Character": WREN}, "k")
    assert outcome.return_type == "Dictionary"
    assert outcome.value == {"Reputation": "Wanted for petty theft", "Faction": "Lane Rats"}


@pytest.mark.parametrize(
    ("prog", "arguments", "message"),
    [
        ("NoSuchProg", {}, "No prog with id or name 'NoSuchProg' exists."),
        ("99", {}, "No prog with id or name '99' exists."),
        ("BrokenProg", {"Text": "x"}, "Prog BrokenProg does not compile: Unknown variable @foo"),
        ("EchoToRoom", {"Room": 101}, "needs the argument 'Text' \\(Text\\)"),
        ("EchoToRoom", {"Room": 999, "Text": "x"}, "No room with id 999 exists."),
        ("EchoToRoom", {"Room": "101", "Text": "x"}, "'Room' must be a room id \\(an integer\\)"),
        ("EchoToRoom", {"Room": True, "Text": "x"}, "'Room' must be a room id"),
        ("EchoToRoom", {"Room": 101, "Text": 5}, "'Text' must be text, not 5"),
        ("EchoToRoom", {"Room": 101, "Text": "  "}, "'Text' must not be blank"),
        ("EchoToRoom", {"Room": 101, "Text": "x", "Loud": 1}, "no parameter named 'Loud'"),
        ("EchoToRoom", {"Room": 101, "room": 102, "Text": "x"}, "'room' is given twice"),
        ("14", {"Character": 4242, "Text": "x"}, "No character with id 4242 exists."),
        ("15", {"Character": 10.5}, "'Character' must be a character id"),
    ],
)
async def test_bad_calls_are_refused_with_a_clear_error(
    world: SimWorld, prog: str, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(WorldCommandError, match=message):
        await world.execute_prog(prog, arguments, "k")
    assert world.cursor.seq == 0 and world.output_of(MAREN) == []


async def test_a_blank_idempotency_key_is_refused(world: SimWorld) -> None:
    with pytest.raises(WorldCommandError, match="idempotency key must not be blank"):
        await world.execute_prog("1", {}, " ")


async def test_a_repeated_key_replays_the_outcome_without_running_again(world: SimWorld) -> None:
    first = await world.execute_prog("CrowdShout", {"Room": 101, "Text": "Fire!"}, "turn-7:1")
    again = await world.execute_prog("CrowdShout", {"Room": 101, "Text": "Fire!"}, "turn-7:1")
    assert (first.replayed, again.replayed) == (False, True)
    assert (again.prog, again.return_type, again.value) == (first.prog, first.return_type, True)
    assert world.output_of(MAREN) == ['A voice from the crowd shouts, "Fire!"']
    assert world.cursor.seq == 1
    await world.execute_prog("CrowdShout", {"Room": 101, "Text": "Fire!"}, "turn-7:2")
    assert len(world.output_of(MAREN)) == 2


async def test_failed_runs_are_not_remembered(world: SimWorld) -> None:
    with pytest.raises(WorldCommandError):
        await world.execute_prog("EchoToRoom", {"Room": 999, "Text": "x"}, "retry")
    outcome = await world.execute_prog("EchoToRoom", {"Room": 101, "Text": "x"}, "retry")
    assert outcome.replayed is False


async def test_the_idempotency_store_forgets_the_oldest_keys() -> None:
    world = SimWorld(
        HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, HARBOUR_TOWN_PROGS, remembered_prog_calls=2
    )
    for key in ("a", "b", "c"):
        await world.execute_prog("CrowdShout", {"Room": 101, "Text": key}, key)
    assert (await world.execute_prog("CrowdShout", {"Room": 101, "Text": "c"}, "c")).replayed
    assert not (await world.execute_prog("CrowdShout", {"Room": 101, "Text": "a"}, "a")).replayed
    assert world.cursor.seq == 4


def test_catalogue_and_store_settings_are_checked() -> None:
    twice = (HARBOUR_TOWN_PROGS[0], HARBOUR_TOWN_PROGS[0])
    with pytest.raises(ValueError, match="Prog ids must be unique"):
        SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, twice)
    with pytest.raises(ValueError, match="remembered_prog_calls must be at least 1, not 0"):
        SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, (), remembered_prog_calls=0)
    broken = next(p.signature for p in HARBOUR_TOWN_PROGS if p.signature.compile_error)
    with pytest.raises(ValueError, match="must have a body exactly when it compiles"):
        SimProg(broken, lambda town, arguments: None)


@pytest.mark.parametrize("kind", [ProgType.DICTIONARY, ProgType.ANYTHING, ProgType.VOID])
def test_parameter_types_the_sim_cannot_bind_are_refused(world: SimWorld, kind: ProgType) -> None:
    signature = ProgSignature(
        id=50,
        name="CountCoins",
        parameters=(ProgParameter("Purse", ValueType(kind)),),
        return_type=ValueType(ProgType.TEXT),
    )
    with pytest.raises(WorldCommandError, match=f"type {kind.value} of 'Purse' is not supported"):
        bind_arguments(world, signature, {"purse": {}})
