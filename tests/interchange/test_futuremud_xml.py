"""FutureMUD XML interchange: surveillance, tool calls and restrictions, read safely."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from storyteller_daemon.domain.storytellers import CustomTool, ReasoningEffort, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml import (
    MAX_XML_BYTES,
    ToolCallsDefinition,
    apply_tool_calls,
    parse_restrictions,
    parse_surveillance,
    parse_tool_calls,
    render_surveillance,
    render_tool_calls,
)

DATA = Path(__file__).parent.parent / "data" / "xml"
SURVEILLANCE_EXAMPLE = DATA / "surveillance_example.xml"
TOOL_CALLS_EXAMPLE = DATA / "tool_calls_example.xml"

EMPTY_STRATEGY = "<Definition><Zones /><IncludedCells /><ExcludedCells /></Definition>"

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<ToolCalls><ToolCall><Name>Laugh</Name><Prog>&lol9;</Prog></ToolCall></ToolCalls>"""


def _tool_calls(body: str) -> str:
    return f"<ToolCalls>{body}</ToolCalls>"


def _tool(
    name: str = "RecordCue",
    prog: str = "<Prog>12</Prog>",
    extra: str = "",
) -> str:
    return f"<ToolCall><Name><![CDATA[{name}]]></Name>{prog}{extra}</ToolCall>"


def _message(excinfo: pytest.ExceptionInfo[InterchangeError]) -> str:
    return str(excinfo.value)


# ---------------------------------------------------------------- surveillance


def test_surveillance_literal_example_parses() -> None:
    surveillance = parse_surveillance(SURVEILLANCE_EXAMPLE.read_bytes())

    assert surveillance == Surveillance(
        zones=frozenset({100}), included=frozenset({3}), excluded=frozenset({2})
    )


def test_save_definition_round_trips_through_constructor() -> None:
    original = Surveillance(
        zones=frozenset({100}), included=frozenset({3}), excluded=frozenset({2})
    )

    rendered = render_surveillance(original)
    restored = parse_surveillance(rendered)

    assert rendered.strip() == SURVEILLANCE_EXAMPLE.read_text().strip()
    assert restored == original
    assert restored.zones == {100}
    assert restored.included == {3}
    assert restored.excluded == {2}
    assert restored.cells({100: [1, 2]}) == {1, 3}


def test_render_surveillance_lists_ids_ascending() -> None:
    rendered = render_surveillance(
        Surveillance(zones=frozenset({30, 4, 200}), excluded=frozenset({9, 1}))
    )

    assert re.findall(r"<Zone>(\d+)</Zone>", rendered) == ["4", "30", "200"]
    assert re.findall(r"<Cell>(\d+)</Cell>", rendered) == ["1", "9"]
    assert "<IncludedCells/>" in rendered


@pytest.mark.parametrize("document", [EMPTY_STRATEGY, "", "  \n\t", b"", "<Definition />"])
def test_empty_strategy_or_blank_text_is_empty_surveillance(document: str | bytes) -> None:
    assert parse_surveillance(document) == Surveillance()


def test_render_empty_surveillance_round_trips() -> None:
    assert parse_surveillance(render_surveillance(Surveillance())) == Surveillance()


def test_surveillance_tolerates_whitespace_around_ids_and_repeats() -> None:
    document = "<Definition><Zones><Zone> 7 </Zone><Zone>7</Zone></Zones></Definition>"

    assert parse_surveillance(document).zones == {7}


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            "<Definition><Zones><Zone>abc</Zone></Zones></Definition>",
            "Surveillance <Zones> <Zone> value 'abc' is not a numeric id.",
        ),
        (
            "<Definition><IncludedCells><Cell>-4</Cell></IncludedCells></Definition>",
            "Surveillance <IncludedCells> <Cell> value '-4' is not a positive id.",
        ),
        (
            "<Definition><ExcludedCells><Cell>0</Cell></ExcludedCells></Definition>",
            "Surveillance <ExcludedCells> <Cell> value '0' is not a positive id.",
        ),
        (
            "<Definition><Zones><Zone>1.5</Zone></Zones></Definition>",
            "value '1.5' is not a numeric id.",
        ),
        (
            "<Definition><Zones><Zone>99999999999999999999</Zone></Zones></Definition>",
            "value '99999999999999999999' is too large to be an id.",
        ),
        ("<Surveillance />", "root is <Surveillance>; expected <Definition>."),
        (
            "<Definition><Rooms /></Definition>",
            "Surveillance <Definition> has an unexpected element <Rooms>",
        ),
        (
            "<Definition><Zones><Cell>5</Cell></Zones></Definition>",
            "Surveillance <Zones> has an unexpected element <Cell>; expected <Zone>.",
        ),
        ("<Definition><Zones>5</Zones></Definition>", "Surveillance <Zones> holds stray text '5'"),
        (
            "<Definition><Zones><Zone><Id>5</Id></Zone></Zones></Definition>",
            "Surveillance <Zones> <Zone> holds an element <Id>",
        ),
        (
            "<Definition><Zones /><Zones /></Definition>",
            "Surveillance <Definition> has more than one <Zones>.",
        ),
    ],
)
def test_surveillance_rejects_bad_values_naming_element_and_value(
    document: str, expected: str
) -> None:
    with pytest.raises(InterchangeError) as excinfo:
        parse_surveillance(document)

    assert expected in _message(excinfo)


