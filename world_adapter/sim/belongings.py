"""Items, outfits and effects of the sim world, and how prog arguments pick one of them.

Items are carried by a character or lie in a room; an item can be the key to doors. An outfit is
a named set of items its owner carries. An effect (drunk, wanted, thick fog...) sits on one
owner: a character, an item, a room (``cell``), a zone or a shard. Effect ids are unique per
owner, not across owners, so an effect id alone can be ambiguous.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from world_adapter.errors import WorldCommandError

OWNER_TYPES: tuple[str, ...] = ("character", "item", "cell", "zone", "shard")
"""Effect owner types, in the order an owner id alone is tried."""


@dataclass(frozen=True)
class Item:
    """An item, carried by a character or lying in a room.

    Attributes:
        opens: The doors this item is a key to.

    Raises:
        ValueError: If the item is both carried and in a room, or neither.
    """

    id: int
    name: str
    holder_id: int | None = None
    room_id: int | None = None
    opens: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        if (self.holder_id is None) == (self.room_id is None):
            raise ValueError(f"Item {self.id} must be either carried or in a room.")


@dataclass(frozen=True)
class Outfit:
    """A named set of items a character wears together."""

    owner_id: int
    name: str
    description: str
    item_ids: tuple[int, ...]


@dataclass(frozen=True)
class OutfitPiece:
    """What an OutfitItem argument resolves to: one item within one outfit."""

    outfit: Outfit
    item: Item


@dataclass(frozen=True)
class Effect:
    """An effect on one owner (see `OWNER_TYPES`)."""

    id: int
    name: str
    description: str
    owner_type: str
    owner_id: int

    def __post_init__(self) -> None:
        if self.owner_type not in OWNER_TYPES:
            raise ValueError(f"Effect {self.id} has an unknown owner type '{self.owner_type}'.")


class Belongings:
    """Every item, outfit and effect of a world.

    Raises:
        ValueError: If item ids repeat, an owner has two outfits of the same name (ignoring
            case), an outfit holds an item its owner does not carry, or an owner has two
            effects with the same id.
    """

    def __init__(
        self,
        items: Iterable[Item] = (),
        outfits: Iterable[Outfit] = (),
        effects: Iterable[Effect] = (),
    ) -> None:
        self.items: dict[int, Item] = {}
        for item in items:
            if item.id in self.items:
                raise ValueError(f"Item id {item.id} is used twice.")
            self.items[item.id] = item
        self.outfits = tuple(outfits)
        self.effects = tuple(effects)
        _unique("outfit", [(o.owner_id, o.name.casefold()) for o in self.outfits])
        _unique("effect", [(e.owner_type, e.owner_id, e.id) for e in self.effects])
        for outfit in self.outfits:
            for item_id in outfit.item_ids:
                held = self.items.get(item_id)
                if held is None or held.holder_id != outfit.owner_id:
                    raise ValueError(
                        f"Outfit '{outfit.name}' holds item {item_id}, which its owner "
                        f"{outfit.owner_id} does not carry."
                    )

    def keys_of(self, character_id: int) -> frozenset[int]:
        """The doors a character carries a key to."""
        carried = (i for i in self.items.values() if i.holder_id == character_id)
        return frozenset(door for item in carried for door in item.opens)

    def item(self, item_id: int) -> Item:
        """An item by id.

        Raises:
            WorldCommandError: If there is none.
        """
        item = self.items.get(item_id)
        if item is None:
            raise WorldCommandError(f"No item with id {item_id} exists.")
        return item

    def outfit(self, owner_id: int, name: str) -> Outfit:
        """A character's outfit by name (case-insensitively).

        Raises:
            WorldCommandError: If the character has no outfit of that name.
        """
        wanted = name.strip().casefold()
        for outfit in self.outfits:
            if outfit.owner_id == owner_id and outfit.name.casefold() == wanted:
                return outfit
        raise WorldCommandError(f"Character {owner_id} has no outfit named '{name}'.")

    def outfit_piece(self, owner_id: int, item_id: int, outfit_name: str | None) -> OutfitPiece:
        """One item of one of a character's outfits; the outfit's name settles ambiguity.

        Raises:
            WorldCommandError: If the item is in none of the owner's outfits (or not in the
                named one), or in several and no outfit name is given.
        """
        item = self.item(item_id)
        if outfit_name is not None:
            outfit = self.outfit(owner_id, outfit_name)
            if item_id not in outfit.item_ids:
                raise WorldCommandError(
                    f"Outfit '{outfit.name}' of character {owner_id} does not include item "
                    f"{item_id}."
                )
            return OutfitPiece(outfit, item)
        holding = [o for o in self.outfits if o.owner_id == owner_id and item_id in o.item_ids]
        if not holding:
            raise WorldCommandError(f"No outfit of character {owner_id} includes item {item_id}.")
        if len(holding) > 1:
            names = ", ".join(f"'{o.name}'" for o in holding)
            raise WorldCommandError(
                f"Item {item_id} is in several outfits of character {owner_id} ({names}); "
                "supply OutfitName."
            )
        return OutfitPiece(holding[0], item)

    def effect(self, effect_id: int, owner_type: str | None, owner_id: int | None) -> Effect:
        """An effect by id, narrowed by owner type and owner id where given.

        With only an owner id, owner types are tried in `OWNER_TYPES` order.

        Raises:
            WorldCommandError: If no effect fits, or several do.
        """
        found = [
            e
            for e in self.effects
            if e.id == effect_id
            and owner_type in (None, e.owner_type)
            and owner_id in (None, e.owner_id)
        ]
        if owner_id is not None and owner_type is None and found:
            first = min(OWNER_TYPES.index(e.owner_type) for e in found)
            found = [e for e in found if OWNER_TYPES.index(e.owner_type) == first]
        if not found:
            where = " ".join(str(p) for p in (owner_type, owner_id) if p is not None)
            raise WorldCommandError(
                f"No effect with id {effect_id} exists{f' on {where}' if where else ''}."
            )
        if len(found) > 1:
            raise WorldCommandError(
                f"Effect {effect_id} is ambiguous across multiple owners. Supply OwnerType and "
                "OwnerId."
            )
        return found[0]


def _unique(what: str, keys: list[tuple[object, ...]]) -> None:
    repeated = [key for key, n in Counter(keys).items() if n > 1]
    if repeated:
        raise ValueError(f"Repeated {what}: {repeated[0]}.")
