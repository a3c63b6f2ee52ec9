"""Attention rules in the ToolCalls blob: our own <AttentionRules> element, read as safely."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.storytellers import CustomTool, Storyteller
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml import (
    ToolCallsDefinition,
    apply_tool_calls,
    parse_tool_calls,
    render_tool_calls,
)

TOOL_CALLS_EXAMPLE = Path(__file__).parent.parent / "data" / "xml" / "tool_calls_example.xml"

BELL = AttentionRule(
    "hour-bell",
    RuleAction.IGNORE,
    kinds=frozenset({"room_echo"}),
    pattern=r"^the harbour bell tolls\b <&> ]]>",
)
OFFICE = AttentionRule(
    "office",
    RuleAction.ATTEND,
    kinds=frozenset({"crime", "speech"}),
    rooms=frozenset({108, 7}),
    cooldown=timedelta(minutes=2, milliseconds=500),
)
WATCHER = Storyteller(
    name="Watcher",
    custom_tools=(CustomTool(name="Shout", description="d", prog="12", echo_only=True),),
    player_info_prog="55",
    attention_rules=(OFFICE, BELL),
)


def _rules(body: str) -> str:
    return f"<ToolCalls><AttentionRules>{body}</AttentionRules></ToolCalls>"


def test_rules_round_trip_in_order_with_the_rest_of_the_blob() -> None:
    definition = parse_tool_calls(render_tool_calls(WATCHER))
    assert definition.attention_rules == (OFFICE, BELL)
    restored = apply_tool_calls(Storyteller(name="Other", id=9), definition)
    assert restored.attention_rules == WATCHER.attention_rules
    assert (restored.custom_tools, restored.player_info_prog) == (
        WATCHER.custom_tools,
        "55",
    )


def test_rules_are_written_last_in_the_documented_shape() -> None:
    rendered = render_tool_calls(replace(WATCHER, attention_rules=(OFFICE,)))
    top_level = re.findall(r"^  <(\w+)", rendered, flags=re.MULTILINE)
    assert top_level[-2:] == ["CustomPlayerInformationProgId", "AttentionRules"]
    assert (
        "  <AttentionRules>\n"
        "    <AttentionRule>\n"
        "      <Name>office</Name>\n"
        "      <Action>attend</Action>\n"
        "      <Kinds>\n"
        "        <Kind>crime</Kind>\n"
        "        <Kind>speech</Kind>\n"
        "      </Kinds>\n"
        "      <Cells>\n"
        "        <Cell>7</Cell>\n"
        "        <Cell>108</Cell>\n"
        "      </Cells>\n"
        "      <Pattern></Pattern>\n"
        "      <CooldownMilliseconds>120500</CooldownMilliseconds>\n"
        "    </AttentionRule>\n"
        "  </AttentionRules>\n"
    ) in rendered


def test_a_pattern_is_escaped_text_never_cdata() -> None:
    rendered = render_tool_calls(replace(WATCHER, attention_rules=(BELL,)))
    assert r"<Pattern>^the harbour bell tolls\b &lt;&amp;&gt; ]]&gt;</Pattern>" in rendered


def test_no_rules_write_exactly_futuremuds_document() -> None:
    example = parse_tool_calls(TOOL_CALLS_EXAMPLE.read_text())
    assert example.attention_rules == ()
    storyteller = apply_tool_calls(Storyteller(name="Example"), example)
    rendered = render_tool_calls(storyteller)
    assert "AttentionRules" not in rendered
    assert rendered.strip() == TOOL_CALLS_EXAMPLE.read_text().strip()


def test_a_document_without_rules_replaces_the_rules_with_none() -> None:
    updated = apply_tool_calls(WATCHER, parse_tool_calls(TOOL_CALLS_EXAMPLE.read_text()))
    assert updated.attention_rules == ()
    assert apply_tool_calls(WATCHER, parse_tool_calls("")).attention_rules == ()


def test_optional_elements_default_and_durations_take_timespans() -> None:
    definition = parse_tool_calls(
        _rules(
            "<AttentionRule><Name> quiet </Name><Action>IGNORE</Action></AttentionRule>"
            "<AttentionRule><Name>slow</Name><Action>attend</Action><Kinds/><Cells/>"
            "<CooldownMilliseconds>00:05:00</CooldownMilliseconds></AttentionRule>"
        )
    )
    assert definition.attention_rules == (
        AttentionRule("quiet", RuleAction.IGNORE),
        AttentionRule("slow", RuleAction.ATTEND, cooldown=timedelta(minutes=5)),
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "<AttentionRule><Action>ignore</Action></AttentionRule>",
            "ToolCalls <AttentionRule> #1 has no <Name>.",
        ),
        (
            "<AttentionRule><Name>bell</Name></AttentionRule>",
            "ToolCalls <AttentionRule> #1 has no <Action>.",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>skip</Action></AttentionRule>",
            "ToolCalls <AttentionRule> 'bell' <Action> value 'skip' is not ignore or attend.",
        ),
        (
            "<AttentionRule><Name>Bell</Name><Action>ignore</Action></AttentionRule>",
            "ToolCalls <AttentionRule> 'Bell' is rejected: rule name 'Bell' must be 1-40 "
            "lower-case letters, digits, '-' or '_'.",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action>"
            "<Pattern>(</Pattern></AttentionRule>",
            "ToolCalls <AttentionRule> 'bell' is rejected: rule bell: pattern is not a regular "
            "expression",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action>"
            "<Cells><Cell>-3</Cell></Cells></AttentionRule>",
            "ToolCalls <AttentionRule> 'bell' <Cells> <Cell> value '-3' is not a positive id.",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action>"
            "<Cells><Room>3</Room></Cells></AttentionRule>",
            "<Cells> has an unexpected element <Room>; expected <Cell>.",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action>"
            "<Kinds><Type>crime</Type></Kinds></AttentionRule>",
            "<Kinds> has an unexpected element <Type>; expected <Kind>.",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action>"
            "<CooldownMilliseconds>soon</CooldownMilliseconds></AttentionRule>",
            "ToolCalls <AttentionRule> 'bell' <CooldownMilliseconds> value 'soon' is neither a "
            "number of milliseconds nor a TimeSpan",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action><Colour/></AttentionRule>",
            "ToolCalls <AttentionRule> #1 has an unexpected element <Colour>",
        ),
        (
            "<AttentionRule><Name>bell</Name><Action>ignore</Action></AttentionRule>"
            "<AttentionRule><Name>bell</Name><Action>attend</Action></AttentionRule>",
            "ToolCalls <AttentionRule> <Name> value 'bell' names more than one <AttentionRule>.",
        ),
        ("<Rule/>", "ToolCalls <AttentionRules> has an unexpected element <Rule>"),
        ("stray", "ToolCalls <AttentionRules> holds stray text 'stray'"),
    ],
)
def test_bad_rules_are_rejected_naming_element_and_value(body: str, expected: str) -> None:
    with pytest.raises(InterchangeError) as excinfo:
        parse_tool_calls(_rules(body))
    assert expected in str(excinfo.value)


def test_a_second_rules_element_is_rejected() -> None:
    with pytest.raises(InterchangeError, match="has more than one <AttentionRules>"):
        parse_tool_calls("<ToolCalls><AttentionRules/><AttentionRules/></ToolCalls>")


def test_the_definition_refuses_duplicate_rule_names() -> None:
    with pytest.raises(ValidationError, match="rule names must be unique"):
        ToolCallsDefinition(attention_rules=(BELL, replace(OFFICE, name=BELL.name)))