# ---------------------------------------------------------------- tool calls


def test_tool_calls_literal_example_parses() -> None:
    definition = parse_tool_calls(TOOL_CALLS_EXAMPLE.read_bytes())

    assert definition.speech_context_count == 5
    assert definition.speech_context_window == timedelta(minutes=3)
    assert definition.player_info_prog == "55"
    assert definition.tools == (
        CustomTool(
            name="RecordNarrativeCue",
            description="Records a short narrative cue and echoes it back.",
            prog="1234",
            echo_only=False,
            parameter_descriptions=(
                ("Cue", "A concise narrative cue to preserve for continuity."),
            ),
        ),
        CustomTool(
            name="ShoutFromCrowd",
            description="Makes an anonymous crowd voice call out in the room.",
            prog="1240",
            echo_only=True,
            parameter_descriptions=(("Room", "Room to echo into."), ("Text", "What is shouted.")),
        ),
    )


def test_constructor_speech_context_settings_missing_values_uses_defaults() -> None:
    definition = parse_tool_calls("<ToolCalls />")

    assert definition.speech_context_count == 0
    assert definition.speech_context_window == timedelta(minutes=10)
    assert definition.tools == ()
    assert definition.player_info_prog is None


def test_constructor_speech_context_settings_loads_configured_values() -> None:
    definition = parse_tool_calls(
        _tool_calls(
            "<SpeechContextEventCount>5</SpeechContextEventCount>"
            "<SpeechContextMaximumSeparationMilliseconds>180000"
            "</SpeechContextMaximumSeparationMilliseconds>"
        )
    )

    assert definition.speech_context_count == 5
    assert definition.speech_context_window == timedelta(minutes=3)


def test_blank_tool_calls_text_reads_as_empty_root() -> None:
    assert parse_tool_calls("  ") == parse_tool_calls("<ToolCalls />") == ToolCallsDefinition()


