"""Import and export of FutureMUD's storyteller XML formats.

Three formats are covered, as FutureMUD stores them:

* the surveillance definition (``<Definition>`` with ``<Zones>``, ``<IncludedCells>`` and
  ``<ExcludedCells>``);
* the custom tool blob (``<ToolCalls>``), which also carries the speech-context settings, the
  custom player-information prog and (our addition, see `render_tool_calls`) the attention rules;
* a reference document's storyteller restrictions: a CSV of ids, or the legacy XML form with
  ``<Storyteller>`` elements.

Imported documents are untrusted. They are capped at `MAX_XML_BYTES` before parsing, and the parser
refuses any DOCTYPE as soon as it meets one, so no entity is ever declared, expanded or fetched
(XXE, billion laughs and external DTDs all fail the same way). The network is never touched.

FutureMUD skipped or silently repaired bad entries on load; this importer rejects them instead,
with an `InterchangeError` that names the element and the offending value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal

from lxml import etree

from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.references import parse_restriction_csv
from storyteller_daemon.domain.settings import (
    DEFAULT_SPEECH_CONTEXT_WINDOW,
    CustomTool,
    Storyteller,
    validate_speech_context_count,
    validate_speech_context_window,
    validate_tool_name,
)
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.tool_names import BUILTIN_TOOL_NAMES
from storyteller_daemon.errors import InterchangeError, ValidationError

MAX_XML_BYTES = 1_000_000
"""The largest document, in encoded bytes, that any parser here accepts."""

# Ids are bigint columns in FutureMUD and in our schema.
_MAX_ID = 2**63 - 1
_INTEGER = re.compile(r"[+-]?[0-9]+")
_MILLISECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")
# .NET TimeSpan text: ``[d.]hh:mm[:ss[.fffffff]]`` (the "c" form) or ``d:hh:mm:ss[.fffffff]``
# (the "g" form). Both yield the groups (days, hours, minutes, seconds, fraction).
_TIMESPAN_FORMS = (
    re.compile(r"(?:([0-9]+)\.)?([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,7}))?)?"),
    re.compile(r"([0-9]+):([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.([0-9]{1,7}))?"),
)
# lxml's parser-target protocol is typed for both; in practice it passes str.
_Text = str | bytes
_LOCATION_SUFFIX = re.compile(r", line \d+, column \d+$")

_SURVEILLANCE_LISTS = {"Zones": "Zone", "IncludedCells": "Cell", "ExcludedCells": "Cell"}
_SPEECH_COUNT = "SpeechContextEventCount"
_SPEECH_WINDOW = "SpeechContextMaximumSeparationMilliseconds"
_PLAYER_INFO_PROG = "CustomPlayerInformationProgId"
_TOOL_FIELDS = ("Name", "Description", "Prog", "IncludeWithEcho", "ParameterDescriptions")
# Attention rules: an element of ours in the ToolCalls blob, not FutureMUD's (see
# `render_tool_calls`); a document without it has no rules.
_RULES = "AttentionRules"
_RULE_FIELDS = ("Name", "Action", "Kinds", "Cells", "Pattern", "CooldownMilliseconds")


# ---------------------------------------------------------------- safe parsing


class _MalformedXmlError(InterchangeError):
    """The text is not well-formed XML (as opposed to well-formed but unsafe or invalid)."""


class _DoctypeRefusingBuilder:
    """A parser target that builds the element tree but refuses any DOCTYPE.

    lxml calls `doctype` when it reads ``<!DOCTYPE``, before the internal subset, so raising
    there stops the parse before a single entity is declared.
    """

    def __init__(self, label: str) -> None:
        self._label = label
        self._builder = etree.TreeBuilder()

    def start(self, tag: _Text, attrib: dict[_Text, _Text]) -> None:
        self._builder.start(tag, attrib)

    def end(self, tag: _Text) -> None:
        self._builder.end(tag)

    def data(self, data: _Text) -> None:
        self._builder.data(data)

    def comment(self, text: _Text) -> None:
        """Comments carry nothing the formats use, so they are dropped."""

    def doctype(self, name: str, public_id: str | None, system_url: str | None) -> None:
        where = f" (external DTD {system_url!r})" if system_url else ""
        raise InterchangeError(
            f"{self._label} declares <!DOCTYPE {name}>{where}; "
            "DOCTYPE and entity declarations are not allowed."
        )

    def close(self) -> etree._Element | None:
        # lxml also calls close() after a failed parse; the tree is then incomplete, and
        # returning None lets the parse error itself propagate instead of the builder's.
        try:
            return self._builder.close()
        except AssertionError:
            return None


def _encode(document: str | bytes, label: str) -> tuple[bytes, str | None]:
    """The document's bytes, and the encoding that overrides any declaration in them."""
    if isinstance(document, bytes):
        data, encoding = document, None
    else:
        # Every character encodes to at least one byte: refuse huge text before copying it.
        if len(document) > MAX_XML_BYTES:
            raise InterchangeError(
                f"{label} is larger than the {MAX_XML_BYTES:,}-byte limit ({len(document):,} "
                "characters)."
            )
        try:
            data = document.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InterchangeError(
                f"{label} holds a character that cannot be encoded "
                f"({document[exc.start]!r} at position {exc.start})."
            ) from None
        # Text is already decoded, so any encoding declaration it carries no longer applies.
        encoding = "utf-8"
    if len(data) > MAX_XML_BYTES:
        raise InterchangeError(
            f"{label} is larger than the {MAX_XML_BYTES:,}-byte limit ({len(data):,} bytes)."
        )
    return data, encoding


