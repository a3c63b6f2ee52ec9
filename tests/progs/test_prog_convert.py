"""Argument conversion: every row of the prog type table, accepted forms and rejections."""

from __future__ import annotations

from typing import Any

import pytest

from progs.convert import ArgumentError, convert_argument, convert_arguments
from progs.types import ProgParameter, ProgType, UnsupportedParameterType, ValueType


def convert(type_text: str, value: Any) -> Any:
    return convert_argument(ValueType.parse(type_text), value)


def rejection(type_text: str, value: Any) -> str:
    with pytest.raises(ArgumentError) as caught:
        convert(type_text, value)
    assert str(caught.value) == caught.value.message
    return caught.value.message


@pytest.mark.parametrize(
    ("type_text", "value", "expected"),
    [
        ("Boolean", True, True),
        ("Boolean", False, False),
        ("Boolean", "true", True),
        ("Boolean", " False ", False),
        ("Number", 3, 3),
        ("Number", 2.5, 2.5),
        ("Number", 4.0, 4),
        ("Number", "12", 12),
        ("Number", " -0.25 ", -0.25),
        ("Number", "1e3", 1000),
        ("Number", 12345678901234567890, 12345678901234567890),
        ("Number", 1e300, 1e300),
        ("Text", "hello", "hello"),
        ("Text", "", ""),
        ("Text", 42, "42"),
        ("Text", True, "true"),
        ("Text", {"a": [1, "é"]}, '{"a": [1, "é"]}'),
    ],
)
def test_scalar_forms_convert(type_text: str, value: Any, expected: Any) -> None:
    converted = convert(type_text, value)
    assert converted == expected
    assert type(converted) is type(expected)


@pytest.mark.parametrize(
    ("type_text", "value", "message"),
    [
        ("Boolean", "yes", "Expected boolean argument."),
        ("Boolean", 1, "Expected boolean argument."),
        ("Boolean", None, "Expected boolean argument."),
        ("Number", True, "Expected numeric argument."),
        ("Number", "twelve", "Expected numeric argument."),
        ("Number", "1_000", "Expected numeric argument."),
        ("Number", float("nan"), "Expected numeric argument."),
        ("Number", float("inf"), "Expected numeric argument."),
        ("Number", "1e400", "Expected numeric argument."),
        ("Number", None, "Expected numeric argument."),
        ("Number", [1], "Expected numeric argument."),
        ("Text", None, "Expected text argument."),
        ("Text", float("nan"), "Expected text argument."),
    ],
)
def test_scalar_rejections(type_text: str, value: Any, message: str) -> None:
    assert rejection(type_text, value) == message


