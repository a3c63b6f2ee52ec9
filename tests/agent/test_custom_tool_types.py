"""Custom tools of every argument type, dispatched to the sim world's progs (FutureMUD 25, 27-30).

Each call goes the way the tool loop sends it: the turn's toolset finds the tool, `invoke` runs
it, `progs.convert` converts the model's JSON, and the sim resolves the result against its data.
The sim's Inspect* progs report what each argument resolved to.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from agent_doubles import call_offered

from storyteller_daemon.agent.tools.base import idempotency_key
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.registry import toolset, with_catalogue
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import CustomTool
from world_adapter.sim import SimWorld

MAREN, HOLT, AGNA = 1001, 2001, 2002
INSPECTED = [
    "Shard", "Zone", "Gender", "Race", "Culture", "Trait", "Clan", "Ethnicity", "ClanRank",
    "ClanAppointment", "ClanPaygrade", "Currency", "Exit", "DateTime", "TimeSpan", "Language",
    "Accent", "Merit", "MudDateTime", "Calendar", "Clock", "Knowledge", "Role", "Drug", "Shop",
]  # fmt: skip
CUSTOM_TOOLS = (
    CustomTool("InspectReferences", "Reports what its arguments resolved to.",
               "InspectReferences", False, tuple((p, f"A {p}.") for p in INSPECTED)),
    CustomTool("FormOfAddress", "Sir, madam or friend.", "FormOfAddress", False,
               (("Gender", "Their gender."),)),
    CustomTool("InspectOutfit", "Which outfit.", "InspectOutfit", False, (("Outfit", "o"),)),
    CustomTool("InspectOutfitItem", "Which outfit item.", "InspectOutfitItem", False,
               (("OutfitItem", "i"),)),
    CustomTool("InspectEffect", "Which effect.", "InspectEffect", False, (("Effect", "e"),)),
    CustomTool("EchoToRooms", "A line in several rooms.", "EchoToRooms", False,
               (("Rooms", "Where."), ("Text", "What."))),
)  # fmt: skip

# FutureMUD test 30's arguments, in its order: names and object forms.
EXPANDED_ARGUMENTS: dict[str, Any] = {
    "Shard": {"ShardName": "The Middle Sea"},
    "Zone": "Old Town",
    "Gender": {"Gender": "female"},
    "Race": {"RaceName": "Human"},
    "Culture": {"CultureName": "Harbour Ward"},
    "Trait": {"TraitName": "Seamanship"},
    "Clan": {"ClanName": "Wardens"},
    "Ethnicity": {"EthnicityName": "Coastfolk"},
    "ClanRank": {"Clan": "Wardens", "RankName": "Captain"},
    "ClanAppointment": {"ClanName": "Wardens", "AppointmentName": "Marshal"},
    "ClanPaygrade": {"Clan": "Wardens", "PaygradeAbbreviation": "G3"},
    "Currency": {"CurrencyName": "Harbour Crowns"},
    "Exit": {"ExitId": 22},
    "DateTime": {"Value": "2026-02-11T12:34:56Z"},
    "TimeSpan": {"TotalSeconds": 90},
    "Language": {"LanguageName": "Sea Cant"},
    "Accent": {"AccentName": "Northern Lilt"},
    "Merit": {"MeritName": "Sea Legs"},
    "MudDateTime": {"Value": "never"},
    "Calendar": {"Alias": "solar"},
    "Clock": {"Alias": "city"},
    "Knowledge": {"KnowledgeName": "Tide Lore"},
    "Role": {"RoleName": "Priest of the Tides"},
    "Drug": {"DrugName": "Poppy Tincture"},
    "Shop": {"ShopName": "Agna's Fish Stall"},
}


def _entity(kind: str, number: int, name: str) -> dict[str, Any]:
    return {"Id": number, "Name": name, "Type": kind}


@pytest.fixture
async def tooled(ctx: ToolContext) -> ToolContext:
    """A turn of a storyteller with the inspection tools, the world's catalogue loaded."""
    storyteller = replace(ctx.current, custom_tools=CUSTOM_TOOLS)
    return await with_catalogue(ctx.for_turn(storyteller, "turn-1"))


