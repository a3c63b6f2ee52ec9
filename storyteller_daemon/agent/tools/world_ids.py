"""The world's things a prog call names, checked against the world before the call is sent.

A custom tool's parameter typed Character, Location, Item or Exit (alone or in a collection)
must be a non-null id of a thing of that kind that the world knows; so must the owner of an
Outfit or OutfitItem (a character), the item of an OutfitItem, and the owner of an Effect when
its kind is given as a character, an item or a room. Anything else is refused with a tool error
naming the parameter, and the game is never asked to run the prog.

Characters and rooms are asked through ``character`` and ``room``, which the daemon's look-up
cache answers most of the time (`runtime.lookup_cache`); items and exits through ``entity``. A
game that does not answer ``entity`` (a bridge from before it) leaves those two to its own prog
runner, which checks them anyway.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from progs.types import ProgParameter, ProgType
from storyteller_daemon.errors import ToolError
from world_adapter.errors import UnsupportedRequest
from world_adapter.facts import EntityKind
from world_adapter.protocol import WorldClient

_KINDS: Mapping[ProgType, EntityKind] = {
    ProgType.CHARACTER: EntityKind.CHARACTER,
    ProgType.LOCATION: EntityKind.LOCATION,
    ProgType.ITEM: EntityKind.ITEM,
    ProgType.EXIT: EntityKind.EXIT,
}
"""The prog types a bare id argument stands for, and the kind of thing it names."""

_NOUNS: Mapping[EntityKind, str] = {
    EntityKind.CHARACTER: "character",
    EntityKind.LOCATION: "room",
    EntityKind.ITEM: "item",
    EntityKind.EXIT: "exit",
}
_OWNER_KINDS: Mapping[str, EntityKind] = {
    "character": EntityKind.CHARACTER,
    "item": EntityKind.ITEM,
    "cell": EntityKind.LOCATION,
}
"""Effect owner types (`progs.convert`) that name a thing the world can be asked about."""

WORLD_TYPES: frozenset[ProgType] = frozenset(
    {*_KINDS, ProgType.OUTFIT, ProgType.OUTFIT_ITEM, ProgType.EFFECT}
)
"""Prog types whose arguments name things in the world by id."""


async def check_world_ids(
    parameters: Sequence[ProgParameter], converted: Mapping[str, Any], world: WorldClient
) -> None:
    """Check the ids a converted prog call names (see the module docstring).

    Args:
        parameters: the prog's parameters.
        converted: the arguments as `progs.convert.convert_arguments` returned them.
        world: the game (the daemon's cached view of it).

    Raises:
        ToolError: a null id, or an id the world knows no thing of that kind by.
        WorldCommandError: the world could not be asked.
    """
    for parameter in parameters:
        element = parameter.type.element
        if element not in WORLD_TYPES:
            continue
        value = converted[parameter.name]
        if not parameter.type.collection:
            await _check(world, f"Parameter '{parameter.name}'", element, value)
            continue
        for index, item in enumerate(value):
            await _check(world, f"Element {index} of parameter '{parameter.name}'", element, item)


async def _check(world: WorldClient, label: str, element: ProgType, value: Any) -> None:
    kind = _KINDS.get(element)
    if kind is not None:
        if value is None:
            noun = _NOUNS[kind]
            article = "an" if noun[0] in "aeiou" else "a"
            raise ToolError(f"{label}: null is not {article} {noun} id ({element.value}).")
        await _known(world, label, kind, value)
    elif value is None:
        return  # an Outfit, OutfitItem or Effect may be "none"
    elif element is ProgType.EFFECT:
        owner = _OWNER_KINDS.get(value["owner_type"] or "")
        if owner is not None and value["owner_id"] is not None:
            await _known(world, f"{label} (OwnerId)", owner, value["owner_id"])
    else:
        owner_id = value["owner_character_id"]
        await _known(world, f"{label} (OwnerCharacterId)", EntityKind.CHARACTER, owner_id)
        if element is ProgType.OUTFIT_ITEM:
            await _known(world, f"{label} (ItemId)", EntityKind.ITEM, value["item_id"])


async def _known(world: WorldClient, label: str, kind: EntityKind, entity_id: int) -> None:
    match kind:
        case EntityKind.CHARACTER:
            found = await world.character(entity_id) is not None
        case EntityKind.LOCATION:
            found = await world.room(entity_id) is not None
        case _:
            try:
                found = await world.entity(kind, entity_id) is not None
            except UnsupportedRequest:
                return
    if not found:
        raise ToolError(f"{label}: no {_NOUNS[kind]} with id {entity_id} exists.")
