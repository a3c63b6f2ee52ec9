"""The harbour town's characters: three players and the NPCs who keep the harbour busy.

Maren and Ilsa changed their plans days before the world starts, Osric months before (outside
a 90-day window); Sergeant Holt, an NPC, has plans set by the builders.
"""

from __future__ import annotations

from datetime import timedelta

from world_adapter.sim.people import CharacterSheet, PlanSheet

MAREN_ID = 1001
OSRIC_ID = 1002
ILSA_ID = 1003
HOLT_ID = 2001
AGNA_ID = 2002
PER_ID = 2003
WREN_ID = 2004
COYLE_ID = 2005

HARBOUR_TOWN_PEOPLE: tuple[CharacterSheet, ...] = (
    CharacterSheet(
        id=MAREN_ID,
        name="Maren Tidewell",
        gender="Female",
        race="Human",
        ethnicity="Coastfolk",
        culture="Harbour Ward",
        age=27,
        age_category="Young Adult",
        birthday="the 14th of Rainmoon, 1024",
        short_description="a weather-tanned woman with salt-stiff braids",
        full_description=(
            "Maren is lean and sun-browned, with the rope-scarred hands of someone raised on the "
            "boats. Her dark hair is bound in two salt-stiff braids, and a bone-handled gutting "
            "knife hangs at her hip. She watches the water more than the people around her."
        ),
        is_player=True,
        start_room_id=101,
        accent="a clipped harbour accent",
        profile=(("Reputation", "Well liked on the quay"), ("Faction", "Fishers' Guild")),
        plans=PlanSheet(
            "Find out who has been cutting the nets on Net-Menders' Row.",
            "Buy a boat of her own before the autumn storms.",
            timedelta(days=2),
        ),
    ),
    CharacterSheet(
        id=OSRIC_ID,
        name="Osric Vell",
        gender="Male",
        race="Human",
        ethnicity="Old Town Vellish",
        culture="Old Town Gentry",
        age=44,
        age_category="Adult",
        birthday="the 2nd of Frostfall, 1007",
        short_description="a paunchy man in a threadbare velvet doublet",
        full_description=(
            "Osric carries himself like a man who once had money: his velvet doublet is "
            "well cut but shiny at the elbows, and his rings are paste. His cheeks are "
            "flushed, his eyes quick, and he laughs a little too loudly at his own jokes."
        ),
        is_player=True,
        start_room_id=103,
        accent="a drawling Old Town accent",
        profile=(("Reputation", "Owes money to half the tavern"), ("Faction", "None")),
        plans=PlanSheet(
            "Win back the signet ring he lost at dice in the Drowned Lantern.",
            "Restore the Vell family's standing among the Old Town gentry.",
            timedelta(days=120),
        ),
    ),
    CharacterSheet(
        id=ILSA_ID,
        name="Ilsa Brand",
        gender="Female",
        race="Human",
        ethnicity="Northern",
        culture="Temple Acolyte",
        age=19,
        age_category="Young Adult",
        birthday="the 30th of Highsun, 1032",
        short_description="a freckled young woman in a sea-green acolyte's robe",
        full_description=(
            "Ilsa is tall and freckled, her copper hair cropped short in the temple fashion. "
            "Her sea-green robe is neatly mended, a string of shell prayer beads wound twice "
            "around one wrist. She has the earnest frown of someone still learning the rites."
        ),
        is_player=True,
        start_room_id=202,
        accent="a soft northern lilt",
        profile=(("Reputation", "Earnest and trusted"), ("Faction", "Temple of the Tides")),
        plans=PlanSheet(
            "Gather shell offerings for the Festival of Nets.",
            "Be ordained a priestess of the Tides.",
            timedelta(days=10),
        ),
    ),
    CharacterSheet(
        id=HOLT_ID,
        name="Watch Sergeant Holt",
        gender="Male",
        race="Human",
        ethnicity="Coastfolk",
        culture="Harbour Ward",
        age=52,
        age_category="Adult",
        birthday="the 9th of Seedtime, 999",
        short_description="a broad, grey-bearded watch sergeant in a dented breastplate",
        full_description=(
            "Holt is built like a mooring post, grey-bearded and heavy-shouldered, his "
            "breastplate dented from years of tavern brawls. A cudgel hangs at his belt and a "
            "brass sergeant's whistle on a cord around his neck."
        ),
        is_player=False,
        start_room_id=203,
        accent="a gruff harbour accent",
        profile=(("Reputation", "Stern but fair"), ("Faction", "Harbour Ward Watch")),
        plans=PlanSheet(
            "Catch the cutpurse working Warehouse Lane.",
            "Retire to a cottage on the cliffs with his pension.",
            timedelta(days=1),
        ),
    ),
    CharacterSheet(
        id=AGNA_ID,
        name="Fishwife Agna",
        gender="Female",
        race="Human",
        ethnicity="Coastfolk",
        culture="Harbour Ward",
        age=61,
        age_category="Elder",
        birthday="the 21st of Rainmoon, 990",
        short_description="a stout, red-armed fishwife in a scale-spattered apron",
        full_description=(
            "Agna is stout and weathered, her forearms red from brine and her apron spattered "
            "with scales. She has a voice that carries across the whole market and an opinion "
            "on everyone who passes her table."
        ),
        is_player=False,
        start_room_id=102,
        accent="a broad harbour accent",
        profile=(("Reputation", "Knows every rumour on the quay"), ("Faction", "Fish Market")),
    ),
    CharacterSheet(
        id=PER_ID,
        name="Dockhand Per",
        gender="Male",
        race="Human",
        ethnicity="Coastfolk",
        culture="Harbour Ward",
        age=23,
        age_category="Young Adult",
        birthday="the 5th of Leafturn, 1028",
        short_description="a rangy young dockhand with rope-burned palms",
        full_description=(
            "Per is all elbows and sinew, his shirt dark with sweat and his palms burned raw "
            "from hauling lines. He whistles tunelessly while he works and rarely stops moving."
        ),
        is_player=False,
        start_room_id=101,
        accent="a clipped harbour accent",
        profile=(("Reputation", "Hard-working, easily led"), ("Faction", "Dockhands")),
    ),
    CharacterSheet(
        id=WREN_ID,
        name="Wren the cutpurse",
        gender="Female",
        race="Human",
        ethnicity="Coastfolk",
        culture="Harbour Ward",
        age=16,
        age_category="Youth",
        birthday="the 17th of Frostfall, 1035",
        short_description="a slight, sharp-eyed girl in an oversized coat",
        full_description=(
            "Wren is small and quick, swallowed by a patched coat several sizes too big, its "
            "sleeves rolled back over nimble fingers. Her eyes never settle, flicking from purse "
            "to purse as people pass."
        ),
        is_player=False,
        start_room_id=106,
        accent="a street-quick harbour accent",
        profile=(("Reputation", "Wanted for petty theft"), ("Faction", "Lane Rats")),
    ),
    CharacterSheet(
        id=COYLE_ID,
        name="Harbourmaster Coyle",
        gender="Male",
        race="Human",
        ethnicity="Old Town Vellish",
        culture="Old Town Gentry",
        age=58,
        age_category="Adult",
        birthday="the 1st of Highsun, 993",
        short_description="a gaunt, ink-stained harbourmaster in a blue greatcoat",
        full_description=(
            "Coyle is gaunt and stooped, his blue greatcoat faded at the shoulders and his "
            "fingers stained with ink from the mooring book. He squints at everyone as though "
            "reading a faded manifest."
        ),
        is_player=False,
        start_room_id=108,
        accent="a precise Old Town accent",
        profile=(("Reputation", "Incorruptible, or so he claims"), ("Faction", "Harbour Office")),
    ),
)
