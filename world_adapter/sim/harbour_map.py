"""The harbour town's geography: the Harbour Ward by the water and the Old Town above it.

```
                                                      205 Guildhall
                                                            | enter door
   203 Watch House --door-- 202 Temple Square ------- 204 Copper Street
                                   |
                             201 Old Town Gate
                                   |
                             106 Warehouse Lane
                                   |
 105 Net-Menders' Row ---- 101 Harbour Quay ---- 102 Fish Market ---- 107 Lighthouse Steps
                                   | enter door        | enter door          | enter door
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

_CUSTOMS_DOOR = Door(1, "a heavy oak door")
_TAVERN_DOOR = Door(2, "a salt-warped tavern door")
_HARBOURMASTER_DOOR = Door(3, "a narrow green door")
_WATCH_DOOR = Door(4, "an iron-bound door")
_GUILDHALL_DOOR = Door(5, "a pair of carved double doors")

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
                Exit("north", 106),
                Exit("east", 102),
                Exit("west", 105),
                Exit("enter door", 104, _CUSTOMS_DOOR),
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
                Exit("west", 101),
                Exit("east", 107),
                Exit("enter door", 103, _TAVERN_DOOR),
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
            exits=(Exit("leave door", 102, _TAVERN_DOOR),),
            landmarks=(
                Landmark(
                    "the Drowned Lantern",
                    "A harbour tavern where sailors drink away their pay and rumours change hands.",
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
            exits=(Exit("leave door", 101, _CUSTOMS_DOOR),),
        ),
        Room(
            105,
            "Net-Menders' Row",
            HARBOUR_WARD_ID,
            "A narrow row of sheds where nets hang drying from poles like grey curtains. Old men "
            "and children sit on upturned baskets, knotting and mending with bone needles, and the "
            "ground is littered with cork floats and snapped twine. The quay lies to the east.",
            exits=(Exit("east", 101),),
        ),
        Room(
            106,
            "Warehouse Lane",
            HARBOUR_WARD_ID,
            "Tall, windowless warehouses lean over this cramped lane, leaving it in shadow even at "
            "noon. Carts rumble up toward the Old Town Gate to the north, while the quay opens out "
            "to the south. Doorways and stacked barrels offer plenty of places to lurk unseen.",
            exits=(Exit("south", 101), Exit("north", 201)),
        ),
        Room(
            107,
            "Lighthouse Steps",
            HARBOUR_WARD_ID,
            "Worn stone steps climb the harbour's eastern arm toward the white tower of the "
            "lighthouse, its great lamp dark by day. Spray bursts over the sea wall here, and the "
            "whole harbour is laid out below. A narrow green door opens into the harbourmaster's "
            "office at the foot of the tower.",
            exits=(Exit("west", 102), Exit("enter door", 108, _HARBOURMASTER_DOOR)),
            landmarks=(
                Landmark(
                    "the harbour lighthouse",
                    "A white stone tower whose lamp guides ships past the reef at night.",
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
            exits=(Exit("leave door", 107, _HARBOURMASTER_DOOR),),
        ),
        Room(
            201,
            "Old Town Gate",
            OLD_TOWN_ID,
            "An ancient stone gatehouse marks where the harbour's clutter gives way to the Old "
            "Town's older streets. The portcullis has rusted open for a generation, and a bored "
            "sentry watches the carts roll through. Temple Square lies to the north and Warehouse "
            "Lane slopes down to the south.",
            exits=(Exit("south", 106), Exit("north", 202)),
            landmarks=(
                Landmark(
                    "the Old Town Gate",
                    "The gatehouse between the harbour and the Old Town, its portcullis rusted "
                    "open.",
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
                Exit("south", 201),
                Exit("west", 203, _WATCH_DOOR),
                Exit("east", 204),
            ),
            landmarks=(
                Landmark(
                    "the Temple of the Tides",
                    "The town's oldest temple, where sailors pray for safe return.",
                ),
            ),
        ),
        Room(
            203,
            "Watch House",
            OLD_TOWN_ID,
            "A sturdy guardroom of whitewashed stone, with a rack of cudgels and pikes by the door "
            "and a duty roster chalked on a slate. A pair of barred cells stand at the back. An "
            "iron-bound door leads east into Temple Square.",
            exits=(Exit("east", 202, _WATCH_DOOR),),
        ),
        Room(
            204,
            "Copper Street",
            OLD_TOWN_ID,
            "The ring of hammers fills this street of coppersmiths and tinkers, their wares "
            "hanging in bright rows from the shopfronts. The Guildhall's carved double doors open "
            "to the north, and Temple Square lies back to the west.",
            exits=(Exit("west", 202), Exit("enter door", 205, _GUILDHALL_DOOR)),
        ),
        Room(
            205,
            "Guildhall",
            OLD_TOWN_ID,
            "A lofty hall hung with the banners of the town's guilds, from the coppersmiths to the "
            "net-makers. Long oak tables stand ready for the council of masters, and a gallery "
            "looks down from above. The carved double doors lead back to Copper Street.",
            exits=(Exit("leave door", 204, _GUILDHALL_DOOR),),
        ),
    ),
)