def test_custom_tool_gender_conversion_parses_male() -> None:
    """FutureMUD's ExecuteFunctionCall_CustomToolGenderConversion_ParsesAndExecutes, conversion."""
    gender = ProgParameter("gender", ValueType(ProgType.GENDER))

    assert convert_arguments([gender], {"gender": "male"}) == {"gender": "male"}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("male", "male"),
        ("M", "male"),
        ("female", "female"),
        ("f", "female"),
        ("Neuter", "neuter"),
        ("n", "neuter"),
        ("non-binary", "non-binary"),
        ("nonbinary", "non-binary"),
        ("NB", "non-binary"),
        (" indeterminate ", "indeterminate"),
        ("unknown", "indeterminate"),
        (0, "indeterminate"),
        (1, "neuter"),
        (2, "male"),
        (3, "female"),
        (4, "non-binary"),
        ({"Gender": "female"}, "female"),
        ({"GenderId": 2}, "male"),
        ({"Gender": 3}, "female"),
        ({"Value": "nb"}, "non-binary"),
        ({"Id": 1}, "neuter"),
        ({"ID": "4"}, "non-binary"),
        ({"id": 0}, "indeterminate"),
        ({"Name": "m"}, "male"),
        ({"Gender": None, "Name": "f"}, "female"),
    ],
)
def test_gender_forms(value: Any, expected: str) -> None:
    assert convert("Gender", value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "bloke",
            "'bloke' is not a gender; expected male, female, neuter, non-binary or indeterminate.",
        ),
        (5, "Gender number 5 is not one of 0 to 4."),
        ({"GenderId": -1}, "Gender number -1 is not one of 0 to 4."),
        ({"Other": "male"}, "Gender arguments must include a Gender value."),
        (True, "Expected a gender argument: male, female, neuter, non-binary or indeterminate."),
        (None, "Expected a gender argument: male, female, neuter, non-binary or indeterminate."),
    ],
)
def test_gender_rejections(value: Any, message: str) -> None:
    assert rejection("Gender", value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-02-11T12:34:56Z", "2026-02-11T12:34:56Z"),
        ("2026-02-11T12:34:56", "2026-02-11T12:34:56Z"),
        ("2026-02-11 22:34:56+10:00", "2026-02-11T12:34:56Z"),
        ("2026-02-11T12:34:56.25Z", "2026-02-11T12:34:56.250000Z"),
        ("2026-02-11", "2026-02-11T00:00:00Z"),
        (1_700_000_000, "2023-11-14T22:13:20Z"),
        (1_700_000_000.5, "2023-11-14T22:13:20.500000Z"),
        (0, "1970-01-01T00:00:00Z"),
        ({"UnixSeconds": 0}, "1970-01-01T00:00:00Z"),
        ({"EpochSeconds": "60"}, "1970-01-01T00:01:00Z"),
        ({"Timestamp": 120}, "1970-01-01T00:02:00Z"),
        ({"Timestamp": "2026-02-11T12:34:56Z"}, "2026-02-11T12:34:56Z"),
        ({"Value": "2026-02-11T12:34:56Z"}, "2026-02-11T12:34:56Z"),
        ({"DateTime": "2026-02-11T12:34:56Z"}, "2026-02-11T12:34:56Z"),
        ({"Iso8601": "2026-02-11T12:34:56Z"}, "2026-02-11T12:34:56Z"),
    ],
)
def test_datetime_forms(value: Any, expected: str) -> None:
    assert convert("DateTime", value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "next tuesday",
            "Expected datetime text argument: 'next tuesday' is not an ISO-8601 datetime.",
        ),
        (True, "Expected datetime text argument."),
        (None, "Expected datetime text argument."),
        (10**12, "Unix time 1000000000000 is out of range."),
        ({"Other": 1}, "DateTime arguments must include UnixSeconds or an ISO-8601 Value."),
        ({"Value": 5}, "Property 'Value' must contain text."),
    ],
)
def test_datetime_rejections(value: Any, message: str) -> None:
    assert rejection("DateTime", value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("00:30:00", "00:30:00"),
        ("1:02:03", "01:02:03"),
        ("12:30", "12:30:00"),
        ("1.02:03:04", "1.02:03:04"),
        ("1.02:03", "1.02:03:00"),
        ("3:04:05:06", "3.04:05:06"),
        ("00:00:01.5", "00:00:01.5000000"),
        ("-00:00:01", "-00:00:01"),
        ("PT1H30M", "01:30:00"),
        ("P1DT2H", "1.02:00:00"),
        ("pt0.5s", "00:00:00.5000000"),
        ("P2W", "14.00:00:00"),
        ("-PT10S", "-00:00:10"),
        ("90", "00:01:30"),
        (90, "00:01:30"),
        (0.25, "00:00:00.2500000"),
        (-60, "-00:01:00"),
        ({"TotalSeconds": 90}, "00:01:30"),
        ({"Seconds": "3600"}, "01:00:00"),
        ({"Value": "00:30:00"}, "00:30:00"),
        ({"TimeSpan": "1.00:00:00"}, "1.00:00:00"),
        ({"Duration": "PT5M"}, "00:05:00"),
    ],
)
def test_timespan_forms(value: Any, expected: str) -> None:
    assert convert("TimeSpan", value) == expected


