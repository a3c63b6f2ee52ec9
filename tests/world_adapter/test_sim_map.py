"""The harbour town's static data: geography, zones and people hold together."""

from __future__ import annotations

from dataclasses import replace

import pytest

from world_adapter.sim import SimWorld
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.map import Door, Exit, Landmark, Room, TownMap, Zone

EXPECTED_ROOMS = {
    101: "Harbour Quay",
    102: "Fish Market",
    103: "The Drowned Lantern",
    104: "Customs House",
    105: "Net-Menders' Row",
    106: "Warehouse Lane",
    107: "Lighthouse Steps",
    108: "Harbourmaster's Office",
    201: "Old Town Gate",
    202: "Temple Square",
    203: "Watch House",
    204: "Copper Street",
    205: "Guildhall",
}
EXPECTED_PEOPLE = {
    1001: ("Maren Tidewell", True, 101),
    1002: ("Osric Vell", True, 103),
    1003: ("Ilsa Brand", True, 202),
    2001: ("Watch Sergeant Holt", False, 203),
    2002: ("Fishwife Agna", False, 102),
    2003: ("Dockhand Per", False, 101),
    2004: ("Wren the cutpurse", False, 106),
    2005: ("Harbourmaster Coyle", False, 108),
}


def test_rooms_have_the_agreed_ids_names_and_descriptions() -> None:
    assert {r.id: r.name for r in HARBOUR_TOWN_MAP.rooms} == EXPECTED_ROOMS
    for room in HARBOUR_TOWN_MAP.rooms:
        assert len(room.description) > 100, room.name


async def test_zones_partition_the_rooms() -> None:
    world = SimWorld.harbour_town()
    zones = await world.zones()
    assert zones == {
        1: frozenset(range(101, 109)),
        2: frozenset(range(201, 206)),
    }
    assert {z.id: z.name for z in HARBOUR_TOWN_MAP.zones} == {1: "Harbour Ward", 2: "Old Town"}


def test_every_exit_leads_to_a_room_with_a_way_back() -> None:
    rooms = {r.id: r for r in HARBOUR_TOWN_MAP.rooms}
    for room in HARBOUR_TOWN_MAP.rooms:
        assert room.exits, room.name
        for exit_ in room.exits:
            target = rooms[exit_.destination_id]
            back = target.exit_to(room.id)
            assert back is not None, (room.id, exit_.command)
            assert back.door == exit_.door


def test_every_room_is_reachable_from_the_quay() -> None:
    rooms = {r.id: r for r in HARBOUR_TOWN_MAP.rooms}
    seen = {101}
    frontier = [101]
    while frontier:
        for exit_ in rooms[frontier.pop()].exits:
            if exit_.destination_id not in seen:
                seen.add(exit_.destination_id)
                frontier.append(exit_.destination_id)
    assert seen == set(rooms)


def test_warehouse_lane_joins_the_old_town_gate() -> None:
    lane = HARBOUR_TOWN_MAP.room(106)
    gate = HARBOUR_TOWN_MAP.room(201)
    assert lane is not None and gate is not None
    assert lane.exit_to(201) is not None and gate.exit_to(106) is not None


def test_exit_tokens_and_phrases() -> None:
    quay = HARBOUR_TOWN_MAP.room(101)
    assert quay is not None
    by_command = {e.command: e for e in quay.exits}
    assert by_command["north"].brief == "n"
    assert by_command["north"].departure_phrase() == "to the north"
    assert by_command["enter door"].brief == "enter door"
    assert by_command["enter door"].departure_phrase() == "through a heavy oak door"
    assert Exit("up", 1, id=1).departure_phrase() == "upwards"
    assert Exit("down", 1, id=1).arrival_phrase() == "from below"
    assert Exit("climb ladder", 1, id=1).departure_phrase() == "by way of 'climb ladder'"
    assert Exit("Climb Ladder", 1, id=1).brief == "climb ladder"
    assert Exit("northeast", 1, id=1).brief == "ne" and Exit("up", 1, id=1).brief == "u"


def test_people_have_the_agreed_ids_rooms_and_full_sheets() -> None:
    found = {p.id: (p.name, p.is_player, p.start_room_id) for p in HARBOUR_TOWN_PEOPLE}
    assert found == EXPECTED_PEOPLE
    for person in HARBOUR_TOWN_PEOPLE:
        for value in (
            person.gender,
            person.race,
            person.ethnicity,
            person.culture,
            person.age_category,
            person.birthday,
            person.short_description,
            person.full_description,
        ):
            assert value.strip(), person.name
        assert person.age > 0
        assert dict(person.profile).keys() == {"Reputation", "Faction"}


def _zone() -> tuple[Zone, ...]:
    return (Zone(1, "Z", "Z Watch"),)