_call = call_offered


async def _result(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> Any:
    envelope = await _call(ctx, name, arguments)
    assert envelope["ok"] is True, envelope
    assert envelope["result"]["Function"] == name
    return envelope["result"]["Result"]


async def _error(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> str:
    envelope = await _call(ctx, name, arguments)
    assert envelope["ok"] is False, envelope
    return str(envelope["error"])


async def test_every_inspection_tool_is_valid_and_strict(tooled: ToolContext) -> None:
    trigger = Trigger(TriggerKind.DIRECT, datetime(2026, 5, 1, tzinfo=UTC), text="Look.")
    tools = toolset(tooled.current, trigger, tooled)
    assert not tools.refusals.keys() & {t.name.lower() for t in CUSTOM_TOOLS}
    inspect = tools.find("InspectReferences")
    assert inspect is not None
    assert inspect.parameters["required"] == INSPECTED
    assert inspect.parameters["properties"]["Exit"]["type"] == "integer"


async def test_execute_function_call_custom_tool_gender_conversion_parses_and_executes(
    tooled: ToolContext, world: SimWorld
) -> None:
    envelope = await _call(tooled, "FormOfAddress", {"Gender": "male"})
    assert envelope == {
        "ok": True,
        "result": {"Function": "FormOfAddress", "ReturnType": "Text", "Result": "sir"},
    }
    # The prog ran with exactly one argument, the canonical gender: its stored outcome answers
    # to the idempotency key of {"Gender": "male"} and nothing else.
    key = idempotency_key(tooled.turn_key, "FormOfAddress", {"Gender": "male"})
    replay = await world.execute_prog("FormOfAddress", {"Gender": "male"}, key)
    assert (replay.replayed, replay.value) == (True, "sir")
    assert await _result(tooled, "FormOfAddress", {"Gender": "F"}) == "madam"
    assert await _result(tooled, "FormOfAddress", {"Gender": {"GenderId": 4}}) == "friend"


async def test_execute_function_call_custom_tool_outfit_conversion_parses_and_executes(
    tooled: ToolContext,
) -> None:
    outfit = {"OwnerCharacterId": HOLT, "OutfitName": "Watch Uniform"}
    assert await _result(tooled, "InspectOutfit", {"Outfit": outfit}) == {
        "Name": "Watch Uniform",
        "Type": "Outfit",
        "OwnerId": HOLT,
        "ItemIds": [301, 302, 303],
    }
    other = {"CharacterId": MAREN, "Name": "festival best"}
    assert (await _result(tooled, "InspectOutfit", {"Outfit": other}))["Name"] == "Festival Best"
    gown = {"OwnerCharacterId": HOLT, "OutfitName": "Ball Gown"}
    assert await _error(tooled, "InspectOutfit", {"Outfit": gown}) == (
        "Character 2001 has no outfit named 'Ball Gown'."
    )
    nobody = {"OwnerCharacterId": 4242, "OutfitName": "Watch Uniform"}
    assert await _error(tooled, "InspectOutfit", {"Outfit": nobody}) == (
        "Parameter 'Outfit' (OwnerCharacterId): no character with id 4242 exists."
    )


async def test_execute_function_call_custom_tool_outfit_item_conversion_parses_and_executes(
    tooled: ToolContext,
) -> None:
    piece = {"OwnerCharacterId": MAREN, "OutfitName": "Harbour Kit", "ItemId": 312}
    assert await _result(tooled, "InspectOutfitItem", {"OutfitItem": piece}) == {
        "Type": "OutfitItem",
        "Outfit": "Harbour Kit",
        "OwnerId": MAREN,
        "ItemId": 312,
        "Item": "a bone-handled gutting knife",
    }
    boots = {"OwnerCharacterId": MAREN, "ItemId": 313}
    assert await _error(tooled, "InspectOutfitItem", {"OutfitItem": boots}) == (
        "Item 313 is in several outfits of character 1001 ('Harbour Kit', 'Festival Best'); "
        "supply OutfitName."
    )
    named = {**boots, "OutfitName": "Festival Best"}
    assert (await _result(tooled, "InspectOutfitItem", {"OutfitItem": named}))["Outfit"] == (
        "Festival Best"
    )
    sash = {"OwnerCharacterId": MAREN, "Id": 314}
    assert (await _result(tooled, "InspectOutfitItem", {"OutfitItem": sash}))["Outfit"] == (
        "Festival Best"
    )
    wrong = {"OwnerCharacterId": MAREN, "OutfitName": "Harbour Kit", "ItemId": 314}
    assert await _error(tooled, "InspectOutfitItem", {"OutfitItem": wrong}) == (
        "Outfit 'Harbour Kit' of character 1001 does not include item 314."
    )
    missing = {"OwnerCharacterId": MAREN, "ItemId": 9999}
    assert await _error(tooled, "InspectOutfitItem", {"OutfitItem": missing}) == (
        "Parameter 'OutfitItem' (ItemId): no item with id 9999 exists."
    )


@pytest.mark.parametrize(
    ("argument", "name", "owner"),
    [
        ({"EffectId": 777, "OwnerType": "character", "OwnerId": AGNA}, "Fish Scales",
         ("character", AGNA)),
        ({"EffectId": 777, "OwnerType": "room"}, "Reek of Fish", ("cell", 102)),
        ({"EffectId": 777, "OwnerId": 102}, "Reek of Fish", ("cell", 102)),
        ({"Id": 741, "Type": "shard"}, "Storm Season", ("shard", 1)),
        ({"EffectId": 731, "ownerType": "zone", "ownerId": 2}, "Curfew", ("zone", 2)),
        ({"EffectId": 711, "OwnerType": "item", "OwnerId": 301}, "Freshly Polished",
         ("item", 301)),
        (701, "Drunk", ("character", 1002)),
    ],
)  # fmt: skip
async def test_execute_function_call_custom_tool_effect_conversion_parses_and_executes(
    tooled: ToolContext, argument: Any, name: str, owner: tuple[str, int]
) -> None:
    result = await _result(tooled, "InspectEffect", {"Effect": argument})
    assert (result["Type"], result["Name"]) == ("Effect", name)
    assert (result["OwnerType"], result["OwnerId"]) == owner


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        (777, "Effect 777 is ambiguous across multiple owners. Supply OwnerType and OwnerId."),
        ({"EffectId": 701, "OwnerType": "pc", "OwnerId": 1003},
         "No effect with id 701 exists on character 1003."),
        ({"EffectId": 5000}, "No effect with id 5000 exists."),
        ({"EffectId": 701, "OwnerType": "ship"}, "Unknown effect OwnerType 'ship'"),
    ],
)  # fmt: skip
async def test_effects_that_fit_nothing_or_several_owners_are_refused(
    tooled: ToolContext, argument: Any, message: str
) -> None:
    assert message in await _error(tooled, "InspectEffect", {"Effect": argument})