def test_tool_calls_may_sit_under_another_root() -> None:
    document = (
        "<Storyteller><Other>ignored</Other>"
        + _tool_calls("<SpeechContextEventCount>7</SpeechContextEventCount>" + _tool())
        + "</Storyteller>"
    )

    definition = parse_tool_calls(document)

    assert definition.speech_context_count == 7
    assert [t.name for t in definition.tools] == ["RecordCue"]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ("<Storyteller><Other /></Storyteller>", "root is <Storyteller> and has no <ToolCalls>"),
        (
            "<Storyteller><ToolCalls /><ToolCalls /></Storyteller>",
            "root is <Storyteller> and has several <ToolCalls>",
        ),
    ],
)
def test_tool_calls_root_must_be_found(document: str, expected: str) -> None:
    with pytest.raises(InterchangeError, match=re.escape(expected)):
        parse_tool_calls(document)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("180000", timedelta(minutes=3)),
        (" 1500.5 ", timedelta(seconds=1, microseconds=500_500)),
        ("00:03:00", timedelta(minutes=3)),
        ("03:00", timedelta(hours=3)),
        ("1.02:03:04", timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("00:00:01.25", timedelta(seconds=1, microseconds=250_000)),
        ("2:00:00:30", timedelta(days=2, seconds=30)),
    ],
)
def test_speech_window_accepts_milliseconds_and_timespans(text: str, expected: timedelta) -> None:
    document = _tool_calls(
        f"<SpeechContextMaximumSeparationMilliseconds>{text}"
        "</SpeechContextMaximumSeparationMilliseconds>"
    )

    assert parse_tool_calls(document).speech_context_window == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("0", "is not a positive duration."),
        ("00:00:00", "is not a positive duration."),
        ("-5", "is neither a number of milliseconds nor a TimeSpan"),
        ("-00:03:00", "is neither a number of milliseconds nor a TimeSpan"),
        ("ten minutes", "is neither a number of milliseconds nor a TimeSpan"),
        ("00:61:00", "is neither a number of milliseconds nor a TimeSpan"),
        ("1e5", "is neither a number of milliseconds nor a TimeSpan"),
        ("", "is neither a number of milliseconds nor a TimeSpan"),
        ("9" * 30, "is too long a duration."),
    ],
)
def test_speech_window_rejects_bad_values(text: str, problem: str) -> None:
    document = _tool_calls(
        f"<SpeechContextMaximumSeparationMilliseconds>{text}"
        "</SpeechContextMaximumSeparationMilliseconds>"
    )

    with pytest.raises(InterchangeError) as excinfo:
        parse_tool_calls(document)

    assert f"ToolCalls <SpeechContextMaximumSeparationMilliseconds> value {text!r}" in _message(
        excinfo
    )
    assert problem in _message(excinfo)


@pytest.mark.parametrize("count", [0, 50])
def test_speech_count_accepts_range_limits(count: int) -> None:
    document = _tool_calls(f"<SpeechContextEventCount>{count}</SpeechContextEventCount>")

    assert parse_tool_calls(document).speech_context_count == count


@pytest.mark.parametrize(
    ("text", "problem"),
    [("51", "is out of range"), ("-1", "is out of range"), ("five", "is not a whole number")],
)
def test_speech_count_rejects_out_of_range_instead_of_clamping(text: str, problem: str) -> None:
    document = _tool_calls(f"<SpeechContextEventCount>{text}</SpeechContextEventCount>")

    with pytest.raises(InterchangeError) as excinfo:
        parse_tool_calls(document)

    assert f"ToolCalls <SpeechContextEventCount> value '{text}' {problem}" in _message(excinfo)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (_tool(name="Record Cue"), "<Name> value 'Record Cue' is rejected"),
        (_tool(name="x" * 65), "is rejected: Tool name"),
        (_tool(name="noop"), "collides with the built-in tool"),
        (_tool(name="CreateSituation"), "collides with the built-in tool"),
        ("<ToolCall><Prog>12</Prog></ToolCall>", "ToolCalls <ToolCall> #1 has no <Name>."),
        (_tool(prog=""), "ToolCalls <ToolCall> 'RecordCue' has no <Prog>."),
        (_tool(prog="<Prog>  </Prog>"), "ToolCalls <ToolCall> 'RecordCue' <Prog> is blank"),
        (
            _tool(extra="<IncludeWithEcho>yes</IncludeWithEcho>"),
            "<IncludeWithEcho> value 'yes' is not true or false.",
        ),
        (
            _tool() + _tool(name="recordcue"),
            "ToolCalls <Name> value 'recordcue' names more than one <ToolCall>",
        ),
        (
            _tool(
                extra="<ParameterDescriptions><Description name='Cue'>a</Description>"
                "<Description name='cue'>b</Description></ParameterDescriptions>"
            ),
            "<Description> name 'cue' is described more than once.",
        ),
        (
            _tool(
                extra="<ParameterDescriptions><Description>a</Description></ParameterDescriptions>"
            ),
            "has a <Description> without a name attribute.",
        ),
        (_tool(extra="<Colour>red</Colour>"), "#1 has an unexpected element <Colour>"),
        ("<Tool />", "ToolCalls <ToolCalls> has an unexpected element <Tool>"),
        (
            "<CustomPlayerInformationProgId> </CustomPlayerInformationProgId>",
            "ToolCalls <CustomPlayerInformationProgId> is blank",
        ),
        (
            "<SpeechContextEventCount>1</SpeechContextEventCount>"
            "<SpeechContextEventCount>2</SpeechContextEventCount>",
            "has more than one <SpeechContextEventCount>.",
        ),
    ],
)
def test_tool_calls_reject_invalid_tools(body: str, expected: str) -> None:
    with pytest.raises(InterchangeError) as excinfo:
        parse_tool_calls(_tool_calls(body))

    assert expected in _message(excinfo)


