"""The attention rules in the ``<ToolCalls>`` blob: an element of ours, not FutureMUD's.

``<AttentionRules>`` holds one ``<AttentionRule>`` per rule, in the order they are checked (the
format is shown in `render_tool_calls`). `parse_rules` reads the element, rejecting repeated
names; `render_rules` writes it, and writes nothing for a storyteller without rules, so its blob
is exactly FutureMUD's.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from lxml import etree

from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml.durations import (
    parse_duration,
    render_milliseconds,
)
from storyteller_daemon.interchange.futuremud_xml.elements import (
    leaf_text,
    named_entries,
    parse_id,
    reject_stray_text,
    set_text,
    show,
    single_children,
)

RULES_TAG = "AttentionRules"
_RULE_FIELDS = ("Name", "Action", "Kinds", "Cells", "Pattern", "CooldownMilliseconds")


def parse_rules(element: etree._Element) -> tuple[AttentionRule, ...]:
    """The rules of an ``<AttentionRules>`` element, in document order."""
    return named_entries(element, "AttentionRule", _parse_rule, lambda r: r.name)


def _parse_rule(element: etree._Element, position: int) -> AttentionRule:
    label = f"ToolCalls <AttentionRule> #{position}"
    reject_stray_text(element, label)
    fields = single_children(element, _RULE_FIELDS, label)
    for required in ("Name", "Action"):
        if required not in fields:
            raise InterchangeError(f"{label} has no <{required}>.")
    name = leaf_text(fields["Name"], f"{label} <Name>").strip()
    label = f"ToolCalls <AttentionRule> {show(name)}"
    action_text = leaf_text(fields["Action"], f"{label} <Action>")
    try:
        action = RuleAction.parse(action_text)
    except ValidationError:
        raise InterchangeError(
            f"{label} <Action> value {show(action_text)} is not ignore or attend."
        ) from None
    kinds: set[str] = set()
    if "Kinds" in fields:
        reject_stray_text(fields["Kinds"], f"{label} <Kinds>")
        for kind in fields["Kinds"]:
            if kind.tag != "Kind":
                raise InterchangeError(
                    f"{label} <Kinds> has an unexpected element <{kind.tag}>; expected <Kind>."
                )
            kinds.add(leaf_text(kind, f"{label} <Kind>").strip())
    cells: set[int] = set()
    if "Cells" in fields:
        reject_stray_text(fields["Cells"], f"{label} <Cells>")
        for cell in fields["Cells"]:
            if cell.tag != "Cell":
                raise InterchangeError(
                    f"{label} <Cells> has an unexpected element <{cell.tag}>; expected <Cell>."
                )
            where = f"{label} <Cells> <Cell>"
            cells.add(parse_id(leaf_text(cell, where), where))
    pattern = ""
    if "Pattern" in fields:
        pattern = leaf_text(fields["Pattern"], f"{label} <Pattern>")
    cooldown = timedelta(0)
    if "CooldownMilliseconds" in fields:
        where = f"{label} <CooldownMilliseconds>"
        cooldown = parse_duration(leaf_text(fields["CooldownMilliseconds"], where), where)
    try:
        return AttentionRule(name, action, frozenset(kinds), frozenset(cells), pattern, cooldown)
    except ValueError as exc:
        raise InterchangeError(f"{label} is rejected: {exc}.") from None


def render_rules(root: etree._Element, rules: Sequence[AttentionRule]) -> None:
    """Append ``<AttentionRules>`` holding `rules` to `root`, or nothing when there are none."""
    if rules:
        element = etree.SubElement(root, RULES_TAG)
        for rule in rules:
            _render_rule(element, rule)


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
    set_text(etree.SubElement(element, "Pattern"), rule.pattern, f"{label} <Pattern>")
    etree.SubElement(element, "CooldownMilliseconds").text = render_milliseconds(rule.cooldown)