async def test_execute_function_call_custom_tool_expanded_type_parsers_parses_and_executes(
    tooled: ToolContext,
) -> None:
    envelope = await _call(tooled, "InspectReferences", EXPANDED_ARGUMENTS)
    assert envelope["ok"] is True, envelope
    assert envelope["result"]["ReturnType"] == "Dictionary"
    assert envelope["result"]["Result"] == {
        "Shard": _entity("Shard", 1, "The Middle Sea"),
        "Zone": _entity("Zone", 2, "Old Town"),
        "Gender": "female",
        "Race": _entity("Race", 1, "Human"),
        "Culture": _entity("Culture", 1, "Harbour Ward"),
        "Trait": _entity("Trait", 2, "Seamanship"),
        "Clan": _entity("Clan", 1, "Wardens of the Harbour"),
        "Ethnicity": _entity("Ethnicity", 1, "Coastfolk"),
        "ClanRank": {**_entity("ClanRank", 14, "Captain"), "Clan": "Wardens of the Harbour"},
        "ClanAppointment": {
            **_entity("ClanAppointment", 31, "Marshal"),
            "Clan": "Wardens of the Harbour",
        },
        "ClanPaygrade": {
            **_entity("ClanPaygrade", 53, "Grade Three"),
            "Clan": "Wardens of the Harbour",
        },
        "Currency": _entity("Currency", 1, "Harbour Crowns"),
        "Exit": _entity("Exit", 22, "Copper Street - Guildhall"),
        "DateTime": "2026-02-11T12:34:56Z",
        "TimeSpan": "00:01:30",
        "Language": _entity("Language", 3, "Sea Cant"),
        "Accent": _entity("Accent", 3, "Northern Lilt"),
        "Merit": _entity("Merit", 1, "Sea Legs"),
        "MudDateTime": {"Type": "MudDateTime", "Never": True},
        "Calendar": _entity("Calendar", 1, "Harbour Solar Calendar"),
        "Clock": _entity("Clock", 1, "City Bells"),
        "Knowledge": _entity("Knowledge", 1, "Tide Lore"),
        "Role": _entity("Role", 3, "Priest of the Tides"),
        "Drug": _entity("Drug", 1, "Poppy Tincture"),
        "Shop": _entity("Shop", 1, "Agna's Fish Stall"),
    }