@pytest.mark.parametrize(
    ("rooms", "message"),
    [
        (
            (Room(1, "A", 1, "a", (Exit("north", 9, id=1),)),),
            "leads to room 9, which does not exist",
        ),
        ((Room(1, "A", 1, "a", (Exit("north", 2, id=1),)), Room(2, "B", 1, "b")), "no way back"),
        ((Room(1, "A", 5, "a"),), "zone 5, which does not exist"),
        ((Room(1, "A", 1, "a"), Room(1, "B", 1, "b")), "Repeated room: 1"),
        (
            (
                Room(1, "A", 1, "a", (Exit("north", 2, id=1), Exit("north", 2, id=1))),
                Room(2, "B", 1, "b", (Exit("south", 1, id=1),)),
            ),
            "Repeated exit command in room 1: north",
        ),
        (
            (
                Room(1, "A", 1, "a", (Exit("north", 2, Door(1, "d"), id=1),)),
                Room(2, "B", 1, "b", (Exit("south", 1, id=1),)),
            ),
            "do not share the same door",
        ),
        (
            (
                Room(1, "A", 1, "a", (Exit("north", 2, id=1),)),
                Room(2, "B", 1, "b", (Exit("south", 1, id=2),)),
            ),
            "has id 1 but its way back has id 2",
        ),
        (
            (
                Room(1, "A", 1, "a", (Exit("north", 2, id=1), Exit("east", 3, id=1))),
                Room(2, "B", 1, "b", (Exit("south", 1, id=1),)),
                Room(3, "C", 1, "c", (Exit("west", 1, id=1),)),
            ),
            "Exit id 1 is used by 4 exits instead of one pair",
        ),
        (
            (
                Room(1, "A", 1, "a", (Exit("north", 2, id=0),)),
                Room(2, "B", 1, "b", (Exit("south", 1, id=0),)),
            ),
            "Exit id 0 is used by 2 exits instead of one pair \\(exit ids are positive\\)",
        ),
        (
            (
                Room(1, "A", 1, "a", landmarks=(Landmark("The Well", ("Deep.",)),)),
                Room(2, "B", 1, "b", landmarks=(Landmark("the well", ("Dry.",)),)),
            ),
            "Repeated landmark name: the well",
        ),
    ],
)
def test_inconsistent_maps_are_refused(rooms: tuple[Room, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        TownMap(_zone(), rooms)


def test_a_door_used_by_more_than_one_pair_of_exits_is_refused() -> None:
    door = Door(1, "d")
    rooms = (
        Room(1, "A", 1, "a", (Exit("north", 2, door, id=1), Exit("east", 3, door, id=2))),
        Room(2, "B", 1, "b", (Exit("south", 1, door, id=1),)),
        Room(3, "C", 1, "c", (Exit("west", 1, door, id=2),)),
    )
    with pytest.raises(ValueError, match="Door 1 is used by 4 exits instead of 2"):
        TownMap(_zone(), rooms)


def test_people_in_unknown_rooms_or_with_repeated_ids_are_refused() -> None:
    sheet = HARBOUR_TOWN_PEOPLE[0]
    lost = replace(sheet, start_room_id=999)
    with pytest.raises(ValueError, match="starts in room 999, which does not exist"):
        SimWorld(HARBOUR_TOWN_MAP, [lost], [])
    with pytest.raises(ValueError, match="Character id 1001 is used twice"):
        SimWorld(HARBOUR_TOWN_MAP, [sheet, sheet], [])


def test_blank_names_and_negative_ages_are_refused() -> None:
    sheet = HARBOUR_TOWN_PEOPLE[0]
    with pytest.raises(ValueError, match="has no name"):
        replace(sheet, name=" ")
    with pytest.raises(ValueError, match="negative age"):
        replace(sheet, age=-1)


def test_doors_landmarks_and_exit_ids_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="cannot start locked while open"):
        Door(9, "a gate", locked=True)
    with pytest.raises(ValueError, match="needs at least one description"):
        Landmark("The Well", ())
    with pytest.raises(ValueError, match="needs a name"):
        Landmark(" ", ("Deep.",))


def test_exit_ids_name_both_sides_of_each_exit() -> None:
    passages = HARBOUR_TOWN_MAP.passages
    assert sorted(passages) == list(range(11, 23))
    guildhall = passages[22]
    assert (guildhall.near.id, guildhall.exit.command, guildhall.far.id) == (
        204,
        "enter door",
        205,
    )
    assert guildhall.name == "Copper Street - Guildhall"
    for room in HARBOUR_TOWN_MAP.rooms:
        for exit_ in room.exits:
            ends = {passages[exit_.id].near.id, passages[exit_.id].far.id}
            assert ends == {room.id, exit_.destination_id}


def test_landmarks_are_listed_with_their_rooms_in_map_order() -> None:
    found = [(room.id, lm.name) for room, lm in HARBOUR_TOWN_MAP.landmarks]
    assert found == [
        (103, "the Drowned Lantern"),
        (107, "the harbour lighthouse"),
        (201, "the Old Town Gate"),
        (202, "the Temple of the Tides"),
    ]
