"""The sim world's landmarks, plans and data references."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.testing import FakeClock
from world_adapter.errors import WorldCommandError
from world_adapter.facts import CharacterPlan, LandmarkSummary
from world_adapter.sim import SimWorld
from world_adapter.sim.belongings import Belongings, Effect, Item, Outfit
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.harbour_time import HARBOUR_TIMEKEEPING
from world_adapter.sim.people import PlanSheet
from world_adapter.sim.timekeeping import Timekeeping, ZoneReckoning

MAREN, OSRIC, ILSA, HOLT, PER = 1001, 1002, 1003, 2001, 2003
START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def test_landmarks_list_and_describe_their_rooms() -> None:
    world = SimWorld.harbour_town()
    assert (await world.landmarks())[0] == LandmarkSummary(
        "the Drowned Lantern", 103, "The Drowned Lantern"
    )
    temple = await world.landmark("  THE TEMPLE OF THE TIDES ")
    assert temple is not None
    assert (temple.room_id, temple.room_name) == (202, "Temple Square")
    assert temple.room_description.startswith("A wide square paved in pale stone")
    assert [c.id for c in temple.occupants] == [ILSA]
    assert temple.occupants[0].short_description.startswith("a freckled young woman")
    assert await world.landmark("Temple of the Tides") is None  # the whole name, not a part


async def test_plans_are_dated_from_the_first_clock_reading_and_age_with_it() -> None:
    clock = FakeClock(START)
    world = SimWorld.harbour_town(clock=clock.now)
    clock.set_now(START + timedelta(hours=5))  # nothing has read the clock yet
    maren = await world.character_plan(MAREN)
    assert maren == CharacterPlan(
        MAREN,
        "Maren Tidewell",
        "a weather-tanned woman with salt-stiff braids",
        "Find out who has been cutting the nets on Net-Menders' Row.",
        "Buy a boat of her own before the autumn storms.",
        timedelta(days=2),
        is_player=True,
    )
    clock.set_now(clock.now() + timedelta(days=1))
    assert [(p.character_id, p.updated_ago) for p in await world.recent_plans(timedelta(5))] == [
        (MAREN, timedelta(days=3))
    ]
    recent = await world.recent_plans(timedelta(days=90))
    assert [p.character_id for p in recent] == [MAREN, ILSA]  # not Osric (too old) nor Holt (NPC)
    world.set_plans(PER, "  ", "Become a harbour pilot.")
    per = await world.character_plan(PER)
    assert per is not None and per.is_player is False
    assert (per.short_term, per.long_term, per.updated_ago) == (
        None,
        "Become a harbour pilot.",
        timedelta(0),
    )
    # A clock set back never makes plans younger than new.
    clock.set_now(clock.now() - timedelta(hours=1))
    per = await world.character_plan(PER)
    assert per is not None and per.updated_ago == timedelta(0)
    assert await world.character_plan(4242) is None
    with pytest.raises(WorldCommandError, match="No character with id 4242 exists"):
        world.set_plans(4242, "x", "y")


def test_plan_sheets_are_checked() -> None:
    with pytest.raises(ValueError, match="needs a short-term or a long-term plan"):
        PlanSheet(" ", "", timedelta(0))
    with pytest.raises(ValueError, match="cannot be changed in the future"):
        PlanSheet("Sail.", "", timedelta(days=-1))


@pytest.mark.parametrize(
    ("belongings", "message"),
    [
        (Belongings(items=(Item(1, "a box", holder_id=4242),)), "character 4242"),
        (Belongings(items=(Item(1, "a box", room_id=999),)), "room 999"),
        (Belongings(items=(Item(1, "a key", room_id=101, opens=frozenset({9})),)), "door 9"),
        (Belongings(outfits=(Outfit(4242, "Rags", "", ()),)), "character 4242"),
        (Belongings(effects=(Effect(1, "Fog", "", "cell", 999),)), "cell 999"),
        (Belongings(effects=(Effect(1, "Gale", "", "shard", 1),)), "shard 1"),
    ],
)
def test_belongings_must_refer_to_what_the_world_has(belongings: Belongings, message: str) -> None:
    with pytest.raises(ValueError, match=f"refers to {message}, not in the world"):
        SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, (), belongings=belongings)


def test_belongings_and_timekeeping_are_checked_when_built() -> None:
    with pytest.raises(ValueError, match="Item id 1 is used twice"):
        Belongings(items=(Item(1, "a", room_id=101), Item(1, "b", room_id=101)))
    with pytest.raises(ValueError, match="either carried or in a room"):
        Item(1, "a box", holder_id=MAREN, room_id=101)
    with pytest.raises(ValueError, match="which its owner 1001 does not carry"):
        Belongings(
            items=(Item(1, "a box", room_id=101),), outfits=(Outfit(MAREN, "Box", "", (1,)),)
        )
    with pytest.raises(ValueError, match="Repeated outfit"):
        Belongings(outfits=(Outfit(MAREN, "Kit", "", ()), Outfit(MAREN, "KIT", "", ())))
    with pytest.raises(ValueError, match="unknown owner type 'ship'"):
        Effect(1, "Fog", "", "ship", 1)
    elsewhere = Timekeeping(
        HARBOUR_TIMEKEEPING.calendars,
        HARBOUR_TIMEKEEPING.clocks,
        (ZoneReckoning(7, (1,), (1,)),),
        HARBOUR_TIMEKEEPING.timeline,
    )
    with pytest.raises(ValueError, match="refers to zone 7, not in the world"):
        SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, (), timekeeping=elsewhere)