def _parse_document(document: str | bytes, label: str) -> etree._Element:
    """Parse an untrusted document into its root element, or raise `InterchangeError`."""
    data, encoding = _encode(document, label)
    parser = etree.XMLParser(
        encoding=encoding,
        target=_DoctypeRefusingBuilder(label),
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_pis=True,
        collect_ids=False,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        line, column = exc.position
        reason = _LOCATION_SUFFIX.sub("", exc.msg or str(exc))
        raise _MalformedXmlError(
            f"{label} is not well-formed XML at line {line}, column {column}: {reason}."
        ) from None
    except (etree.LxmlError, ValueError) as exc:
        raise InterchangeError(f"{label} could not be parsed: {exc}.") from None
    if not etree.iselement(root):
        raise InterchangeError(f"{label} has no root element.")
    return root


def _show(value: str) -> str:
    """A value quoted for an error message, shortened so a huge value cannot flood it."""
    return repr(value if len(value) <= 80 else value[:77] + "...")


def _clause(error: Exception) -> str:
    """An error message without its final full stop, for nesting inside another message."""
    return str(error).rstrip(".")


def _is_blank(document: str | bytes) -> bool:
    return not document.strip()


# ---------------------------------------------------------------- element helpers


def _reject_stray_text(container: etree._Element, where: str) -> None:
    """Containers hold only elements; stray text is usually a value put in the wrong place."""
    for text in (container.text, *(child.tail for child in container)):
        if text and text.strip():
            raise InterchangeError(
                f"{where} holds stray text {_show(text.strip())}; "
                "put each value in its own element."
            )


def _leaf_text(element: etree._Element, where: str) -> str:
    """The text of a value element, which must not contain other elements."""
    if len(element):
        raise InterchangeError(f"{where} holds an element <{element[0].tag}>; expected only text.")
    return element.text or ""


def _parse_id(text: str, where: str) -> int:
    value = text.strip()
    if _INTEGER.fullmatch(value) is None:
        raise InterchangeError(f"{where} value {_show(text)} is not a numeric id.")
    number = int(value)
    if number <= 0:
        raise InterchangeError(f"{where} value {_show(text)} is not a positive id.")
    if number > _MAX_ID:
        raise InterchangeError(f"{where} value {_show(text)} is too large to be an id.")
    return number


def _single_children(
    container: etree._Element, allowed: tuple[str, ...], where: str
) -> dict[str, etree._Element]:
    """The container's children by tag, each allowed tag at most once."""
    found: dict[str, etree._Element] = {}
    for child in container:
        tag = str(child.tag)
        if tag not in allowed:
            expected = ", ".join(f"<{a}>" for a in allowed)
            raise InterchangeError(
                f"{where} has an unexpected element <{tag}>; expected {expected}."
            )
        if tag in found:
            raise InterchangeError(f"{where} has more than one <{tag}>.")
        found[tag] = child
    return found


def _set_text(element: etree._Element, text: str, where: str, *, cdata: bool = False) -> None:
    try:
        element.text = etree.CDATA(text) if cdata else text
    except ValueError:
        bad = next((c for c in text if not _xml_char(c)), "?")
        raise InterchangeError(
            f"{where} holds U+{ord(bad):04X}, a character XML cannot represent."
        ) from None


def _xml_char(char: str) -> bool:
    code = ord(char)
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def _serialise(root: etree._Element) -> str:
    return etree.tostring(root, encoding="unicode", pretty_print=True)


# ---------------------------------------------------------------- surveillance


def parse_surveillance(document: str | bytes) -> Surveillance:
    """Read a FutureMUD surveillance definition.

    Args:
        document: the ``<Definition>`` XML. Blank text means nothing is watched.

    Returns:
        The zones, included cells and excluded cells. Missing lists are empty.

    Raises:
        InterchangeError: the document is unsafe, malformed, has another root or shape, or holds
            an id that is not a positive integer.
    """
    if _is_blank(document):
        return Surveillance()
    root = _parse_document(document, "Surveillance document")
    if root.tag != "Definition":
        raise InterchangeError(
            f"Surveillance document root is <{root.tag}>; expected <Definition>."
        )
    _reject_stray_text(root, "Surveillance <Definition>")
    sections = _single_children(root, tuple(_SURVEILLANCE_LISTS), "Surveillance <Definition>")
    lists: dict[str, frozenset[int]] = {}
    for tag, section in sections.items():
        item = _SURVEILLANCE_LISTS[tag]
        _reject_stray_text(section, f"Surveillance <{tag}>")
        ids: set[int] = set()
        for entry in section:
            if entry.tag != item:
                raise InterchangeError(
                    f"Surveillance <{tag}> has an unexpected element <{entry.tag}>; "
                    f"expected <{item}>."
                )
            where = f"Surveillance <{tag}> <{item}>"
            ids.add(_parse_id(_leaf_text(entry, where), where))
        lists[tag] = frozenset(ids)
    return Surveillance(
        zones=lists.get("Zones", frozenset()),
        included=lists.get("IncludedCells", frozenset()),
        excluded=lists.get("ExcludedCells", frozenset()),
    )


def render_surveillance(surveillance: Surveillance) -> str:
    """Write a surveillance definition in FutureMUD's format, ids ascending, pretty-printed."""
    root = etree.Element("Definition")
    for tag, values in (
        ("Zones", surveillance.zones),
        ("IncludedCells", surveillance.included),
        ("ExcludedCells", surveillance.excluded),
    ):
        section = etree.SubElement(root, tag)
        for value in sorted(values):
            etree.SubElement(section, _SURVEILLANCE_LISTS[tag]).text = str(value)
    return _serialise(root)


# ---------------------------------------------------------------- tool calls


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

    def __post_init__(self) -> None:
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
    if _is_blank(document):
        return ToolCallsDefinition()
    root = _tool_calls_root(_parse_document(document, "ToolCalls document"))
    _reject_stray_text(root, "ToolCalls <ToolCalls>")
    count = 0
    window = DEFAULT_SPEECH_CONTEXT_WINDOW
    player_info_prog: str | None = None
    tools: list[CustomTool] = []
    rules: tuple[AttentionRule, ...] = ()
    seen: set[str] = set()
    for child in root:
        tag = str(child.tag)
        if tag in seen and tag != "ToolCall":
            raise InterchangeError(f"ToolCalls <ToolCalls> has more than one <{tag}>.")
        seen.add(tag)
        if tag == _SPEECH_COUNT:
            count = _parse_speech_count(_leaf_text(child, f"ToolCalls <{tag}>"))
        elif tag == _SPEECH_WINDOW:
            window = _parse_speech_window(_leaf_text(child, f"ToolCalls <{tag}>"))
        elif tag == _PLAYER_INFO_PROG:
            where = f"ToolCalls <{tag}>"
            player_info_prog = _parse_prog(_leaf_text(child, where), where)
        elif tag == "ToolCall":
            tools.append(_parse_tool(child, len(tools) + 1))
        elif tag == _RULES:
            rules = _parse_rules(child)
        else:
            raise InterchangeError(
                f"ToolCalls <ToolCalls> has an unexpected element <{tag}>; expected "
                f"<{_SPEECH_COUNT}>, <{_SPEECH_WINDOW}>, <ToolCall>, <{_PLAYER_INFO_PROG}> "
                f"or <{_RULES}>."
            )
    names: set[str] = set()
    for tool in tools:
        if tool.name.lower() in names:
            raise InterchangeError(
                f"ToolCalls <Name> value {tool.name!r} names more than one <ToolCall> "
                "(names are case-insensitive)."
            )
        names.add(tool.name.lower())
    return ToolCallsDefinition(count, window, tuple(tools), player_info_prog, rules)


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
    if _INTEGER.fullmatch(value) is None:
        raise InterchangeError(f"{where} value {_show(text)} is not a whole number.")
    try:
        return validate_speech_context_count(int(value))
    except ValidationError as exc:
        raise InterchangeError(f"{where} value {_show(text)} is out of range: {exc}") from None


def _parse_duration(text: str, where: str) -> timedelta:
    """Milliseconds (``180000``) or a .NET TimeSpan (``00:03:00``), as FutureMUD writes either."""
    value = text.strip()
    try:
        duration = _milliseconds(value)
        if duration is None:
            duration = _timespan(value)
    except OverflowError:
        raise InterchangeError(f"{where} value {_show(text)} is too long a duration.") from None
    if duration is None:
        raise InterchangeError(
            f"{where} value {_show(text)} is neither a number of milliseconds nor a TimeSpan such "
            "as 00:03:00 or 1.02:03:04."
        )
    return duration


def _parse_speech_window(text: str) -> timedelta:
    where = f"ToolCalls <{_SPEECH_WINDOW}>"
    window = _parse_duration(text, where)
    try:
        return validate_speech_context_window(window)
    except ValidationError:
        raise InterchangeError(f"{where} value {_show(text)} is not a positive duration.") from None


def _milliseconds(value: str) -> timedelta | None:
    if _MILLISECONDS.fullmatch(value) is None:
        return None
    microseconds = (Decimal(value) * 1000).to_integral_value()
    return timedelta(microseconds=int(microseconds))


def _timespan(value: str) -> timedelta | None:
    for form in _TIMESPAN_FORMS:
        match = form.fullmatch(value)
        if match is None:
            continue
        days, hours, minutes, seconds, fraction = match.groups()
        hour, minute, second = int(hours), int(minutes), int(seconds or 0)
        if hour > 23 or minute > 59 or second > 59:
            return None
        # The fraction counts 100 ns ticks, at most seven digits.
        ticks = int((fraction or "").ljust(7, "0"))
        return timedelta(
            days=int(days or 0),
            hours=hour,
            minutes=minute,
            seconds=second,
            microseconds=ticks // 10,
        )
    return None


def _render_milliseconds(window: timedelta) -> str:
    whole, micro = divmod(window // timedelta(microseconds=1), 1000)
    return str(whole) if not micro else f"{whole}.{micro:03d}".rstrip("0")


def _parse_prog(text: str, where: str) -> str:
    value = text.strip()
    if not value:
        raise InterchangeError(f"{where} is blank; it must name a prog by id or name.")
    return value


def _parse_tool(element: etree._Element, position: int) -> CustomTool:
    label = f"ToolCalls <ToolCall> #{position}"
    _reject_stray_text(element, label)
    fields = _single_children(element, _TOOL_FIELDS, label)
    if "Name" not in fields:
        raise InterchangeError(f"{label} has no <Name>.")
    name = _leaf_text(fields["Name"], f"{label} <Name>").strip()
    try:
        validate_tool_name(name, BUILTIN_TOOL_NAMES)
    except ValidationError as exc:
        raise InterchangeError(f"{label} <Name> value {_show(name)} is rejected: {exc}") from None
    label = f"ToolCalls <ToolCall> {name!r}"
    if "Prog" not in fields:
        raise InterchangeError(f"{label} has no <Prog>.")
    prog = _parse_prog(_leaf_text(fields["Prog"], f"{label} <Prog>"), f"{label} <Prog>")
    description = ""
    if "Description" in fields:
        description = _leaf_text(fields["Description"], f"{label} <Description>")
    echo_only = False
    if "IncludeWithEcho" in fields:
        flag = _leaf_text(fields["IncludeWithEcho"], f"{label} <IncludeWithEcho>")
        if flag.strip().lower() not in ("true", "false"):
            raise InterchangeError(
                f"{label} <IncludeWithEcho> value {_show(flag)} is not true or false."
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
    _reject_stray_text(element, where)
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
                f"{where} <Description> name {_show(parameter)} is described more than once."
            )
        seen.add(parameter.lower())
        text = _leaf_text(entry, f"{where} <Description name={_show(parameter)}>")
        descriptions.append((parameter, text))
    return tuple(descriptions)


def _parse_rules(element: etree._Element) -> tuple[AttentionRule, ...]:
    where = f"ToolCalls <{_RULES}>"
    _reject_stray_text(element, where)
    rules: list[AttentionRule] = []
    for entry in element:
        if entry.tag != "AttentionRule":
            raise InterchangeError(
                f"{where} has an unexpected element <{entry.tag}>; expected <AttentionRule>."
            )
        rule = _parse_rule(entry, len(rules) + 1)
        if any(r.name == rule.name for r in rules):
            raise InterchangeError(
                f"ToolCalls <AttentionRule> <Name> value {rule.name!r} names more than one "
                "<AttentionRule>."
            )
        rules.append(rule)
    return tuple(rules)


def _parse_rule(element: etree._Element, position: int) -> AttentionRule:
    label = f"ToolCalls <AttentionRule> #{position}"
    _reject_stray_text(element, label)
    fields = _single_children(element, _RULE_FIELDS, label)
    for required in ("Name", "Action"):
        if required not in fields:
            raise InterchangeError(f"{label} has no <{required}>.")
    name = _leaf_text(fields["Name"], f"{label} <Name>").strip()
    label = f"ToolCalls <AttentionRule> {_show(name)}"
    action_text = _leaf_text(fields["Action"], f"{label} <Action>")
    try:
        action = RuleAction.parse(action_text)
    except ValidationError:
        raise InterchangeError(
            f"{label} <Action> value {_show(action_text)} is not ignore or attend."
        ) from None
    kinds: set[str] = set()
    if "Kinds" in fields:
        _reject_stray_text(fields["Kinds"], f"{label} <Kinds>")
        for kind in fields["Kinds"]:
            if kind.tag != "Kind":
                raise InterchangeError(
                    f"{label} <Kinds> has an unexpected element <{kind.tag}>; expected <Kind>."
                )
            kinds.add(_leaf_text(kind, f"{label} <Kind>").strip())
    cells: set[int] = set()
    if "Cells" in fields:
        _reject_stray_text(fields["Cells"], f"{label} <Cells>")
        for cell in fields["Cells"]:
            if cell.tag != "Cell":
                raise InterchangeError(
                    f"{label} <Cells> has an unexpected element <{cell.tag}>; expected <Cell>."
                )
            where = f"{label} <Cells> <Cell>"
            cells.add(_parse_id(_leaf_text(cell, where), where))
    pattern = ""
    if "Pattern" in fields:
        pattern = _leaf_text(fields["Pattern"], f"{label} <Pattern>")
    cooldown = timedelta(0)
    if "CooldownMilliseconds" in fields:
        where = f"{label} <CooldownMilliseconds>"
        cooldown = _parse_duration(_leaf_text(fields["CooldownMilliseconds"], where), where)
    try:
        return AttentionRule(name, action, frozenset(kinds), frozenset(cells), pattern, cooldown)
    except ValueError as exc:
        raise InterchangeError(f"{label} is rejected: {exc}.") from None


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

    Raises:
        InterchangeError: a name, description or pattern holds a character XML cannot represent.
    """
    root = etree.Element("ToolCalls")
    etree.SubElement(root, _SPEECH_COUNT).text = str(storyteller.speech_context_count)
    etree.SubElement(root, _SPEECH_WINDOW).text = _render_milliseconds(
        storyteller.speech_context_window
    )
    always = [t for t in storyteller.custom_tools if not t.echo_only]
    echo_only = [t for t in storyteller.custom_tools if t.echo_only]
    for tool in (*always, *echo_only):
        _render_tool(root, tool)
    if storyteller.player_info_prog is not None:
        _set_text(
            etree.SubElement(root, _PLAYER_INFO_PROG),
            storyteller.player_info_prog,
            f"ToolCalls <{_PLAYER_INFO_PROG}>",
        )
    if storyteller.attention_rules:
        rules = etree.SubElement(root, _RULES)
        for rule in storyteller.attention_rules:
            _render_rule(rules, rule)
    return _serialise(root)


def _render_tool(root: etree._Element, tool: CustomTool) -> None:
    label = f"ToolCalls <ToolCall> {tool.name!r}"
    element = etree.SubElement(root, "ToolCall")
    _set_text(etree.SubElement(element, "Name"), tool.name, f"{label} <Name>", cdata=True)
    _set_text(
        etree.SubElement(element, "Description"),
        tool.description,
        f"{label} <Description>",
        cdata=True,
    )
    _set_text(etree.SubElement(element, "Prog"), tool.prog, f"{label} <Prog>")
    etree.SubElement(element, "IncludeWithEcho").text = "true" if tool.echo_only else "false"
    parameters = etree.SubElement(element, "ParameterDescriptions")
    for name, text in tool.parameter_descriptions:
        where = f"{label} <Description name={_show(name)}>"
        entry = etree.SubElement(parameters, "Description")
        try:
            entry.set("name", name)
        except ValueError:
            raise InterchangeError(
                f"{where} name holds a character XML cannot represent."
            ) from None
        _set_text(entry, text, where, cdata=True)


def _render_rule(rules: etree._Element, rule: AttentionRule) -> None:
    label = f"ToolCalls <AttentionRule> {rule.name!r}"
    element = etree.SubElement(rules, "AttentionRule")
    etree.SubElement(element, "Name").text = rule.name
    etree.SubElement(element, "Action").text = rule.action.value
    kinds = etree.SubElement(element, "Kinds")
    for kind in sorted(rule.kinds):
        etree.SubElement(kinds, "Kind").text = kind
    cells = etree.SubElement(element, "Cells")
    for cell in sorted(rule.rooms):
        etree.SubElement(cells, "Cell").text = str(cell)
    # Plain text, not CDATA: a regular expression may well contain "]]>".
    _set_text(etree.SubElement(element, "Pattern"), rule.pattern, f"{label} <Pattern>")
    etree.SubElement(element, "CooldownMilliseconds").text = _render_milliseconds(rule.cooldown)


def apply_tool_calls(storyteller: Storyteller, definition: ToolCallsDefinition) -> Storyteller:
    """A copy of `storyteller` with the definition's speech context, tools, prog and rules."""
    return replace(
        storyteller,
        speech_context_count=definition.speech_context_count,
        speech_context_window=definition.speech_context_window,
        custom_tools=definition.tools,
        player_info_prog=definition.player_info_prog,
        attention_rules=definition.attention_rules,
    )


# ---------------------------------------------------------------- restrictions


def parse_restrictions(text: str) -> frozenset[int]:
    """Read a reference document's storyteller restrictions.

    Args:
        text: a CSV of storyteller ids (``5,7,11``), or the legacy XML form whose ``<Storyteller>``
            elements may sit anywhere below the root. Blank text means global (no restriction).

    Returns:
        The storyteller ids; empty means every storyteller may read the document.

    Raises:
        InterchangeError: an id is not a positive integer, the XML is unsafe or too large, or the
            text is neither well-formed XML nor a CSV of ids.
    """
    value = text.strip()
    if not value:
        return frozenset()
    xml_problem: InterchangeError | None = None
    if value.startswith("<"):
        try:
            root = _parse_document(value, "Restriction list")
        except _MalformedXmlError as exc:
            # FutureMUD falls back to CSV when the XML does not parse.
            xml_problem = exc
        else:
            where = "Restriction <Storyteller>"
            return frozenset(
                _parse_id(_leaf_text(element, where), where)
                for element in root.iterdescendants("Storyteller")
            )
    try:
        return parse_restriction_csv(value)
    except ValidationError as exc:
        if xml_problem is not None:
            raise InterchangeError(
                f"Restriction list {_show(text)} is neither XML ({_clause(xml_problem)}) nor a "
                f"CSV of storyteller ids ({_clause(exc)})."
            ) from None
        raise InterchangeError(f"Restriction list {_show(text)}: {exc}") from None