@pytest.mark.parametrize(
    "text", ["25:00:00", "00:60:00", "00:00:60", "half an hour", "P", "PT", "P1Y", ":30", ""]
)
def test_timespan_text_rejections(text: str) -> None:
    message = f"Expected timespan text argument: '{text}' is not a TimeSpan such as 00:30:00."
    assert rejection("TimeSpan", text) == message


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "Expected timespan text argument."),
        (False, "Expected timespan text argument."),
        (1e300, "A TimeSpan of 1e+300 seconds is out of range."),
        ({"TotalSeconds": "long"}, "Property 'TotalSeconds' must contain a number of seconds."),
        ({"Other": 1}, "TimeSpan arguments must include TotalSeconds or a Value."),
    ],
)
def test_timespan_rejections(value: Any, message: str) -> None:
    assert rejection("TimeSpan", value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("never", "never"),
        ("Never", "never"),
        (" 3rd Rainfall 1200 ", "3rd Rainfall 1200"),
        ({"Value": "never"}, "never"),
        ({"MudDateTime": "High Sun on 3rd Rainfall 1200"}, "High Sun on 3rd Rainfall 1200"),
        ({"DateTime": "never"}, "never"),
    ],
)
def test_mud_datetime_forms(value: Any, expected: str) -> None:
    assert convert("MudDateTime", value) == expected


@pytest.mark.parametrize("value", ["", "  ", None, 12, {"Other": "never"}])
def test_mud_datetime_rejections(value: Any) -> None:
    assert rejection("MudDateTime", value) == "Expected mud datetime text argument."


@pytest.mark.parametrize("type_text", ["Character", "Location", "Item", "Exit"])
@pytest.mark.parametrize("value", [77, 77.0, "77", " 77 ", {"Id": 77}, {"ID": "77"}, {"id": 77}])
def test_id_forms(type_text: str, value: Any) -> None:
    converted = convert(type_text, value)
    assert converted == 77
    assert type(converted) is int


@pytest.mark.parametrize("value", [{"ExitId": 22}, {"ExitID": "22"}, {"Exit": 22}])
def test_exit_object_forms(value: Any) -> None:
    assert convert("Exit", value) == 22


@pytest.mark.parametrize("type_text", ["Character", "Location", "Item"])
@pytest.mark.parametrize("value", ["Bob", 1.5, True, [], {"Name": "Bob"}])
def test_id_rejections(type_text: str, value: Any) -> None:
    message = f"Expected an id argument for parameter type {type_text}."
    assert rejection(type_text, value) == message


@pytest.mark.parametrize(
    ("type_text", "value", "message"),
    [
        ("Character", 0, "Character ids are positive integers; 0 is not one."),
        ("Item", "-3", "Item ids are positive integers; -3 is not one."),
        ("Location", 2**63, f"Location ids are positive integers; {2**63} is not one."),
        ("Character", {"Id": "Bob"}, "Property 'Id' must contain an integer id."),
        ("Exit", "north", "Expected Exit as an id or object containing ExitId."),
        ("Exit", {"Direction": "north"}, "Expected Exit as an id or object containing ExitId."),
    ],
)
def test_id_range_and_object_rejections(type_text: str, value: Any, message: str) -> None:
    assert rejection(type_text, value) == message


@pytest.mark.parametrize(
    ("type_text", "value", "expected"),
    [
        ("Shard", {"ShardName": "Prime"}, {"name": "Prime"}),
        ("Zone", "Harbour District", "Harbour District"),
        ("Zone", " Harbour ", "Harbour"),
        ("Zone", 5, 5),
        ("Zone", "5", 5),
        ("Zone", {"ZoneId": 5}, {"id": 5}),
        ("Zone", {"Zone": "Harbour"}, {"name": "Harbour"}),
        ("Race", {"RaceName": "Elf"}, {"name": "Elf"}),
        ("Race", {"Id": 3, "Name": "Elf"}, {"id": 3}),
        ("Culture", {"CultureName": "Coastal"}, {"name": "Coastal"}),
        ("Trait", {"TraitName": "Strength"}, {"name": "Strength"}),
        ("Clan", {"ClanName": "Wardens"}, {"name": "Wardens"}),
        ("Clan", {"Clan": "Wardens"}, {"name": "Wardens"}),
        ("Ethnicity", {"EthnicityName": "Islander"}, {"name": "Islander"}),
        ("Currency", {"CurrencyName": "Crowns"}, {"name": "Crowns"}),
        ("Language", {"LanguageName": "Common"}, {"name": "Common"}),
        ("Accent", {"AccentName": "Northern"}, {"name": "Northern"}),
        ("Merit", {"MeritName": "Keen Eyes"}, {"name": "Keen Eyes"}),
        ("Calendar", {"Alias": "solar"}, {"name": "solar"}),
        ("Calendar", {"CalendarId": 2}, {"id": 2}),
        ("Clock", {"Alias": "city"}, {"name": "city"}),
        ("Knowledge", {"KnowledgeName": "Herbalism"}, {"name": "Herbalism"}),
        ("Role", {"RoleName": "Noble"}, {"name": "Noble"}),
        ("Drug", {"DrugName": "Poppy"}, {"name": "Poppy"}),
        ("Shop", {"ShopName": "Chandlery"}, {"name": "Chandlery"}),
        ("Shop", {"name": "Chandlery"}, {"name": "Chandlery"}),
        ("Shop", {"ShopId": None, "ShopName": "Chandlery"}, {"name": "Chandlery"}),
    ],
)
def test_named_forms(type_text: str, value: Any, expected: Any) -> None:
    assert convert(type_text, value) == expected


