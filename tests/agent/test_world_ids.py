"""A prog call naming a character, room, item or exit the world does not know is refused before
the game is asked: null, another kind's id, an unknown id. Run against the sim world."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from agent_doubles import call_offered

from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.registry import with_catalogue
from storyteller_daemon.domain.storytellers import CustomTool, Storyteller
from storyteller_daemon.runtime.lookup_cache import CachedWorld
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.errors import UnsupportedRequest
from world_adapter.facts import EntityInfo, EntityKind
from world_adapter.sim import SimWorld

MAREN, HOLT = 1001, 2001  # characters
QUAY = 101  # a room
ROPE, BREASTPLATE = 351, 301  # items (the rope lies on the quay, Holt wears the breastplate)
EXIT = 22
THINGS = {"Character": MAREN, "Location": QUAY, "Item": ROPE, "Exit": EXIT}
TOOLS = (
    CustomTool("InspectThings", "What its arguments name.", "InspectThings", False,
               tuple((p, f"A {p}.") for p in THINGS)),
    CustomTool("EchoToRooms", "A line in several rooms.", "EchoToRooms", False,
               (("Rooms", "Where."), ("Text", "What."))),
    CustomTool("InspectOutfitItem", "Which outfit item.", "InspectOutfitItem", False,
               (("OutfitItem", "i"),)),
    CustomTool("InspectEffect", "Which effect.", "InspectEffect", False, (("Effect", "e"),)),
)  # fmt: skip


@pytest.fixture
def sim() -> SimWorld:
    return SimWorld.harbour_town()


@pytest.fixture
def game(sim: SimWorld) -> InstrumentedWorld[SimWorld]:
    """The world as the daemon's cache sees it; it records every question it is asked."""
    return InstrumentedWorld(sim)


@pytest.fixture
async def turn(
    sqlite_store: Store, storyteller: Storyteller, game: InstrumentedWorld[SimWorld]
) -> ToolContext:
    ctx = ToolContext(
        TurnServices(
            world=CachedWorld(game, FakeClock()),
            situations=sqlite_store.situations,
            memories=sqlite_store.memories,
            references=sqlite_store.references,
        )
    )
    with_tools = replace(storyteller, custom_tools=TOOLS)
    return await with_catalogue(ctx.for_turn(with_tools, "turn-ids"))


call = call_offered


async def test_known_things_of_the_right_kind_reach_the_game(
    turn: ToolContext, game: InstrumentedWorld[SimWorld]
) -> None:
    envelope = await call(turn, "InspectThings", THINGS)
    assert envelope["ok"] is True, envelope
    assert {k: v["Id"] for k, v in envelope["result"]["Result"].items()} == THINGS
    assert game.count("execute_prog") == 1