def test_tool_fields_default_when_optional_elements_are_missing() -> None:
    definition = parse_tool_calls(_tool_calls(_tool(prog="<Prog>  SayHello </Prog>")))

    assert definition.tools == (CustomTool(name="RecordCue", description="", prog="SayHello"),)


def test_include_with_echo_is_case_insensitive() -> None:
    document = _tool_calls(_tool(extra="<IncludeWithEcho> TRUE </IncludeWithEcho>"))

    assert parse_tool_calls(document).tools[0].echo_only is True


def _configured_storyteller() -> Storyteller:
    return Storyteller(
        name="Harbour",
        id=4,
        model="gpt-5-mini",
        reasoning_effort=ReasoningEffort.HIGH,
        speech_context_count=12,
        speech_context_window=timedelta(minutes=2, microseconds=1500),
        player_info_prog="PlayerInfoProg",
        custom_tools=(
            CustomTool(
                name="RecordNarrativeCue",
                description="Records a cue; keeps <angle> & ]]> brackets.",
                prog="1234",
                parameter_descriptions=(("Cue", " A cue. "), ("Weight", "")),
            ),
            CustomTool(name="Ping", description="", prog="PingProg"),
            CustomTool(
                name="ShoutFromCrowd",
                description="Makes a crowd voice call out.",
                prog="1240",
                echo_only=True,
                parameter_descriptions=(("Room", "Room to echo into."),),
            ),
        ),
    )


def test_tool_calls_round_trip_through_render_and_parse() -> None:
    storyteller = _configured_storyteller()

    definition = parse_tool_calls(render_tool_calls(storyteller))
    restored = apply_tool_calls(Storyteller(name="Harbour", id=4), definition)

    assert definition.speech_context_count == 12
    assert definition.speech_context_window == timedelta(minutes=2, microseconds=1500)
    assert definition.player_info_prog == "PlayerInfoProg"
    assert definition.tools == storyteller.custom_tools
    assert restored.custom_tools == storyteller.custom_tools
    assert restored.speech_context_window == storyteller.speech_context_window


def test_render_tool_calls_follows_futuremud_element_order() -> None:
    storyteller = replace(
        _configured_storyteller(),
        custom_tools=(
            CustomTool(name="EchoFirst", description="e", prog="1", echo_only=True),
            CustomTool(name="Always", description="a", prog="2"),
        ),
    )

    rendered = render_tool_calls(storyteller)

    top_level = re.findall(r"^  <(\w+)", rendered, flags=re.MULTILINE)
    assert top_level == [
        "SpeechContextEventCount",
        "SpeechContextMaximumSeparationMilliseconds",
        "ToolCall",
        "ToolCall",
        "CustomPlayerInformationProgId",
    ]
    assert re.findall(r"<Name><!\[CDATA\[(\w+)\]\]></Name>", rendered) == ["Always", "EchoFirst"]
    assert "<Description><![CDATA[a]]></Description>" in rendered
    assert (
        "<SpeechContextMaximumSeparationMilliseconds>120001.5"
        "</SpeechContextMaximumSeparationMilliseconds>" in rendered
    )


def test_render_tool_calls_writes_literal_example() -> None:
    example = parse_tool_calls(TOOL_CALLS_EXAMPLE.read_text())
    storyteller = apply_tool_calls(Storyteller(name="Example"), example)

    assert render_tool_calls(storyteller).strip() == TOOL_CALLS_EXAMPLE.read_text().strip()


def test_render_tool_calls_omits_player_info_prog_when_unset() -> None:
    rendered = render_tool_calls(Storyteller(name="Plain"))

    assert "CustomPlayerInformationProgId" not in rendered
    assert parse_tool_calls(rendered) == ToolCallsDefinition()


def test_render_tool_calls_rejects_characters_xml_cannot_hold() -> None:
    storyteller = Storyteller(
        name="Bad", custom_tools=(CustomTool(name="Beep", description="bell\x07", prog="1"),)
    )

    with pytest.raises(InterchangeError, match=r"<Description> holds U\+0007"):
        render_tool_calls(storyteller)