@pytest.mark.parametrize(
    ("type_text", "value", "expected"),
    [
        (
            "ClanRank",
            {"Clan": "Wardens", "RankName": "Captain"},
            {"name": "Captain", "clan": "Wardens"},
        ),
        ("ClanRank", {"ClanId": 4, "Rank": "Captain"}, {"name": "Captain", "clan": 4}),
        ("ClanRank", {"Clan": 4, "ClanRankId": 9}, {"id": 9, "clan": 4}),
        (
            "ClanRank",
            {"Clan": "Wardens", "Name": "Captain"},
            {"name": "Captain", "clan": "Wardens"},
        ),
        ("ClanRank", {"RankId": 9}, {"id": 9}),
        ("ClanRank", "Captain", "Captain"),
        (
            "ClanAppointment",
            {"ClanName": "Wardens", "AppointmentName": "Marshal"},
            {"name": "Marshal", "clan": "Wardens"},
        ),
        ("ClanAppointment", {"AppointmentId": "12"}, {"id": 12}),
        (
            "ClanPaygrade",
            {"Clan": "Wardens", "PaygradeAbbreviation": "G3"},
            {"abbreviation": "G3", "clan": "Wardens"},
        ),
        ("ClanPaygrade", {"Abbreviation": "G3"}, {"abbreviation": "G3"}),
        ("ClanPaygrade", {"PaygradeName": "Grade Three"}, {"name": "Grade Three"}),
        ("ClanPaygrade", "G3", "G3"),
    ],
)
def test_clan_scoped_forms(type_text: str, value: Any, expected: Any) -> None:
    assert convert(type_text, value) == expected


