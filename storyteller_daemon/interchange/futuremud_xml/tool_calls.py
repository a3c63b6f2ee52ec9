"""FutureMUD's custom tool blob (``<ToolCalls>``), read, written and applied to a storyteller.

The blob carries the speech-context settings, the custom tools (always-available and echo-only),
the custom player-information prog, our attention rules (`rules`), our MCP grants (`mcp`), our
direction (`direction`) and our daily budget (``<DailyBudgetUsd>``).
Reading rejects values out of range, missing or invalid (tool names that break the API's
pattern, collide with a built-in tool or repeat) with an `InterchangeError` that names the
element.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from lxml import etree

from storyteller_daemon.domain.attention_rules import AttentionRule
from storyteller_daemon.domain.direction import Direction
from storyteller_daemon.domain.mcp import McpGrant
from storyteller_daemon.domain.storytellers import (
    DEFAULT_SPEECH_CONTEXT_WINDOW,
    CustomTool,
    Storyteller,
    validate_daily_budget,
    validate_speech_context_count,
    validate_speech_context_window,
    validate_tool_name,
)
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml.direction import (
    DIRECTION_TAG,
    parse_direction,
    render_direction,
)
from storyteller_daemon.interchange.futuremud_xml.documents import is_blank, parse_document
from storyteller_daemon.interchange.futuremud_xml.durations import (
    parse_duration,
    render_milliseconds,
)
from storyteller_daemon.interchange.futuremud_xml.elements import (
    INTEGER,
    leaf_text,
    reject_stray_text,
    serialise,
    set_text,
    show,
    single_children,
)
from storyteller_daemon.interchange.futuremud_xml.mcp import MCP_TAG, parse_grants, render_grants
from storyteller_daemon.interchange.futuremud_xml.rules import RULES_TAG, parse_rules, render_rules

_SPEECH_COUNT = "SpeechContextEventCount"
_SPEECH_WINDOW = "SpeechContextMaximumSeparationMilliseconds"
_PLAYER_INFO_PROG = "CustomPlayerInformationProgId"
_BUDGET = "DailyBudgetUsd"
_TOOL_FIELDS = ("Name", "Description", "Prog", "IncludeWithEcho", "ParameterDescriptions")


@dataclass(frozen=True)
class ToolCallsDefinition:
    """What a FutureMUD ``<ToolCalls>`` blob configures on a storyteller.

    Raises:
        ValidationError: on construction, when the count is outside 0..50, the window is not
            positive, or a tool name is invalid, built-in or repeated (case-insensitively).
    """

    speech_context_count: int = 0
    speech_context_window: timedelta = DEFAULT_SPEECH_CONTEXT_WINDOW
    tools: tuple[CustomTool, ...] = ()
    """Always-available and echo-only tools, in document order."""
    player_info_prog: str | None = None
    """The custom player-information prog (id or name), if any."""
    attention_rules: tuple[AttentionRule, ...] = ()
    """The attention rules in order (none when the document has no ``<AttentionRules>``)."""
    mcp_grants: tuple[McpGrant, ...] = ()
    """The MCP servers and tools granted (none when the document has no ``<McpServers>``)."""
    direction: Direction = Direction()
    """Plans, co-operation, pacing, providers (the default without ``<Direction>``)."""
    daily_budget_usd: float | None = None
    """The storyteller's own daily cap (None without ``<DailyBudgetUsd>``: the configuration's)."""

    def __post_init__(self) -> None:
        if self.daily_budget_usd is not None:
            validate_daily_budget(self.daily_budget_usd)
        validate_speech_context_count(self.speech_context_count)
        validate_speech_context_window(self.speech_context_window)
        seen: set[str] = set()
        for tool in self.tools:
            validate_tool_name(tool.name, BUILTIN_TOOL_NAMES)
            if tool.name.lower() in seen:
                raise ValidationError(f"Tool name '{tool.name}' is used by more than one tool.")
            seen.add(tool.name.lower())
        rule_names = [rule.name for rule in self.attention_rules]
        if len(set(rule_names)) != len(rule_names):
            raise ValidationError("Two attention rules share a name; rule names must be unique.")


def parse_tool_calls(document: str | bytes) -> ToolCallsDefinition:
    """Read a FutureMUD custom tool blob.

    Args:
        document: XML whose root is ``<ToolCalls>``, or whose root has a ``<ToolCalls>`` child.
            Blank text is read as an empty ``<ToolCalls />``.

    Returns:
        The speech-context settings (0 events and 10 minutes when absent), the custom tools in
        document order, the player-information prog, and the attention rules in document order
        (none when there is no ``<AttentionRules>``).

    Raises:
        InterchangeError: the document is unsafe or malformed, or a value is out of range, missing
            or invalid (including tool names that break the API's pattern, collide with a built-in
            tool or repeat).
    """
    if is_blank(document):
        return ToolCallsDefinition()
    root = _tool_calls_root(parse_document(document, "ToolCalls document"))
    reject_stray_text(root, "ToolCalls <ToolCalls>")
    count = 0
    window = DEFAULT_SPEECH_CONTEXT_WINDOW
    player_info_prog: str | None = None
    tools: list[CustomTool] = []
    rules: tuple[AttentionRule, ...] = ()
    grants: tuple[McpGrant, ...] = ()
    direction = Direction()
    budget: float | None = None
    seen: set[str] = set()
    for child in root:
        tag = str(child.tag)
        if tag in seen and tag != "ToolCall":
            raise InterchangeError(f"ToolCalls <ToolCalls> has more than one <{tag}>.")
        seen.add(tag)
        if tag == _SPEECH_COUNT:
            count = _parse_speech_count(leaf_text(child, f"ToolCalls <{tag}>"))
        elif tag == _SPEECH_WINDOW:
            window = _parse_speech_window(leaf_text(child, f"ToolCalls <{tag}>"))
        elif tag == _PLAYER_INFO_PROG:
            where = f"ToolCalls <{tag}>"
            player_info_prog = _parse_prog(leaf_text(child, where), where)
        elif tag == "ToolCall":
            tools.append(_parse_tool(child, len(tools) + 1))
        elif tag == RULES_TAG:
            rules = parse_rules(child)
        elif tag == MCP_TAG:
            grants = parse_grants(child)
        elif tag == DIRECTION_TAG:
            direction = parse_direction(child)
        elif tag == _BUDGET:
            budget = _parse_budget(leaf_text(child, f"ToolCalls <{tag}>"))
        else:
            raise InterchangeError(
                f"ToolCalls <ToolCalls> has an unexpected element <{tag}>; expected "
                f"<{_SPEECH_COUNT}>, <{_SPEECH_WINDOW}>, <ToolCall>, <{_PLAYER_INFO_PROG}>, "
                f"<{RULES_TAG}>, <{MCP_TAG}>, <{DIRECTION_TAG}> or <{_BUDGET}>."
            )
    names: set[str] = set()
    for tool in tools:
        if tool.name.lower() in names:
            raise InterchangeError(
                f"ToolCalls <Name> value {tool.name!r} names more than one <ToolCall> "
                "(names are case-insensitive)."
            )
        names.add(tool.name.lower())
    return ToolCallsDefinition(
        count, window, tuple(tools), player_info_prog, rules, grants, direction, budget
    )


def _tool_calls_root(root: etree._Element) -> etree._Element:
    if root.tag == "ToolCalls":
        return root
    candidates = [child for child in root if child.tag == "ToolCalls"]
    if len(candidates) != 1:
        problem = "has no <ToolCalls> child" if not candidates else "has several <ToolCalls>"
        raise InterchangeError(f"ToolCalls document root is <{root.tag}> and {problem}.")
    return candidates[0]


def _parse_speech_count(text: str) -> int:
    where = f"ToolCalls <{_SPEECH_COUNT}>"
    value = text.strip()
    if INTEGER.fullmatch(value) is None:
        raise InterchangeError(f"{where} value {show(text)} is not a whole number.")
    try:
        return validate_speech_context_count(int(value))
    except ValidationError as exc:
        raise InterchangeError(f"{where} value {show(text)} is out of range: {exc}") from None


def _parse_speech_window(text: str) -> timedelta:
    where = f"ToolCalls <{_SPEECH_WINDOW}>"
    window = parse_duration(text, where)
    try:
        return validate_speech_context_window(window)
    except ValidationError:
        raise InterchangeError(f"{where} value {show(text)} is not a positive duration.") from None


def _parse_budget(text: str) -> float:
    where = f"ToolCalls <{_BUDGET}>"
    try:
        return validate_daily_budget(float(text.strip()))
    except ValueError:
        raise InterchangeError(f"{where} value {show(text)} is not a number of USD.") from None
    except ValidationError as exc:
        raise InterchangeError(f"{where} value {show(text)} is rejected: {exc}") from None


def _parse_prog(text: str, where: str) -> str:
    value = text.strip()
    if not value:
        raise InterchangeError(f"{where} is blank; it must name a prog by id or name.")
    return value


def _parse_tool(element: etree._Element, position: int) -> CustomTool:
    label = f"ToolCalls <ToolCall> #{position}"
    reject_stray_text(element, label)
    fields = single_children(element, _TOOL_FIELDS, label)
    if "Name" not in fields:
        raise InterchangeError(f"{label} has no <Name>.")
    name = leaf_text(fields["Name"], f"{label} <Name>").strip()
    try:
        validate_tool_name(name, BUILTIN_TOOL_NAMES)
    except ValidationError as exc:
        raise InterchangeError(f"{label} <Name> value {show(name)} is rejected: {exc}") from None
    label = f"ToolCalls <ToolCall> {name!r}"
    if "Prog" not in fields:
        raise InterchangeError(f"{label} has no <Prog>.")
    prog = _parse_prog(leaf_text(fields["Prog"], f"{label} <Prog>"), f"{label} <Prog>")
    description = ""
    if "Description" in fields:
        description = leaf_text(fields["Description"], f"{label} <Description>")
    echo_only = False
    if "IncludeWithEcho" in fields:
        flag = leaf_text(fields["IncludeWithEcho"], f"{label} <IncludeWithEcho>")
        if flag.strip().lower() not in ("true", "false"):
            raise InterchangeError(
                f"{label} <IncludeWithEcho> value {show(flag)} is not true or false."
            )
        echo_only = flag.strip().lower() == "true"
    parameters: tuple[tuple[str, str], ...] = ()
    if "ParameterDescriptions" in fields:
        parameters = _parse_parameter_descriptions(fields["ParameterDescriptions"], label)
    return CustomTool(
        name=name,
        description=description,
        prog=prog,
        echo_only=echo_only,
        parameter_descriptions=parameters,
    )


def _parse_parameter_descriptions(
    element: etree._Element, label: str
) -> tuple[tuple[str, str], ...]:
    where = f"{label} <ParameterDescriptions>"
    reject_stray_text(element, where)
    descriptions: list[tuple[str, str]] = []
    seen: set[str] = set()
    for entry in element:
        if entry.tag != "Description":
            raise InterchangeError(
                f"{where} has an unexpected element <{entry.tag}>; expected <Description>."
            )
        parameter = (entry.get("name") or "").strip()
        if not parameter:
            raise InterchangeError(f"{where} has a <Description> without a name attribute.")
        if parameter.lower() in seen:
            raise InterchangeError(
                f"{where} <Description> name {show(parameter)} is described more than once."
            )
        seen.add(parameter.lower())
        text = leaf_text(entry, f"{where} <Description name={show(parameter)}>")
        descriptions.append((parameter, text))
    return tuple(descriptions)


def render_tool_calls(storyteller: Storyteller) -> str:
    """Write a storyteller's FutureMUD ``<ToolCalls>`` blob.

    Element order follows FutureMUD: the speech-context settings, the always-available tools, the
    echo-only tools, then the player-information prog when one is set. Names and descriptions are
    written as CDATA.

    The attention rules follow last, in order, only when there are any. FutureMUD has no such
    element; it is ours, in the blob's style, so a storyteller without rules exports exactly
    FutureMUD's document, and a FutureMUD document (which has none) imports as no rules::

        <AttentionRules>                                   <!-- checked in this order -->
          <AttentionRule>
            <Name>hour-bell</Name>                         <!-- unique per storyteller -->
            <Action>ignore</Action>                        <!-- ignore or attend -->
            <Kinds><Kind>room_echo</Kind></Kinds>          <!-- room_echo, speech, crime -->
            <Cells><Cell>101</Cell></Cells>                <!-- room ids -->
            <Pattern>^the harbour bell tolls</Pattern>     <!-- case-insensitive regex -->
            <CooldownMilliseconds>0</CooldownMilliseconds> <!-- or a TimeSpan; 0: none -->
          </AttentionRule>
        </AttentionRules>

    Empty (or missing) ``<Kinds>``, ``<Cells>`` and ``<Pattern>`` match every kind, room and text.

    The MCP grants (``<McpServers>``, also ours: see `mcp`) follow the rules, only when there
    are any, and the direction (``<Direction>``, ours: see `direction`) last, only when it is
    not the default. ``<DailyBudgetUsd>`` (ours) closes the blob when the storyteller has its
    own daily budget; without it, the configuration's cap applies.

    Raises:
        InterchangeError: a name, description or pattern holds a character XML cannot represent.
    """
    root = etree.Element("ToolCalls")
    etree.SubElement(root, _SPEECH_COUNT).text = str(storyteller.speech_context_count)
    etree.SubElement(root, _SPEECH_WINDOW).text = render_milliseconds(
        storyteller.speech_context_window
    )
    always = [t for t in storyteller.custom_tools if not t.echo_only]
    echo_only = [t for t in storyteller.custom_tools if t.echo_only]
    for tool in (*always, *echo_only):
        _render_tool(root, tool)
    if storyteller.player_info_prog is not None:
        set_text(
            etree.SubElement(root, _PLAYER_INFO_PROG),
            storyteller.player_info_prog,
            f"ToolCalls <{_PLAYER_INFO_PROG}>",
        )
    render_rules(root, storyteller.attention_rules)
    render_grants(root, storyteller.mcp_grants)
    render_direction(root, storyteller.direction)
    if storyteller.daily_budget_usd is not None:
        etree.SubElement(root, _BUDGET).text = repr(storyteller.daily_budget_usd)
    return serialise(root)


def _render_tool(root: etree._Element, tool: CustomTool) -> None:
    label = f"ToolCalls <ToolCall> {tool.name!r}"
    element = etree.SubElement(root, "ToolCall")
    set_text(etree.SubElement(element, "Name"), tool.name, f"{label} <Name>", cdata=True)
    set_text(
        etree.SubElement(element, "Description"),
        tool.description,
        f"{label} <Description>",
        cdata=True,
    )
    set_text(etree.SubElement(element, "Prog"), tool.prog, f"{label} <Prog>")
    etree.SubElement(element, "IncludeWithEcho").text = "true" if tool.echo_only else "false"
    parameters = etree.SubElement(element, "ParameterDescriptions")
    for name, text in tool.parameter_descriptions:
        where = f"{label} <Description name={show(name)}>"
        entry = etree.SubElement(parameters, "Description")
        try:
            entry.set("name", name)
        except ValueError:
            raise InterchangeError(
                f"{where} name holds a character XML cannot represent."
            ) from None
        set_text(entry, text, where, cdata=True)


def apply_tool_calls(storyteller: Storyteller, definition: ToolCallsDefinition) -> Storyteller:
    """A copy of `storyteller` with the definition's speech context, tools, prog, rules, MCP
    grants, direction and daily budget."""
    return replace(
        storyteller,
        speech_context_count=definition.speech_context_count,
        speech_context_window=definition.speech_context_window,
        custom_tools=definition.tools,
        player_info_prog=definition.player_info_prog,
        attention_rules=definition.attention_rules,
        mcp_grants=definition.mcp_grants,
        direction=definition.direction,
        daily_budget_usd=definition.daily_budget_usd,
    )
