"""What the labelled benchmark stream is made of: the harbour town's rooms, people and lines.

The rooms come from the harbour town's map, split into the busy ones (quay, fish market,
tavern, warehouse lane) and the quiet rest; the people are a few named characters and a crowd
of townsfolk without sheets. The lines are templates for market and tavern chatter, gestures,
comings and goings, each room's ambience, broadcasts heard everywhere, the echoes of a brawl
and smuggling talk, and the kinds of crime; `stream.labelled_stream` fills them in from its
seed.
"""

from __future__ import annotations

from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP

ROOMS = {room.id: room.zone_id for room in HARBOUR_TOWN_MAP.rooms}
BUSY_ROOMS = (101, 102, 103, 106)
"""The quay, the fish market, the tavern, the warehouse lane."""
QUIET_ROOMS = tuple(room for room in ROOMS if room not in BUSY_ROOMS)
NAMES = {
    1001: "Maren Tidewell",
    1002: "Osric Vell",
    1003: "Ilsa Brand",
    2001: "Watch Sergeant Holt",
    2002: "Fishwife Agna",
    2003: "Dockhand Per",
    2004: "Wren the cutpurse",
    2005: "Harbourmaster Coyle",
}
CROWD = tuple(range(3001, 3041))
"""Townsfolk without a sheet of their own."""
CROWD_NAMES = ("a sailor", "a fishwife", "a porter", "a net-mender", "a drunk", "a merchant")

CHATTER = (
    "{n} for a copper, the freshest {item} on the quay!",
    "Did you see the {ship} come in? Riding low in the water, she was.",
    "My back aches from hauling {item} all day.",
    "I'll kill you if you cheat at dice again! {who} laughs and slaps the table.",
    "Another round of {drink} for the table by the fire.",
    "The tide turns at the {nth} bell, mind the moorings.",
    "That's robbery, {n} coppers for {item}! Fine, fine, I'll take two.",
    "They say the harbourmaster's {kin} is to be married.",
    "Watch where you're stepping with those {item}!",
    "Rain by evening, my {limb} says so.",
    "Have you tried the {drink} at the Drowned Lantern? Tastes of {item}.",
    "The {ship} sails for the south isles at the {nth} bell.",
)
GESTURES = (
    "{who} haggles loudly over a basket of {item}.",
    "{who} coils a rope and whistles tunelessly.",
    "{who} raises a mug of {drink} and sings a verse of a sea shanty.",
    "{who} leans on a barrel and yawns.",
    "{who} counts {n} coins into a leather purse.",
    "{who} scrubs the deck of the {ship}.",
    "{who} rubs a sore {limb} and grumbles.",
)
FILL = {
    "item": (
        "cod",
        "mussels",
        "herring",
        "rope",
        "nets",
        "eels",
        "crabs",
        "salt",
        "oysters",
        "tar",
        "sailcloth",
        "lamp oil",
        "turnips",
        "apples",
        "mackerel",
        "squid",
    ),
    "ship": (
        "coaster",
        "Grey Heron",
        "Sea Wren",
        "salt barge",
        "Merry Anne",
        "whaler",
        "Tern",
        "ferry",
    ),
    "drink": ("ale", "cider", "rum", "grog", "mulled wine", "small beer"),
    "nth": ("sixth", "seventh", "eighth", "ninth", "tenth", "eleventh"),
    "kin": ("daughter", "son", "nephew", "niece", "sister"),
    "limb": ("knee", "elbow", "shoulder", "hip", "back"),
}
MOVES = ("{who} arrives from the {way}.", "{who} leaves to the {way}.")
WAYS = ("north", "south", "quay", "lane", "market", "tavern door")
AMBIENCE = {
    101: ("Gulls wheel and cry over the quay.", "Waves slap against the pilings."),
    102: ("Flies buzz over the fish stalls.", "A cart rattles over the cobbles."),
    103: ("The fire crackles in the hearth.", "Dice clatter on a table in the corner."),
    105: ("Nets sway gently on their drying poles.",),
    106: ("A loose shutter bangs in the wind.",),
    107: ("The lighthouse lamp turns slowly overhead.",),
}
BROADCASTS = (
    "The harbour bell tolls the hour.",
    "A foghorn moans somewhere out at sea.",
    "Thunder rolls in from the sea.",
)
FIGHT = (
    "{a} swings a fist at {b}.",
    "{b} staggers back and crashes into a table.",
    "{a} grabs {b} by the collar and shoves hard.",
    "{b} kicks out at {a}'s knee.",
    "{a} smashes a mug against {b}'s head.",
    "A bench goes over as {a} and {b} grapple.",
    "{b} draws a knife and slashes at {a}.",
    "{a} drives a knee into {b}'s stomach.",
    "Onlookers shout and scatter as {a} and {b} brawl.",
    "{b} lands a heavy blow on {a}'s jaw.",
)
SMUGGLING = (
    "The crates go under the nets tonight; the customs man has been paid.",
    "Leave the package in the third bollard, the hollow one, after dark.",
    "If the watch sergeant asks, we were never here. A silver each keeps him blind.",
    "Brandy and silk, no stamps. We move it before the tide.",
    "Tell the captain the lantern signal is two long, one short.",
)
CRIMES = ("Theft", "Assault", "Bribery", "Smuggling")