@pytest.mark.parametrize(
    ("type_text", "value", "message"),
    [
        ("Race", "", "Expected Race as an id, name, or object argument."),
        ("Race", True, "Expected Race as an id, name, or object argument."),
        ("Race", 0, "Race ids are positive integers; 0 is not one."),
        ("Race", {"RaceId": "elf"}, "Property 'RaceId' must contain an integer id."),
        ("Race", {"RaceName": 5}, "Property 'RaceName' must contain text."),
        (
            "Race",
            {"Kind": "elf"},
            "Race arguments must include one of [RaceId, Id, ID, id] "
            "or [RaceName, Race, Name, name].",
        ),
        (
            "Clock",
            {},
            "Clock arguments must include one of [ClockId, Id, ID, id] "
            "or [ClockName, Clock, Alias, Name, name].",
        ),
        (
            "ClanPaygrade",
            {"Clan": 3},
            "ClanPaygrade arguments must include one of [ClanPaygradeId, PaygradeId, Id, ID, "
            "id] or [ClanPaygradeName, PaygradeName, Paygrade, Name, name, "
            "PaygradeAbbreviation, Abbreviation].",
        ),
        ("ClanRank", {"Clan": [], "Rank": "x"}, "Property 'Clan' must contain a clan id or name."),
        ("ClanRank", {"ClanId": "x", "Rank": "x"}, "Property 'ClanId' must contain an integer id."),
        ("ClanRank", {"Clan": -2, "Rank": "x"}, "Clan ids are positive integers; -2 is not one."),
    ],
)
def test_named_rejections(type_text: str, value: Any, message: str) -> None:
    assert rejection(type_text, value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"EffectId": 777, "OwnerType": "character", "OwnerId": 202},
            {"effect_id": 777, "owner_type": "character", "owner_id": 202},
        ),
        (777, {"effect_id": 777, "owner_type": None, "owner_id": None}),
        ("777", {"effect_id": 777, "owner_type": None, "owner_id": None}),
        ({"Id": 5}, {"effect_id": 5, "owner_type": None, "owner_id": None}),
        (
            {"EffectId": 5, "OwnerType": None, "OwnerId": None},
            {"effect_id": 5, "owner_type": None, "owner_id": None},
        ),
        (
            {"id": 5, "type": "Room", "ownerId": 9},
            {"effect_id": 5, "owner_type": "cell", "owner_id": 9},
        ),
        ({"ID": 5, "Type": "pc"}, {"effect_id": 5, "owner_type": "character", "owner_id": None}),
        (
            {"EffectId": 5, "ownerType": "location", "OwnerCharacterId": 3},
            {"effect_id": 5, "owner_type": "cell", "owner_id": 3},
        ),
        ({"EffectId": 5, "CharacterId": 3}, {"effect_id": 5, "owner_type": None, "owner_id": 3}),
        (
            {"EffectId": 5, "OwnerType": "char", "OwnerId": 1},
            {"effect_id": 5, "owner_type": "character", "owner_id": 1},
        ),
        (
            {"EffectId": 5, "OwnerType": "item", "OwnerId": 1},
            {"effect_id": 5, "owner_type": "item", "owner_id": 1},
        ),
        (
            {"EffectId": 5, "OwnerType": "zone", "OwnerId": 1},
            {"effect_id": 5, "owner_type": "zone", "owner_id": 1},
        ),
        (
            {"EffectId": 5, "OwnerType": "shard", "OwnerId": 1},
            {"effect_id": 5, "owner_type": "shard", "owner_id": 1},
        ),
    ],
)
def test_effect_forms(value: Any, expected: dict[str, Any]) -> None:
    assert convert("Effect", value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"OwnerId": 3}, "Effect arguments must include EffectId."),
        ("sleepy", "Effect arguments must be an id or an object containing EffectId."),
        (
            {"EffectId": 1, "OwnerType": "moon"},
            "Unknown effect OwnerType 'moon'; expected character, item, cell, zone or shard.",
        ),
        ({"EffectId": 1, "OwnerId": 0}, "Owner ids are positive integers; 0 is not one."),
    ],
)
def test_effect_rejections(value: Any, message: str) -> None:
    assert rejection("Effect", value) == message


@pytest.mark.parametrize(
    "value",
    [
        {"OwnerCharacterId": 200, "OutfitName": "Guard Uniform"},
        {"CharacterId": "200", "Name": " Guard Uniform "},
        {"OwnerId": 200, "OutfitName": "Guard Uniform"},
    ],
)
def test_outfit_forms(value: Any) -> None:
    expected = {"owner_character_id": 200, "outfit_name": "Guard Uniform"}
    assert convert("Outfit", value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (200, "Outfit arguments must be an object with OwnerCharacterId and OutfitName."),
        ({"OutfitName": "Guard Uniform"}, "Outfit arguments must include OwnerCharacterId."),
        ({"OwnerCharacterId": 200}, "Outfit arguments must include OutfitName."),
        ({"OwnerCharacterId": 200, "OutfitName": " "}, "Outfit arguments must include OutfitName."),
    ],
)
def test_outfit_rejections(value: Any, message: str) -> None:
    assert rejection("Outfit", value) == message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"OwnerCharacterId": 201, "OutfitName": "Harbour Kit", "ItemId": 999},
            {"owner_character_id": 201, "item_id": 999, "outfit_name": "Harbour Kit"},
        ),
        (
            {"CharacterId": 201, "Id": 999, "OutfitName": None},
            {"owner_character_id": 201, "item_id": 999, "outfit_name": None},
        ),
        (
            {"OwnerId": 201, "id": "999", "Name": "Harbour Kit"},
            {"owner_character_id": 201, "item_id": 999, "outfit_name": "Harbour Kit"},
        ),
    ],
)
def test_outfit_item_forms(value: Any, expected: dict[str, Any]) -> None:
    assert convert("OutfitItem", value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([201, 999], "OutfitItem arguments must be an object with OwnerCharacterId and ItemId."),
        ({"ItemId": 999}, "OutfitItem arguments must include OwnerCharacterId."),
        ({"OwnerCharacterId": 201}, "OutfitItem arguments must include ItemId."),
    ],
)
def test_outfit_item_rejections(value: Any, message: str) -> None:
    assert rejection("OutfitItem", value) == message