def test_apply_tool_calls_replaces_only_tool_settings() -> None:
    storyteller = _configured_storyteller()
    definition = ToolCallsDefinition(
        speech_context_count=3,
        speech_context_window=timedelta(seconds=45),
        tools=(CustomTool(name="Fresh", description="new", prog="9"),),
        player_info_prog=None,
    )

    updated = apply_tool_calls(storyteller, definition)

    assert updated is not storyteller
    assert updated.speech_context_count == 3
    assert updated.speech_context_window == timedelta(seconds=45)
    assert updated.custom_tools == definition.tools
    assert updated.player_info_prog is None
    assert (updated.name, updated.id, updated.model, updated.reasoning_effort) == (
        "Harbour",
        4,
        "gpt-5-mini",
        ReasoningEffort.HIGH,
    )
    assert storyteller.speech_context_count == 12


@pytest.mark.parametrize(
    ("build", "expected"),
    [
        (lambda: ToolCallsDefinition(speech_context_count=51), "between 0 and 50, not 51"),
        (lambda: ToolCallsDefinition(speech_context_window=timedelta(0)), "longer than zero"),
        (
            lambda: ToolCallsDefinition(tools=(CustomTool(name="Noop", description="", prog="1"),)),
            "collides with the built-in tool",
        ),
        (
            lambda: ToolCallsDefinition(
                tools=(
                    CustomTool(name="Twice", description="", prog="1"),
                    CustomTool(name="twice", description="", prog="2"),
                )
            ),
            "used by more than one tool",
        ),
    ],
    ids=["count", "window", "builtin", "duplicate"],
)
def test_tool_calls_definition_refuses_invalid_settings(
    build: Callable[[], ToolCallsDefinition], expected: str
) -> None:
    with pytest.raises(ValidationError, match=expected):
        build()


# ---------------------------------------------------------------- restrictions


def test_restricted_storyteller_ids_legacy_xml_format_parses_correctly() -> None:
    text = "<Restrictions><Storyteller>22</Storyteller><Storyteller>44</Storyteller></Restrictions>"

    assert parse_restrictions(text) == {22, 44}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5,7,11", {5, 7, 11}),
        (" 11, 5 ,5,", {5, 11}),
        ("", set()),
        ("   ", set()),
        ("<Restrictions />", set()),
        (
            "<R><Group><Storyteller> 3 </Storyteller></Group><Storyteller>9</Storyteller></R>",
            {3, 9},
        ),
    ],
)
def test_restrictions_read_csv_and_legacy_xml(text: str, expected: set[int]) -> None:
    assert parse_restrictions(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5,seven", "Restriction list '5,seven': 'seven' is not a storyteller id."),
        ("5,-7", "'-7' is not a storyteller id."),
        (
            "<R><Storyteller>x</Storyteller></R>",
            "Restriction <Storyteller> value 'x' is not a numeric id.",
        ),
        (
            "<R><Storyteller>-2</Storyteller></R>",
            "Restriction <Storyteller> value '-2' is not a positive id.",
        ),
        ("<Restrictions><Storyteller>22", "is neither XML (Restriction list is not well-formed"),
    ],
)
def test_restrictions_reject_bad_ids(text: str, expected: str) -> None:
    with pytest.raises(InterchangeError) as excinfo:
        parse_restrictions(text)

    assert expected in _message(excinfo)


# ---------------------------------------------------------------- safety


@pytest.mark.parametrize(
    "parse",
    [parse_surveillance, parse_tool_calls, parse_restrictions],
    ids=["surveillance", "tool_calls", "restrictions"],
)
def test_external_entities_are_never_read(tmp_path: Path, parse: Callable[[str], object]) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-4711")
    document = (
        f'<!DOCTYPE Definition [<!ENTITY x SYSTEM "{secret.as_uri()}">]>'
        "<Definition><Zones><Zone>&x;</Zone></Zones></Definition>"
    )

    with pytest.raises(InterchangeError) as excinfo:
        parse(document)

    assert "declares <!DOCTYPE Definition>; DOCTYPE and entity declarations are not allowed." in (
        _message(excinfo)
    )
    assert "TOP-SECRET-4711" not in _message(excinfo)


