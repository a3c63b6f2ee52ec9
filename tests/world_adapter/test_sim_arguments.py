"""How the sim world reads prog arguments: every shape `progs.convert` sends, and nothing else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from progs.convert import convert_argument
from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from world_adapter.errors import WorldCommandError
from world_adapter.sim import SimWorld
from world_adapter.sim.arguments import bind_arguments
from world_adapter.sim.belongings import Effect, OutfitPiece
from world_adapter.sim.framework import ClanMembership, FrameworkItem
from world_adapter.sim.map import Passage, Room, Zone
from world_adapter.sim.people import CharacterSheet
from world_adapter.sim.timekeeping import MudMoment

MAREN = 1001


@pytest.fixture
def world() -> SimWorld:
    return SimWorld.harbour_town()


def _bind(world: SimWorld, type_name: str, value: Any) -> Any:
    signature = ProgSignature(
        id=99,
        name="Probe",
        parameters=(ProgParameter("Value", ValueType.parse(type_name)),),
        return_type=ValueType(ProgType.TEXT),
    )
    return bind_arguments(world, signature, {"value": value})["Value"]


@pytest.mark.parametrize(
    ("type_name", "value", "expected"),
    [
        ("Boolean", False, False),
        ("Number", 2.5, 2.5),
        ("Number", 7, 7),
        ("Text", "", ""),
        ("Gender", "non-binary", "non-binary"),
        ("DateTime", "2026-02-11T12:34:56Z", datetime(2026, 2, 11, 12, 34, 56, tzinfo=UTC)),
        ("TimeSpan", "-1.02:03:04.5000000", -timedelta(days=1, hours=2, minutes=3, seconds=4.5)),
        ("TimeSpan", "00:01:30", timedelta(seconds=90)),
        ("MudDateTime", "never", None),
        ("Shop", None, None),
        ("Collection<Character>", [], []),
    ],
)
def test_value_shapes_bind_to_python_values(
    world: SimWorld, type_name: str, value: Any, expected: Any
) -> None:
    assert _bind(world, type_name, value) == expected


@pytest.mark.parametrize(
    ("type_name", "value", "kind", "identity"),
    [
        ("Character", MAREN, CharacterSheet, MAREN),
        ("Location", 202, Room, 202),
        ("Exit", 20, Passage, 20),
        ("Zone", {"name": "harbour"}, Zone, 1),
        ("Race", {"id": 2}, FrameworkItem, 2),
        ("Trait", "lock", FrameworkItem, 5),
        ("Accent", 2, FrameworkItem, 2),
        ("Knowledge", "knots and rigging", FrameworkItem, 2),
        ("Role", {"name": "Guild"}, FrameworkItem, 2),
        ("Drug", "kelp", FrameworkItem, 2),
        ("Shard", 1, FrameworkItem, 1),
        ("Currency", {"name": "Temple Tokens"}, FrameworkItem, 2),
        ("ClanRank", {"name": "Mate", "clan": 2}, ClanMembership, 22),
        ("ClanRank", {"id": 13, "clan": "wardens"}, ClanMembership, 13),
        ("ClanAppointment", "gaol", ClanMembership, 32),
        ("ClanPaygrade", {"abbreviation": "s1"}, ClanMembership, 61),
        ("ClanPaygrade", {"abbreviation": "G1", "clan": "Wardens"}, ClanMembership, 51),
        ("Effect", {"effect_id": 722, "owner_type": None, "owner_id": None}, Effect, 722),
        ("MudDateTime", "2 1/1/1051 00:00:00 HTT", MudMoment, None),
    ],
)
def test_reference_shapes_resolve_to_town_objects(
    world: SimWorld, type_name: str, value: Any, kind: type, identity: int | None
) -> None:
    found = _bind(world, type_name, value)
    assert isinstance(found, kind)
    if identity is not None:
        assert found.id == identity


def test_outfits_and_collections_resolve_each_element(world: SimWorld) -> None:
    piece = _bind(
        world,
        "OutfitItem",
        {"owner_character_id": MAREN, "item_id": 311, "outfit_name": None},
    )
    assert isinstance(piece, OutfitPiece) and piece.outfit.name == "Harbour Kit"
    rooms = _bind(world, "Collection<Location>", [101, None, 205])
    assert [r.id if r else None for r in rooms] == [101, None, 205]


@pytest.mark.parametrize(
    ("type_name", "model_json"),
    [
        ("Race", {"RaceName": "Halfling"}),
        ("ClanRank", {"ClanId": 1, "RankId": 12}),
        ("ClanPaygrade", {"ClanName": "Wardens", "Abbreviation": "G2"}),
        ("Calendar", {"CalendarName": "Temple Reckoning"}),
        ("Effect", {"EffectId": 703, "OwnerType": "pc"}),
        ("Outfit", {"OwnerCharacterId": MAREN, "OutfitName": "Harbour Kit"}),
        ("OutfitItem", {"OwnerCharacterId": MAREN, "ItemId": 312}),
        ("TimeSpan", {"TotalSeconds": 0.25}),
        ("DateTime", {"Iso8601": "2026-02-11T12:34:56.5+01:00"}),
        ("Collection<Exit>", [{"ExitId": 11}, "12"]),
    ],
)
def test_whatever_the_converter_sends_the_sim_accepts(
    world: SimWorld, type_name: str, model_json: Any
) -> None:
    sent = convert_argument(ValueType.parse(type_name), model_json)
    assert _bind(world, type_name, sent) is not None


@pytest.mark.parametrize(
    ("type_name", "value", "message"),
    [
        ("Boolean", "true", "'Value' must be true or false"),
        ("Number", True, "'Value' must be a number"),
        ("Gender", "Male", "must be one of male, female"),
        ("DateTime", "2026-02-11T12:34:56", "ISO-8601 datetime with an offset"),
        ("DateTime", "noon", "ISO-8601 datetime with an offset"),
        ("TimeSpan", "00:61:00", "must be a TimeSpan such as"),
        ("Text", None, "'Value' must not be null \\(Text\\)"),
        ("Item", 9999, "No item with id 9999 exists"),
        ("Item", "301", "'Value' must be an item id"),
        ("Race", {"id": 1, "name": "Human"}, "must be an id, a name, or an object with one of"),
        ("Race", {"name": "Human", "clan": 1}, "must be an object with name"),
        ("Race", {"abbreviation": "H"}, "object with one of id, name"),
        ("Race", "  ", "must name something by id or name"),
        ("Race", 1.5, "must name something by id or name"),
        ("Effect", {"effect_id": 701}, "must be an object with effect_id, owner_type, owner_id"),
        ("Outfit", {"owner_character_id": MAREN, "outfit_name": 3}, "must be text"),
        ("OutfitItem", [], "must be an object with owner_character_id, item_id"),
        ("Collection<Location>", 101, "must be a list \\(Collection<Location>\\)"),
        ("Collection<Location>", [101, "x"], "Element 1 of argument 'Value' must be a room id"),
    ],
)
def test_shapes_the_converter_never_sends_are_refused(
    world: SimWorld, type_name: str, value: Any, message: str
) -> None:
    with pytest.raises(WorldCommandError, match=message):
        _bind(world, type_name, value)


def test_a_world_without_calendars_only_knows_never(world: SimWorld) -> None:
    bare = SimWorld(world.town_map, world.all_sheets(), ())
    assert _bind(bare, "MudDateTime", "never") is None
    with pytest.raises(WorldCommandError, match="keeps no calendars"):
        _bind(bare, "MudDateTime", "solar 1/1/1051 00:00:00 HTT")
    with pytest.raises(WorldCommandError, match="No Calendar named 'solar' exists"):
        _bind(bare, "Calendar", "solar")