@pytest.mark.parametrize(
    "type_text",
    [t.value for t in ProgType if t.value not in ("Void", "Dictionary", "Anything")]
    + ["Collection<Character>"],
)
def test_null_is_accepted_only_for_reference_types(type_text: str) -> None:
    value_types = {"Text", "Number", "Boolean", "Gender", "DateTime", "TimeSpan", "MudDateTime"}
    if type_text in value_types or type_text.startswith("Collection<"):
        rejection(type_text, None)
    else:
        assert convert(type_text, None) is None


def test_collection_converts_each_element() -> None:
    assert convert("Collection<Character>", [1, "2", {"Id": 3}, None]) == [1, 2, 3, None]
    assert convert("Collection<Gender>", ["m", 3]) == ["male", "female"]
    assert convert("Collection<Text>", []) == []


@pytest.mark.parametrize(
    ("type_text", "value", "message"),
    [
        (
            "Collection<Number>",
            "1,2",
            "Expected array value for parameter type Collection<Number>.",
        ),
        (
            "Collection<Number>",
            {"0": 1},
            "Expected array value for parameter type Collection<Number>.",
        ),
        (
            "Collection<Character>",
            [1, 0],
            "Element 1 of Collection<Character>: Character ids are positive integers; 0 is not "
            "one.",
        ),
        (
            "Collection<Boolean>",
            [True, None],
            "Element 1 of Collection<Boolean>: Expected boolean argument.",
        ),
    ],
)
def test_collection_rejections(type_text: str, value: Any, message: str) -> None:
    assert rejection(type_text, value) == message


@pytest.mark.parametrize("type_text", ["Void", "Dictionary", "Anything", "Collection<Anything>"])
def test_unsupported_types_cannot_be_converted(type_text: str) -> None:
    with pytest.raises(UnsupportedParameterType, match="cannot be supplied by a tool call"):
        convert(type_text, 1)


PARAMETERS = [
    ProgParameter("target", ValueType(ProgType.CHARACTER)),
    ProgParameter("loud", ValueType(ProgType.BOOLEAN)),
    ProgParameter("words", ValueType(ProgType.TEXT, collection=True)),
]


def test_convert_arguments_in_parameter_order() -> None:
    converted = convert_arguments(
        PARAMETERS, {"words": ["hi"], "loud": "true", "target": {"Id": "12"}}
    )

    assert converted == {"target": 12, "loud": True, "words": ["hi"]}
    assert list(converted) == ["target", "loud", "words"]


def test_convert_arguments_with_no_parameters() -> None:
    assert convert_arguments([], {}) == {}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"loud": True, "words": []}, "Missing required custom-tool parameter 'target'."),
        ({"target": 1, "words": []}, "Missing required custom-tool parameter 'loud'."),
        (
            {"target": 1, "loud": True, "words": [], "volume": 11},
            "Unknown custom-tool parameter 'volume'.",
        ),
        (
            {"target": 1, "loud": True, "words": [], "Target": 2, "x": 0},
            "Unknown custom-tool parameters 'Target', 'x'.",
        ),
        (
            {"target": 1, "loud": "maybe", "words": []},
            "Parameter 'loud': Expected boolean argument.",
        ),
        (
            {"target": 1, "loud": True, "words": ["a", None]},
            "Parameter 'words': Element 1 of Collection<Text>: Expected text argument.",
        ),
        ([1, True, []], "Custom-tool arguments must be a JSON object."),
    ],
)
def test_convert_arguments_rejections(arguments: Any, message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        convert_arguments(PARAMETERS, arguments)
    assert caught.value.message == message


def test_convert_arguments_rejects_unsupported_parameter_types() -> None:
    parameters = [ProgParameter("bag", ValueType(ProgType.DICTIONARY))]

    with pytest.raises(UnsupportedParameterType) as caught:
        convert_arguments(parameters, {"bag": {}})
    assert caught.value.value_type == ValueType(ProgType.DICTIONARY)