def test_xxe_against_etc_passwd_is_rejected() -> None:
    document = (
        '<?xml version="1.0"?><!DOCTYPE ToolCalls [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        "<ToolCalls><ToolCall><Name>Leak</Name><Prog>&x;</Prog></ToolCall></ToolCalls>"
    )

    with pytest.raises(InterchangeError) as excinfo:
        parse_tool_calls(document)

    assert "declares <!DOCTYPE ToolCalls>" in _message(excinfo)
    assert "root:" not in _message(excinfo)


def test_billion_laughs_is_rejected_before_expansion() -> None:
    with pytest.raises(InterchangeError) as excinfo:
        parse_tool_calls(BILLION_LAUGHS)

    assert "declares <!DOCTYPE lolz>" in _message(excinfo)
    assert "lollol" not in _message(excinfo)


def test_external_dtd_is_rejected() -> None:
    document = '<!DOCTYPE d SYSTEM "http://127.0.0.1:9/x.dtd"><Definition />'

    with pytest.raises(InterchangeError) as excinfo:
        parse_surveillance(document)

    assert _message(excinfo) == (
        "Surveillance document declares <!DOCTYPE d> (external DTD "
        "'http://127.0.0.1:9/x.dtd'); DOCTYPE and entity declarations are not allowed."
    )


def test_malformed_xml_reports_line_and_column() -> None:
    document = "<Definition>\n  <Zones>\n</Definition>"

    with pytest.raises(InterchangeError) as excinfo:
        parse_surveillance(document)

    assert _message(excinfo).startswith(
        "Surveillance document is not well-formed XML at line 3, column"
    )
    assert "Opening and ending tag mismatch" in _message(excinfo)


def test_undeclared_entity_is_an_error() -> None:
    with pytest.raises(InterchangeError, match="Entity 'x' not defined"):
        parse_tool_calls("<ToolCalls>&x;</ToolCalls>")


def _padded_definition(size: int) -> str:
    shell = "<Definition></Definition>"
    return shell[:12] + " " * (size - len(shell)) + shell[12:]


def test_document_at_the_size_limit_is_accepted() -> None:
    document = _padded_definition(MAX_XML_BYTES)

    assert len(document.encode()) == MAX_XML_BYTES
    assert parse_surveillance(document) == Surveillance()


@pytest.mark.parametrize("as_bytes", [False, True], ids=["text", "bytes"])
def test_oversize_document_is_rejected_before_parsing(as_bytes: bool) -> None:
    # Well-formed apart from its size, so only the size check can reject it.
    text = _padded_definition(MAX_XML_BYTES + 1)
    document: str | bytes = text.encode() if as_bytes else text

    with pytest.raises(InterchangeError, match="larger than the 1,000,000-byte limit"):
        parse_surveillance(document)


def test_size_limit_counts_encoded_bytes_not_characters() -> None:
    # 'é' takes two bytes in UTF-8: fewer characters than the limit, more bytes.
    document = "<ToolCalls><!--" + "é" * (MAX_XML_BYTES // 2) + "--></ToolCalls>"
    encoded_size = len(document.encode())
    assert len(document) < MAX_XML_BYTES < encoded_size

    with pytest.raises(InterchangeError, match=re.escape(f"({encoded_size:,} bytes)")):
        parse_tool_calls(document)


def test_oversize_restriction_xml_is_rejected() -> None:
    text = "<R>" + " " * MAX_XML_BYTES + "</R>"

    with pytest.raises(InterchangeError, match="Restriction list is larger than"):
        parse_restrictions(text)


def test_bytes_honour_their_encoding_declaration() -> None:
    document = '<?xml version="1.0" encoding="utf-16"?>' + _tool_calls(
        _tool(prog="<Prog>Café</Prog>")
    )

    assert parse_tool_calls(document.encode("utf-16")).tools[0].prog == "Café"
    assert parse_tool_calls(document).tools[0].prog == "Café"


def test_text_that_cannot_be_encoded_is_rejected() -> None:
    with pytest.raises(InterchangeError, match="cannot be encoded"):
        parse_surveillance("<Definition>\ud800</Definition>")


def test_comments_and_processing_instructions_are_ignored() -> None:
    document = (
        "<?xml version='1.0'?><!-- exported --><Definition><?editor hint?><Zones>"
        "<!-- the harbour --><Zone>5</Zone></Zones></Definition>"
    )

    assert parse_surveillance(document).zones == {5}