@pytest.mark.parametrize(
    ("parameter", "argument", "expected"),
    [
        ("Race", 3, _entity("Race", 3, "Selkie")),
        ("Race", "SEAL-FOLK", _entity("Race", 3, "Selkie")),
        ("Race", "selk", _entity("Race", 3, "Selkie")),
        ("Race", {"RaceId": "2"}, _entity("Race", 2, "Halfling")),
        ("Race", {"Id": 1}, _entity("Race", 1, "Human")),
        ("Zone", {"ZoneId": 1}, _entity("Zone", 1, "Harbour Ward")),
        ("Clan", "fishers' guild", _entity("Clan", 2, "Fishers' Guild")),
        ("ClanRank", 23, {**_entity("ClanRank", 23, "Captain"), "Clan": "Fishers' Guild"}),
        ("ClanRank", {"ClanId": 2, "Rank": "capt"},
         {**_entity("ClanRank", 23, "Captain"), "Clan": "Fishers' Guild"}),
        ("ClanPaygrade", "g2", {**_entity("ClanPaygrade", 52, "Grade Two"),
                                "Clan": "Wardens of the Harbour"}),
        ("ClanPaygrade", {"ClanName": "Fishers", "PaygradeName": "Double Share"},
         {**_entity("ClanPaygrade", 62, "Double Share"), "Clan": "Fishers' Guild"}),
        ("ClanAppointment", {"AppointmentId": 41},
         {**_entity("ClanAppointment", 41, "Guildmaster"), "Clan": "Fishers' Guild"}),
        ("Calendar", {"Alias": "harvest"}, _entity("Calendar", 2, "Temple Harvest Reckoning")),
        ("Calendar", "Harbour", _entity("Calendar", 1, "Harbour Solar Calendar")),
        ("Clock", {"ClockId": 1}, _entity("Clock", 1, "City Bells")),
        ("Currency", "crowns", _entity("Currency", 1, "Harbour Crowns")),
        ("Shop", None, None),
        ("Exit", 11, _entity("Exit", 11, "Harbour Quay - Warehouse Lane")),
        ("Gender", "nb", "non-binary"),
        ("Gender", 2, "male"),
        ("DateTime", "2026-02-11T22:34:56+10:00", "2026-02-11T12:34:56Z"),
        ("DateTime", {"UnixSeconds": 0}, "1970-01-01T00:00:00Z"),
        ("TimeSpan", "1.02:03:04", "1.02:03:04"),
        ("TimeSpan", {"Value": "00:30:00.5"}, "00:30:00.5000000"),
        ("MudDateTime", "solar 3/4/1051 14:20:15 HTT",
         {"Type": "MudDateTime", "Never": False, "Calendar": "Harbour Solar Calendar",
          "DateTime": "2:20:15 p.m. HTT on Netday, the 3rd of Rainmoon, 1051 A.F."}),
    ],
)  # fmt: skip
async def test_expanded_parsers_resolve_ids_names_aliases_and_prefixes(
    tooled: ToolContext, parameter: str, argument: Any, expected: Any
) -> None:
    arguments = {**EXPANDED_ARGUMENTS, parameter: argument}
    result = await _result(tooled, "InspectReferences", arguments)
    assert result[parameter] == expected


