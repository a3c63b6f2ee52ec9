"""The harbour town's geography: the Harbour Ward by the water and the Old Town above it.

Exit ids are shown on the links; every door starts closed except the tavern's. The Customs House
and Watch House doors start locked, and the Watch House door has a grille one can shoot through.

```
                                                      205 Guildhall
                                                            | enter door (22)
   203 Watch House -(20) door- 202 Temple Square ---(21)--- 204 Copper Street
                                   | (19)
                             201 Old Town Gate
                                   | (18)
                             106 Warehouse Lane
                                   | (11)
 105 Net-Menders' Row -(13)- 101 Harbour Quay -(12)- 102 Fish Market -(15)- 107 Lighthouse Steps
                                   | enter door (14)   | enter door (16)     | enter door (17)
                          104 Customs House   103 The Drowned Lantern   108 Harbourmaster's Office
```
"""

from __future__ import annotations

from world_adapter.sim.map import (
    HARBOUR_WARD_ID,
    OLD_TOWN_ID,
    Door,
    Exit,
    Landmark,
    Room,
    TownMap,
    Zone,
)

CUSTOMS_DOOR = Door(1, "a heavy oak door", closed=True, locked=True)
TAVERN_DOOR = Door(2, "a salt-warped tavern door")
HARBOURMASTER_DOOR = Door(3, "a narrow green door", closed=True)
WATCH_DOOR = Door(4, "an iron-bound door", closed=True, locked=True, fireable=True)
GUILDHALL_DOOR = Door(5, "a pair of carved double doors", closed=True)

