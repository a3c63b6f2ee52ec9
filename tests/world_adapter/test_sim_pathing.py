"""Doors and paths in the sim world: door rules, keys, the traveller's ability, the 50-exit cap."""

from __future__ import annotations

import pytest

from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState
from world_adapter.facts import DoorRule, PathRule, RoomPath
from world_adapter.sim import SimWorld
from world_adapter.sim.map import Exit, Room, TownMap, Zone
from world_adapter.sim.pathing import DoorState
from world_adapter.sim.people import CharacterSheet

MAREN, ILSA, HOLT, COYLE = 1001, 1003, 2001, 2005
QUAY, CUSTOMS, LIGHTHOUSE, OFFICE, TEMPLE_SQUARE, WATCH_HOUSE, GUILDHALL = (
    101, 104, 107, 108, 202, 203, 205,
)  # fmt: skip


@pytest.fixture
def world() -> SimWorld:
    return SimWorld.harbour_town()


def test_doors_start_as_the_map_describes_them(world: SimWorld) -> None:
    assert world.door_state(1) == DoorState(closed=True, locked=True)
    assert world.door_state(2) == DoorState(closed=False, locked=False)
    assert world.door_state(3) == DoorState(closed=True, locked=False)
    assert world.door_state(4) == DoorState(closed=True, locked=True)
    world.set_door(4, closed=False)
    assert world.door_state(4) == DoorState(closed=False, locked=False)
    with pytest.raises(WorldCommandError, match="Door 4 cannot be locked while it is open"):
        world.set_door(4, closed=False, locked=True)
    with pytest.raises(WorldCommandError, match="No door with id 9 exists"):
        world.set_door(9, closed=True)


@pytest.mark.parametrize(
    ("origin", "destination", "rule", "directions"),
    [
        (QUAY, QUAY, PathRule(DoorRule.RESPECT_CLOSED), ()),
        (QUAY, GUILDHALL, PathRule(DoorRule.IGNORE), ("n", "n", "n", "e", "enter door")),
        (GUILDHALL, QUAY, PathRule(DoorRule.IGNORE), ("leave door", "w", "s", "s", "s")),
        (QUAY, GUILDHALL, PathRule(DoorRule.RESPECT_CLOSED), None),
        (QUAY, GUILDHALL, PathRule(DoorRule.INCLUDE_UNLOCKED), ("n", "n", "n", "e", "enter door")),
        (QUAY, CUSTOMS, PathRule(DoorRule.INCLUDE_UNLOCKED), None),
        (QUAY, CUSTOMS, PathRule(DoorRule.INCLUDE_FIREABLE), None),
        (TEMPLE_SQUARE, WATCH_HOUSE, PathRule(DoorRule.INCLUDE_FIREABLE), ("w",)),
        (QUAY, CUSTOMS, PathRule(DoorRule.INCLUDE_UNLOCKABLE, COYLE), ("enter door",)),
        (QUAY, CUSTOMS, PathRule(DoorRule.INCLUDE_UNLOCKABLE, MAREN), None),
        (QUAY, OFFICE, PathRule(DoorRule.INCLUDE_UNLOCKABLE, MAREN), ("e", "e", "enter door")),
        (WATCH_HOUSE, QUAY, PathRule(DoorRule.INCLUDE_UNLOCKABLE, HOLT), ("e", "s", "s", "s")),
        (WATCH_HOUSE, QUAY, PathRule(DoorRule.INCLUDE_UNLOCKABLE, ILSA), None),
    ],
)  # fmt: skip
async def test_paths_pass_the_doors_their_rule_allows(
    world: SimWorld,
    origin: int,
    destination: int,
    rule: PathRule,
    directions: tuple[str, ...] | None,
) -> None:
    found = await world.path(origin, destination, rule)
    assert found == RoomPath(origin, destination, directions or (), directions is not None)


async def test_a_character_who_cannot_move_has_no_path_when_it_must_cross(
    world: SimWorld,
) -> None:
    careful = PathRule(DoorRule.RESPECT_CLOSED, MAREN, character_must_cross=True)
    assert (await world.path(QUAY, LIGHTHOUSE, careful)).directions == ("e", "e")
    world.change_state(MAREN, CharacterState.PASS_OUT)
    assert (await world.path(QUAY, LIGHTHOUSE, careful)).found is False
    assert (await world.path(QUAY, QUAY, careful)).found is True
    keys_only = PathRule(DoorRule.RESPECT_CLOSED, MAREN)
    assert (await world.path(QUAY, LIGHTHOUSE, keys_only)).directions == ("e", "e")


def test_rules_that_need_a_character_refuse_to_go_without() -> None:
    with pytest.raises(ValueError, match="unlockable doors needs the character"):
        PathRule(DoorRule.INCLUDE_UNLOCKABLE)
    with pytest.raises(ValueError, match="must be able to cross needs that character"):
        PathRule(DoorRule.IGNORE, character_must_cross=True)


async def test_unknown_rooms_characters_and_negative_limits_are_refused(world: SimWorld) -> None:
    with pytest.raises(WorldCommandError, match="No room with id 999 exists"):
        await world.path(999, QUAY, PathRule(DoorRule.IGNORE))
    with pytest.raises(WorldCommandError, match="No room with id 998 exists"):
        await world.path(QUAY, 998, PathRule(DoorRule.IGNORE))
    with pytest.raises(WorldCommandError, match="No character with id 4242 exists"):
        await world.path(QUAY, CUSTOMS, PathRule(DoorRule.INCLUDE_UNLOCKABLE, 4242))
    with pytest.raises(WorldCommandError, match="max_exits must not be negative"):
        await world.path(QUAY, CUSTOMS, PathRule(DoorRule.IGNORE), max_exits=-1)


def _corridor(length: int) -> SimWorld:
    """Rooms 1..length in a line, each joined to the next by 'east'/'west' (exit id = room id)."""
    rooms = []
    for number in range(1, length + 1):
        exits = []
        if number > 1:
            exits.append(Exit("west", number - 1, id=number - 1))
        if number < length:
            exits.append(Exit("east", number + 1, id=number))
        rooms.append(Room(number, f"Corridor {number}", 1, "A bare corridor.", tuple(exits)))
    walker = CharacterSheet(
        id=1, name="Walker", gender="Male", race="Human", ethnicity="", culture="", age=30,
        age_category="Adult", birthday="", short_description="a walker", full_description="",
        is_player=True, start_room_id=1,
    )  # fmt: skip
    return SimWorld(TownMap((Zone(1, "Corridor", "None"),), tuple(rooms)), [walker], [])


async def test_paths_are_at_most_fifty_exits_long() -> None:
    world = _corridor(52)
    fifty = await world.path(1, 51, PathRule(DoorRule.IGNORE))
    assert fifty.found and fifty.directions == ("e",) * 50
    assert (await world.path(1, 52, PathRule(DoorRule.IGNORE))).found is False
    assert (await world.path(52, 3, PathRule(DoorRule.IGNORE))).directions == ("w",) * 49
    short = await world.path(1, 5, PathRule(DoorRule.IGNORE), max_exits=3)
    assert short == RoomPath(1, 5, (), False)
