"""Driving the sim world: each action's event, and the lines each character receives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState, Crime, Cursor, RoomEcho, Speech, StateChange
from world_adapter.sim import SimWorld

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
MAREN, OSRIC, ILSA, HOLT, AGNA, PER, WREN = 1001, 1002, 1003, 2001, 2002, 2003, 2004


@pytest.fixture
def world() -> SimWorld:
    return SimWorld.harbour_town(clock=lambda: NOW)


def test_emote_echoes_to_everyone_in_the_room(world: SimWorld) -> None:
    event = world.emote(MAREN, "waves at the boats.")
    assert event == RoomEcho(
        cursor=Cursor("sim-1", 1),
        cell_id=101,
        zone_id=1,
        occurred_at=NOW,
        origin="world",
        text="Maren Tidewell waves at the boats.",
        source_character_id=MAREN,
    )
    assert world.output_of(MAREN) == ["Maren Tidewell waves at the boats."]
    assert world.output_of(PER) == ["Maren Tidewell waves at the boats."]
    assert world.output_of(OSRIC) == []
    assert world.cursor == Cursor("sim-1", 1)


def test_cursors_count_up_from_one(world: SimWorld) -> None:
    assert world.cursor == Cursor("sim-1", 0)
    seqs = [world.emote(PER, f"counts {n}.").cursor.seq for n in range(3)]
    assert seqs == [1, 2, 3]


def test_emote_refuses_blank_text_unknown_and_offline_characters(world: SimWorld) -> None:
    with pytest.raises(WorldCommandError, match="Emote text must not be blank"):
        world.emote(MAREN, "  ")
    with pytest.raises(WorldCommandError, match="No character with id 9 exists"):
        world.emote(9, "waves.")
    world.set_online(MAREN, False)
    with pytest.raises(WorldCommandError, match=r"Maren Tidewell \(#1001\) is not online"):
        world.emote(MAREN, "waves.")
    assert world.cursor.seq == 0


def test_say_records_speech_and_everyone_hears(world: SimWorld) -> None:
    event = world.say(MAREN, "  Tide's turning.  ", target_id=PER, language="Coastal Cant")
    assert isinstance(event, Speech)
    assert (event.speaker_id, event.speaker_name, event.text) == (
        MAREN,
        "Maren Tidewell",
        "Tide's turning.",
    )
    assert (event.language, event.volume, event.cell_id, event.zone_id) == (
        "Coastal Cant",
        "Normal",
        101,
        1,
    )
    assert event.accent == "a clipped harbour accent"
    assert (event.target_id, event.target_kind) == (PER, "character")
    assert event.target_description == "a rangy young dockhand with rope-burned palms"
    assert world.output_of(MAREN) == ['You say to Dockhand Per in Coastal Cant, "Tide\'s turning."']
    assert world.output_of(PER) == [
        'Maren Tidewell says to Dockhand Per in Coastal Cant, "Tide\'s turning."'
    ]


def test_shouting_without_a_target(world: SimWorld) -> None:
    event = world.say(OSRIC, "Another round!", volume="shout")
    assert event.volume == "Shout" and event.target_id is None and event.target_kind is None
    assert world.output_of(OSRIC) == ['You shout, "Another round!"']


def test_only_the_target_hears_a_whisper(world: SimWorld) -> None:
    world.move(WREN, 101)
    world.say(MAREN, "Watch the girl.", target_id=PER, volume="Whisper")
    assert world.output_of(PER)[-1] == 'Maren Tidewell whispers to Dockhand Per, "Watch the girl."'
    assert world.output_of(WREN)[-1] == "Maren Tidewell whispers something to Dockhand Per."


@pytest.mark.parametrize(
    ("volume", "target_id", "message"),
    [
        ("Bellow", None, "Unknown speech volume 'Bellow'. Known volumes: Whisper, Quiet"),
        ("Whisper", None, "A whisper needs a target character"),
        ("Normal", OSRIC, "Osric Vell is not in the same room as Maren Tidewell"),
        ("Normal", 5, "No character with id 5 exists"),
    ],
)
def test_say_refuses_bad_input(
    world: SimWorld, volume: str, target_id: int | None, message: str
) -> None:
    with pytest.raises(WorldCommandError, match=message):
        world.say(MAREN, "Hello.", target_id=target_id, volume=volume)
    assert world.output_of(MAREN) == [] and world.cursor.seq == 0


def test_crimes_take_the_zone_authority_and_number_themselves(world: SimWorld) -> None:
    theft = world.commit_crime(WREN, "Theft", victim_id=MAREN, witnesses=2)
    assert theft == Crime(
        cursor=Cursor("sim-1", 1),
        cell_id=106,
        zone_id=1,
        occurred_at=NOW,
        crime_id=1,
        crime_type="Theft",
        legal_authority="Harbour Ward Watch",
        criminal_id=WREN,
        victim_id=MAREN,
        witness_count=2,
    )
    assault = world.commit_crime(ILSA, "Assault", witnesses=0)
    assert (assault.crime_id, assault.legal_authority, assault.cell_id) == (
        2,
        "Old Town Watch",
        202,
    )
    assert world.output_of(MAREN) == [] and world.output_of(ILSA) == []
    assert world.recent_crimes() == [theft, assault]


@pytest.mark.parametrize(
    ("crime_type", "kwargs", "message"),
    [
        (" ", {}, "Crime type must not be blank"),
        ("Theft", {"witnesses": -1}, "Witness count must not be negative, not -1"),
        ("Theft", {"victim_id": 77}, "No character with id 77 exists"),
    ],
)
def test_crimes_refuse_bad_input(
    world: SimWorld, crime_type: str, kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(WorldCommandError, match=message):
        world.commit_crime(WREN, crime_type, **kwargs)


def test_state_changes_are_seen_and_recorded(world: SimWorld) -> None:
    event = world.change_state(OSRIC, CharacterState.PASS_OUT)
    assert event == StateChange(
        cursor=Cursor("sim-1", 1),
        cell_id=103,
        zone_id=1,
        occurred_at=NOW,
        character_id=OSRIC,
        state=CharacterState.PASS_OUT,
    )
    assert world.output_of(OSRIC) == ["Osric Vell slumps over and passes out."]
    assert world.status(OSRIC).state is CharacterState.PASS_OUT
    echo = world.recover(OSRIC)
    assert echo.text == "Osric Vell stirs and comes round." and echo.cell_id == 103
    assert world.status(OSRIC).state is None
    with pytest.raises(WorldCommandError, match="Osric Vell is already conscious"):
        world.recover(OSRIC)


def test_the_dead_stay_dead(world: SimWorld) -> None:
    world.change_state(PER, CharacterState.DEAD)
    assert world.output_of(MAREN) == ["Dockhand Per dies."]
    with pytest.raises(WorldCommandError, match="Dockhand Per is already dead"):
        world.change_state(PER, CharacterState.UNCONSCIOUS)
    with pytest.raises(WorldCommandError, match="dead and cannot recover"):
        world.recover(PER)


def test_moving_through_an_exit_names_the_direction(world: SimWorld) -> None:
    departure, arrival = world.move(MAREN, 102)
    assert (departure.cell_id, departure.text) == (101, "Maren Tidewell leaves to the east.")
    assert (arrival.cell_id, arrival.text) == (102, "Maren Tidewell arrives from the west.")
    assert departure.origin == arrival.origin == "world"
    assert [departure.cursor.seq, arrival.cursor.seq] == [1, 2]
    assert world.output_of(PER) == ["Maren Tidewell leaves to the east."]
    assert world.output_of(AGNA) == ["Maren Tidewell arrives from the west."]
    assert world.output_of(MAREN) == ["You arrive at Fish Market."]
    assert world.status(MAREN).location_id == 102


def test_moving_through_a_door_and_between_distant_rooms(world: SimWorld) -> None:
    _, arrival = world.move(AGNA, 103)
    assert arrival.text == "Fishwife Agna arrives through a salt-warped tavern door."
    departure, arrival = world.move(AGNA, 205)
    assert (departure.text, arrival.text) == ("Fishwife Agna leaves.", "Fishwife Agna arrives.")
    assert arrival.zone_id == 2
    assert world.output_of(OSRIC) == [
        "Fishwife Agna arrives through a salt-warped tavern door.",
        "Fishwife Agna leaves.",
    ]


def test_move_refuses_unknown_rooms_and_staying_put(world: SimWorld) -> None:
    with pytest.raises(WorldCommandError, match="No room with id 999 exists"):
        world.move(MAREN, 999)
    with pytest.raises(WorldCommandError, match="Maren Tidewell is already in Harbour Quay"):
        world.move(MAREN, 101)


async def test_offline_characters_leave_the_game_but_keep_their_place(world: SimWorld) -> None:
    world.set_online(OSRIC, False)
    assert [p.id for p in await world.online_players()] == [MAREN, ILSA]
    room = await world.room(103)
    assert room is not None and room.occupant_ids == ()
    info = await world.character(OSRIC)
    assert info is not None and info.location_id == 103
    world.set_online(OSRIC, True)
    world.say(OSRIC, "I'm back.")
    assert world.cursor.seq == 1


async def test_queries_describe_players_npcs_and_rooms(world: SimWorld) -> None:
    players = await world.online_players()
    assert [(p.id, p.name, p.location_id, p.location_name) for p in players] == [
        (MAREN, "Maren Tidewell", 101, "Harbour Quay"),
        (OSRIC, "Osric Vell", 103, "The Drowned Lantern"),
        (ILSA, "Ilsa Brand", 202, "Temple Square"),
    ]
    holt = await world.character(HOLT)
    assert holt is not None
    assert (holt.name, holt.is_player, holt.location_id, holt.location_name) == (
        "Watch Sergeant Holt",
        False,
        203,
        "Watch House",
    )
    assert holt.age == 52 and holt.age_category == "Adult" and holt.gender == "Male"
    assert await world.character(4242) is None
    quay = await world.room(101)
    assert quay is not None
    assert (quay.name, quay.zone_id, quay.occupant_ids) == ("Harbour Quay", 1, (MAREN, PER))
    assert quay.description.startswith("Broad, tar-blackened planks")
    assert await world.room(4242) is None


async def test_zone_membership_can_change(world: SimWorld) -> None:
    world.add_zone_cell(1, 201)
    zones = await world.zones()
    assert 201 in zones[1] and 201 not in zones[2]
    room = await world.room(201)
    assert room is not None and room.zone_id == 1
    world.move(WREN, 201)
    assert world.commit_crime(WREN, "Loitering").legal_authority == "Harbour Ward Watch"
    with pytest.raises(WorldCommandError, match="No zone with id 3 exists"):
        world.add_zone_cell(3, 201)
    with pytest.raises(WorldCommandError, match="No room with id 301 exists"):
        world.add_zone_cell(1, 301)


def test_output_of_is_a_copy_and_checks_the_id(world: SimWorld) -> None:
    world.output_of(MAREN).append("forged")
    assert world.output_of(MAREN) == []
    with pytest.raises(WorldCommandError, match="No character with id 3 exists"):
        world.output_of(3)


def test_events_are_stamped_by_the_injected_clock() -> None:
    times = iter([datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)])
    world = SimWorld.harbour_town(clock=lambda: next(times))
    assert world.emote(PER, "yawns.").occurred_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert world.emote(PER, "yawns.").occurred_at == datetime(2026, 1, 2, tzinfo=UTC)


def test_a_naive_clock_is_refused() -> None:
    world = SimWorld.harbour_town(clock=lambda: datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="without a timezone"):
        world.emote(PER, "yawns.")
    assert world.output_of(PER) == [] and world.cursor.seq == 0
