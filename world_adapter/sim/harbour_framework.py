"""The harbour town's framework objects, items, outfits and effects.

The races, cultures and ethnicities are those the character sheets name. Two clans share a rank
called Captain, so a rank name alone can be ambiguous; effect 777 sits both on Fishwife Agna and
on the Fish Market, so an effect id alone can be too.
"""

from __future__ import annotations

from progs.types import ProgType
from world_adapter.sim.belongings import Belongings, Effect, Item, Outfit
from world_adapter.sim.framework import Clan, ClanPosition, Framework, FrameworkItem
from world_adapter.sim.harbour_people import (
    AGNA_ID,
    COYLE_ID,
    HOLT_ID,
    ILSA_ID,
    MAREN_ID,
    OSRIC_ID,
    WREN_ID,
)
from world_adapter.sim.map import OLD_TOWN_ID

MIDDLE_SEA_SHARD_ID = 1


def _items(kind: ProgType, *entries: str | tuple[str, tuple[str, ...]]) -> list[FrameworkItem]:
    """Framework items of one kind, numbered from 1; an entry is a name or (name, aliases)."""
    made = []
    for number, entry in enumerate(entries, start=1):
        name, aliases = (entry, ()) if isinstance(entry, str) else entry
        made.append(FrameworkItem(kind, number, name, aliases))
    return made


def _positions(
    kind: ProgType, *entries: tuple[int, str] | tuple[int, str, str]
) -> tuple[ClanPosition, ...]:
    return tuple(ClanPosition(kind, *entry) for entry in entries)


HARBOUR_FRAMEWORK = Framework(
    items=(
        *_items(ProgType.SHARD, "The Middle Sea"),
        *_items(ProgType.RACE, "Human", "Halfling", ("Selkie", ("seal-folk",))),
        *_items(ProgType.CULTURE, "Harbour Ward", "Old Town Gentry", "Temple Acolyte"),
        *_items(ProgType.ETHNICITY, "Coastfolk", "Old Town Vellish", "Northern"),
        *_items(ProgType.TRAIT, "Strength", "Seamanship", "Swimming", "Haggling", "Lockpicking"),
        *_items(ProgType.CURRENCY, ("Harbour Crowns", ("crowns",)), "Temple Tokens"),
        *_items(ProgType.LANGUAGE, "Common", "Old Vellish", "Sea Cant"),
        *_items(ProgType.ACCENT, "Harbour Clipped", "Old Town Drawl", "Northern Lilt"),
        *_items(ProgType.MERIT, "Sea Legs", "Night Eyes", "Silver Tongue"),
        *_items(ProgType.KNOWLEDGE, "Tide Lore", "Knots and Rigging", "Temple Rites"),
        *_items(ProgType.ROLE, "Harbour Watch Officer", "Guild Master", "Priest of the Tides"),
        *_items(ProgType.DRUG, "Poppy Tincture", "Kelpweed Smoke"),
        *_items(
            ProgType.SHOP,
            "Agna's Fish Stall",
            "The Drowned Lantern Taproom",
            "Copper Street Tinkers",
        ),
    ),
    clans=(
        Clan(
            1,
            "Wardens of the Harbour",
            ("Wardens",),
            "The town watch, sworn to keep the peace of the harbour and the Old Town.",
            ranks=_positions(
                ProgType.CLAN_RANK,
                (11, "Recruit"),
                (12, "Warden"),
                (13, "Sergeant"),
                (14, "Captain"),
            ),
            appointments=_positions(ProgType.CLAN_APPOINTMENT, (31, "Marshal"), (32, "Gaoler")),
            paygrades=_positions(
                ProgType.CLAN_PAYGRADE,
                (51, "Grade One", "G1"),
                (52, "Grade Two", "G2"),
                (53, "Grade Three", "G3"),
            ),
        ),
        Clan(
            2,
            "Fishers' Guild",
            ("Fishers",),
            "The guild of the harbour's boat owners and their crews.",
            ranks=_positions(ProgType.CLAN_RANK, (21, "Deckhand"), (22, "Mate"), (23, "Captain")),
            appointments=_positions(ProgType.CLAN_APPOINTMENT, (41, "Guildmaster")),
            paygrades=_positions(
                ProgType.CLAN_PAYGRADE, (61, "Single Share", "S1"), (62, "Double Share", "S2")
            ),
        ),
    ),
)

HARBOUR_BELONGINGS = Belongings(
    items=(
        Item(301, "a dented steel breastplate", holder_id=HOLT_ID),
        Item(302, "a brass sergeant's whistle", holder_id=HOLT_ID),
        Item(303, "a stout oak cudgel", holder_id=HOLT_ID),
        Item(304, "an iron key on a leather thong", holder_id=HOLT_ID, opens=frozenset({4})),
        Item(311, "an oilskin coat", holder_id=MAREN_ID),
        Item(312, "a bone-handled gutting knife", holder_id=MAREN_ID),
        Item(313, "a pair of salt-stained sea boots", holder_id=MAREN_ID),
        Item(314, "a blue festival sash", holder_id=MAREN_ID),
        Item(321, "a sea-green acolyte's robe", holder_id=ILSA_ID),
        Item(322, "a string of shell prayer beads", holder_id=ILSA_ID),
        Item(331, "a threadbare velvet doublet", holder_id=OSRIC_ID),
        Item(341, "a ring of harbour keys", holder_id=COYLE_ID, opens=frozenset({1, 3})),
        Item(351, "a coil of tarred rope", room_id=101),
    ),
    outfits=(
        Outfit(HOLT_ID, "Watch Uniform", "What the sergeant wears on duty.", (301, 302, 303)),
        Outfit(MAREN_ID, "Harbour Kit", "Working clothes for the boats.", (311, 312, 313)),
        Outfit(MAREN_ID, "Festival Best", "Her boots, brushed, and a sash.", (313, 314)),
        Outfit(ILSA_ID, "Temple Vestments", "The robe and beads of an acolyte.", (321, 322)),
    ),
    effects=(
        Effect(701, "Drunk", "Swaying and loud after too much ale.", "character", OSRIC_ID),
        Effect(
            702, "Wanted for Theft", "Sought by the watch for cutting purses.", "character", WREN_ID
        ),
        Effect(
            703, "Blessed by the Tides", "Touched by the temple's blessing.", "character", ILSA_ID
        ),
        Effect(711, "Freshly Polished", "Gleams in any light.", "item", 301),
        Effect(721, "Thick Fog", "A sea fog hides everything beyond arm's reach.", "cell", 101),
        Effect(
            722, "Festival Bunting", "Strings of shells and ribbons hang overhead.", "cell", 202
        ),
        Effect(731, "Curfew", "The Old Town's gates close at dusk.", "zone", OLD_TOWN_ID),
        Effect(741, "Storm Season", "Squalls roll in off the sea.", "shard", MIDDLE_SEA_SHARD_ID),
        Effect(
            777,
            "Fish Scales",
            "Spattered with scales from the morning's gutting.",
            "character",
            AGNA_ID,
        ),
        Effect(777, "Reek of Fish", "The smell of the morning's catch hangs heavy.", "cell", 102),
    ),
)