@pytest.mark.parametrize(
    ("parameter", "argument", "message"),
    [
        ("ClanRank", "Captain", "'Captain' is ambiguous for ClanRank; provide an id."),
        ("Race", "H", "'H' is ambiguous for Race; provide an id."),
        ("Race", "Dragon", "No Race named 'Dragon' exists."),
        ("Race", 99, "No Race with id 99 exists."),
        ("Zone", "Docks", "No Zone named 'Docks' exists."),
        ("Clan", {"ClanName": "Pirates"}, "No Clan named 'Pirates' exists."),
        ("Exit", 99, "Parameter 'Exit': no exit with id 99 exists."),
        ("ClanRank", {"ClanName": "Fishers", "RankId": 14},
         "ClanRank 14 does not belong to clan Fishers' Guild."),
        ("ClanPaygrade", {"Clan": "Fishers", "PaygradeAbbreviation": "G3"},
         "No ClanPaygrade with the abbreviation 'G3' exists."),
        ("MudDateTime", "solar 31/4/1051 10:00:00 HTT",
         "is not a date of Harbour Solar Calendar: Rainmoon has no day 31."),
        ("MudDateTime", "solar 3/4/1051 10:00:00 XYZ",
         "Clock City Bells has no time zone 'XYZ' (it has HTT, TBT)."),
        ("MudDateTime", "lunar 3/4/1051 10:00:00 HTT", "No calendar identified by 'lunar' exists."),
        ("MudDateTime", "tomorrow", "'tomorrow' is not a mud datetime"),
        ("Gender", "dragon", "Parameter 'Gender': 'dragon' is not a gender"),
        ("DateTime", {"Value": "soon"}, "Parameter 'DateTime': Expected datetime text argument"),
    ],
)  # fmt: skip
async def test_expanded_parsers_refuse_what_the_world_does_not_have(
    tooled: ToolContext, parameter: str, argument: Any, message: str
) -> None:
    arguments = {**EXPANDED_ARGUMENTS, parameter: argument}
    assert message in await _error(tooled, "InspectReferences", arguments)


async def test_collections_reach_the_world_as_lists(tooled: ToolContext, world: SimWorld) -> None:
    arguments = {"Rooms": [101, "102", {"Id": 101}], "Text": "Thunder rolls."}
    envelope = await _call(tooled, "EchoToRooms", arguments)
    assert envelope == {
        "ok": True,
        "result": {"Function": "EchoToRooms", "ReturnType": "Number", "Result": 2},
    }
    assert world.output_of(MAREN) == ["Thunder rolls."]
    assert world.output_of(AGNA) == ["Thunder rolls."]
    assert await _error(tooled, "EchoToRooms", {"Rooms": [999], "Text": "x"}) == (
        "Element 0 of parameter 'Rooms': no room with id 999 exists."
    )
    assert await _error(tooled, "EchoToRooms", {"Rooms": [101, None], "Text": "x"}) == (
        "Element 1 of parameter 'Rooms': null is not a room id (Location)."
    )
    assert await _error(tooled, "EchoToRooms", {"Rooms": 101, "Text": "x"}) == (
        "Parameter 'Rooms': Expected array value for parameter type Collection<Location>."
    )