HARBOUR_TOWN_MAP = TownMap(
    zones=(
        Zone(HARBOUR_WARD_ID, "Harbour Ward", "Harbour Ward Watch"),
        Zone(OLD_TOWN_ID, "Old Town", "Old Town Watch"),
    ),
    rooms=(
        Room(
            101,
            "Harbour Quay",
            HARBOUR_WARD_ID,
            "Broad, tar-blackened planks run along the water's edge, where fishing smacks and a "
            "single battered coaster ride at their moorings. Coils of rope, stacked crates and the "
            "smell of brine crowd the quay. Warehouse Lane climbs away to the north, the fish "
            "market clamours to the east, and the Customs House squats behind a heavy oak door.",
            exits=(
                Exit("north", 106, id=11),
                Exit("east", 102, id=12),
                Exit("west", 105, id=13),
                Exit("enter door", 104, CUSTOMS_DOOR, id=14),
            ),
        ),
        Room(
            102,
            "Fish Market",
            HARBOUR_WARD_ID,
            "Trestle tables slick with scales fill this cobbled square, each heaped with the "
            "morning's catch under the watchful eyes of gulls. Fishwives cry their prices over the "
            "din. The lantern sign of a tavern hangs above a salt-warped door, and a line of worn "
            "steps climbs east toward the lighthouse.",
            exits=(
                Exit("west", 101, id=12),
                Exit("east", 107, id=15),
                Exit("enter door", 103, TAVERN_DOOR, id=16),
            ),
        ),
        Room(
            103,
            "The Drowned Lantern",
            HARBOUR_WARD_ID,
            "A low-beamed taproom thick with pipe smoke and the sour smell of spilled ale. A "
            "drowned ship's lantern, green with verdigris, hangs over the bar as the tavern's "
            "namesake. Sailors and dock hands hunch over scarred tables, and a fire sputters in a "
            "hearth built from ballast stones.",
            exits=(Exit("leave door", 102, TAVERN_DOOR, id=16),),
            landmarks=(
                Landmark(
                    "the Drowned Lantern",
                    (
                        "A harbour tavern where sailors drink away their pay and rumours change "
                        "hands.",
                        "Its namesake lantern was hauled up in a fishing net forty years ago, and "
                        "old hands swear it still glows on the night of a drowning.",
                    ),
                ),
            ),
        ),
        Room(
            104,
            "Customs House",
            HARBOUR_WARD_ID,
            "Ledgers, tally sticks and sealed manifests crowd the shelves of this dim, orderly "
            "hall. A long counter divides the merchants from the clerks who weigh, measure and tax "
            "every cask that comes ashore. A strongbox sits bolted to the floor behind the "
            "counter.",
            exits=(Exit("leave door", 101, CUSTOMS_DOOR, id=14),),
        ),
        Room(
            105,
            "Net-Menders' Row",
            HARBOUR_WARD_ID,
            "A narrow row of sheds where nets hang drying from poles like grey curtains. Old men "
            "and children sit on upturned baskets, knotting and mending with bone needles, and the "
            "ground is littered with cork floats and snapped twine. The quay lies to the east.",
            exits=(Exit("east", 101, id=13),),
        ),
        Room(
            106,
            "Warehouse Lane",
            HARBOUR_WARD_ID,
            "Tall, windowless warehouses lean over this cramped lane, leaving it in shadow even at "
            "noon. Carts rumble up toward the Old Town Gate to the north, while the quay opens out "
            "to the south. Doorways and stacked barrels offer plenty of places to lurk unseen.",
            exits=(Exit("south", 101, id=11), Exit("north", 201, id=18)),
        ),
        Room(
            107,
            "Lighthouse Steps",
            HARBOUR_WARD_ID,
            "Worn stone steps climb the harbour's eastern arm toward the white tower of the "
            "lighthouse, its great lamp dark by day. Spray bursts over the sea wall here, and the "
            "whole harbour is laid out below. A narrow green door opens into the harbourmaster's "
            "office at the foot of the tower.",
            exits=(Exit("west", 102, id=15), Exit("enter door", 108, HARBOURMASTER_DOOR, id=17)),
            landmarks=(
                Landmark(
                    "the harbour lighthouse",
                    ("A white stone tower whose lamp guides ships past the reef at night.",),
                ),
            ),
        ),
        Room(
            108,
            "Harbourmaster's Office",
            HARBOUR_WARD_ID,
            "A cramped, round office built into the base of the lighthouse. Charts of the coast "
            "are pinned over every inch of curved wall, a brass telescope points out of the only "
            "window, and the harbour's mooring book lies open on a sloping desk.",
            exits=(Exit("leave door", 107, HARBOURMASTER_DOOR, id=17),),
        ),
        Room(
            201,
            "Old Town Gate",
            OLD_TOWN_ID,
            "An ancient stone gatehouse marks where the harbour's clutter gives way to the Old "
            "Town's older streets. The portcullis has rusted open for a generation, and a bored "
            "sentry watches the carts roll through. Temple Square lies to the north and Warehouse "
            "Lane slopes down to the south.",
            exits=(Exit("south", 106, id=18), Exit("north", 202, id=19)),
            landmarks=(
                Landmark(
                    "the Old Town Gate",
                    (
                        "The gatehouse between the harbour and the Old Town, its portcullis "
                        "rusted open.",
                    ),
                ),
            ),
        ),
        Room(
            202,
            "Temple Square",
            OLD_TOWN_ID,
            "A wide square paved in pale stone surrounds the Temple of the Tides, whose bronze "
            "doors are green with age. Pilgrims leave offerings of shells on its steps, and "
            "pigeons squabble around a dry fountain. The Watch House stands to the west, Copper "
            "Street runs east, and the gate lies to the south.",
            exits=(
                Exit("south", 201, id=19),
                Exit("west", 203, WATCH_DOOR, id=20),
                Exit("east", 204, id=21),
            ),
            landmarks=(
                Landmark(
                    "the Temple of the Tides",
                    (
                        "The town's oldest temple, where sailors pray for safe return.",
                        "Its priests keep the Temple Harvest Reckoning, their own calendar of "
                        "offerings.",
                    ),
                ),
            ),
        ),
        Room(
            203,
            "Watch House",
            OLD_TOWN_ID,
            "A sturdy guardroom of whitewashed stone, with a rack of cudgels and pikes by the door "
            "and a duty roster chalked on a slate. A pair of barred cells stand at the back. An "
            "iron-bound door with a barred grille leads east into Temple Square.",
            exits=(Exit("east", 202, WATCH_DOOR, id=20),),
        ),
        Room(
            204,
            "Copper Street",
            OLD_TOWN_ID,
            "The ring of hammers fills this street of coppersmiths and tinkers, their wares "
            "hanging in bright rows from the shopfronts. The Guildhall's carved double doors open "
            "to the north, and Temple Square lies back to the west.",
            exits=(Exit("west", 202, id=21), Exit("enter door", 205, GUILDHALL_DOOR, id=22)),
        ),
        Room(
            205,
            "Guildhall",
            OLD_TOWN_ID,
            "A lofty hall hung with the banners of the town's guilds, from the coppersmiths to the "
            "net-makers. Long oak tables stand ready for the council of masters, and a gallery "
            "looks down from above. The carved double doors lead back to Copper Street.",
            exits=(Exit("leave door", 204, GUILDHALL_DOOR, id=22),),
        ),
    ),
)