@pytest.mark.parametrize(
    ("parameter", "value", "error"),
    [
        ("Character", None, "Parameter 'Character': null is not a character id (Character)."),
        ("Location", None, "Parameter 'Location': null is not a room id (Location)."),
        ("Item", None, "Parameter 'Item': null is not an item id (Item)."),
        ("Exit", None, "Parameter 'Exit': null is not an exit id (Exit)."),
        ("Character", ROPE, "Parameter 'Character': no character with id 351 exists."),
        ("Location", MAREN, "Parameter 'Location': no room with id 1001 exists."),
        ("Item", MAREN, "Parameter 'Item': no item with id 1001 exists."),
        ("Item", QUAY, "Parameter 'Item': no item with id 101 exists."),
        ("Exit", ROPE, "Parameter 'Exit': no exit with id 351 exists."),
        ("Character", 4242, "Parameter 'Character': no character with id 4242 exists."),
        ("Location", 0, "Parameter 'Location': Location ids are positive integers; 0 is not one."),
        ("Item", -3, "Parameter 'Item': Item ids are positive integers; -3 is not one."),
        ("Exit", 2**63, "Parameter 'Exit': Exit ids are positive integers;"),
    ],
)
async def test_a_null_wrong_kind_or_unknown_id_is_refused_and_the_game_never_asked(
    parameter: str,
    value: Any,
    error: str,
    turn: ToolContext,
    game: InstrumentedWorld[SimWorld],
) -> None:
    envelope = await call(turn, "InspectThings", {**THINGS, parameter: value})
    assert envelope["ok"] is False
    assert envelope["error"].startswith(error)
    assert game.count("execute_prog") == 0


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("EchoToRooms", {"Rooms": [QUAY, None], "Text": "x"},
         "Element 1 of parameter 'Rooms': null is not a room id (Location)."),
        ("EchoToRooms", {"Rooms": [QUAY, ROPE], "Text": "x"},
         "Element 1 of parameter 'Rooms': no room with id 351 exists."),
        ("InspectOutfitItem", {"OutfitItem": {"OwnerCharacterId": ROPE, "ItemId": BREASTPLATE}},
         "Parameter 'OutfitItem' (OwnerCharacterId): no character with id 351 exists."),
        ("InspectOutfitItem", {"OutfitItem": {"OwnerCharacterId": HOLT, "ItemId": HOLT}},
         "Parameter 'OutfitItem' (ItemId): no item with id 2001 exists."),
        ("InspectEffect", {"Effect": {"EffectId": 1, "OwnerType": "item", "OwnerId": MAREN}},
         "Parameter 'Effect' (OwnerId): no item with id 1001 exists."),
    ],
)  # fmt: skip
async def test_ids_inside_collections_and_objects_are_checked_too(
    name: str,
    arguments: dict[str, Any],
    error: str,
    turn: ToolContext,
    game: InstrumentedWorld[SimWorld],
) -> None:
    envelope = await call(turn, name, arguments)
    assert envelope == {"ok": False, "error": error}
    assert game.count("execute_prog") == 0


async def test_the_look_up_cache_answers_repeated_checks(
    turn: ToolContext, game: InstrumentedWorld[SimWorld]
) -> None:
    for text in ("one", "two", "three"):
        assert (await call(turn, "EchoToRooms", {"Rooms": [QUAY], "Text": text}))["ok"] is True
        assert (await call(turn, "InspectThings", THINGS))["ok"] is True
    assert [game.count(m) for m in ("room", "character", "entity")] == [1, 1, 2]
    assert game.count("execute_prog") == 6


async def test_the_sim_world_tells_kinds_apart(sim: SimWorld) -> None:
    assert await sim.entity(EntityKind.ITEM, ROPE) == EntityInfo(
        EntityKind.ITEM, ROPE, "a coil of tarred rope"
    )
    assert (await sim.entity(EntityKind.CHARACTER, MAREN)) is not None
    assert (await sim.entity(EntityKind.LOCATION, QUAY)) is not None
    assert (await sim.entity(EntityKind.EXIT, EXIT)) is not None
    for kind, other in [
        (EntityKind.ITEM, MAREN),
        (EntityKind.CHARACTER, ROPE),
        (EntityKind.LOCATION, EXIT),
        (EntityKind.EXIT, QUAY),
    ]:
        assert await sim.entity(kind, other) is None


async def test_a_game_without_the_entity_request_leaves_items_to_its_prog_runner(
    turn: ToolContext, game: InstrumentedWorld[SimWorld]
) -> None:
    game.fail("entity", UnsupportedRequest("Unknown method 'entity'."))
    assert (await call(turn, "InspectThings", THINGS))["ok"] is True
    refused = await call(turn, "InspectThings", {**THINGS, "Item": MAREN})
    assert refused == {"ok": False, "error": "No item with id 1001 exists."}  # the game's own
    assert game.count("execute_prog") == 2
    still = await call(turn, "InspectThings", {**THINGS, "Location": MAREN})
    assert still["error"] == "Parameter 'Location': no room with id 1001 exists."
    assert game.count("execute_prog") == 2
