"""How a storyteller directs, in the ``<ToolCalls>`` blob: an element of ours, not FutureMUD's.

``<Direction>`` holds the plan switch, co-operation, the pacing and the context providers
(`domain.direction`)::

    <Direction>
      <Plans>true</Plans>                          <!-- offered the plan and scene tools -->
      <Cooperates>false</Cooperates>               <!-- other storytellers' claims stop it -->
      <Pacing>                                     <!-- each setting optional; 0: off -->
        <RoomGapSeconds>300</RoomGapSeconds>
        <DailyActions>40</DailyActions>
        <QuietHours>22:00-06:00</QuietHours>       <!-- UTC -->
        <IntensityPeak>6</IntensityPeak>
        <IntensityRelax>2</IntensityRelax>
        <IntensityPerAction>1</IntensityPerAction>
        <IntensityPerEvent>0.25</IntensityPerEvent>
        <IntensityHalfLifeMinutes>30</IntensityHalfLifeMinutes>
      </Pacing>
      <ContextProviders>                           <!-- read in this order -->
        <ContextProvider>
          <Name>threads</Name>
          <Kind>query</Kind>                       <!-- text, prog, query or digest -->
          <BudgetTokens>150</BudgetTokens>
          <Source>SELECT title FROM situations WHERE storyteller_id = :storyteller_id</Source>
        </ContextProvider>
      </ContextProviders>
    </Direction>

`render_direction` writes nothing for a storyteller with the default direction, so its blob stays
exactly FutureMUD's; a document without the element imports as the default.
"""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from lxml import etree

from storyteller_daemon.domain.direction import (
    PACING_KEYS,
    ContextProvider,
    Direction,
    Pacing,
    ProviderKind,
    pacing_value,
)
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml.elements import (
    INTEGER,
    leaf_text,
    reject_stray_text,
    set_text,
    show,
    single_children,
)

DIRECTION_TAG = "Direction"
_FIELDS = ("Plans", "Cooperates", "Pacing", "ContextProviders")
_PROVIDER_FIELDS = ("Name", "Kind", "BudgetTokens", "Source")


def _tag(key: str) -> str:
    """``room_gap_seconds`` → ``RoomGapSeconds``."""
    return "".join(part.capitalize() for part in key.split("_"))


_PACING_TAGS = {_tag(key): key for key in PACING_KEYS}


def _flag(element: etree._Element, where: str) -> bool:
    text = leaf_text(element, where).strip().lower()
    if text not in ("true", "false"):
        raise InterchangeError(f"{where} value {show(text)} is not true or false.")
    return text == "true"


def parse_direction(element: etree._Element) -> Direction:
    """The direction an element holds."""
    where = f"ToolCalls <{DIRECTION_TAG}>"
    reject_stray_text(element, where)
    found = single_children(element, _FIELDS, where)
    plans = _flag(found["Plans"], f"{where} <Plans>") if "Plans" in found else False
    cooperates = (
        _flag(found["Cooperates"], f"{where} <Cooperates>") if "Cooperates" in found else False
    )
    pacing = _parse_pacing(found["Pacing"]) if "Pacing" in found else Pacing()
    providers: list[ContextProvider] = []
    if "ContextProviders" in found:
        listed = found["ContextProviders"]
        reject_stray_text(listed, f"{where} <ContextProviders>")
        for entry in listed:
            if entry.tag != "ContextProvider":
                raise InterchangeError(
                    f"{where} <ContextProviders> has an unexpected element <{entry.tag}>; "
                    "expected <ContextProvider>."
                )
            providers.append(_parse_provider(entry, len(providers) + 1))
    try:
        return Direction(plans, cooperates, pacing, tuple(providers))
    except ValidationError as exc:
        raise InterchangeError(f"{where} is rejected: {exc}") from None


def _parse_pacing(element: etree._Element) -> Pacing:
    where = f"ToolCalls <{DIRECTION_TAG}> <Pacing>"
    found = single_children(element, tuple(_PACING_TAGS), where)
    reject_stray_text(element, where)
    values: dict[str, Any] = {}
    for tag, child in found.items():
        try:
            values[_PACING_TAGS[tag]] = pacing_value(_PACING_TAGS[tag], leaf_text(child, tag))
        except ValidationError as exc:
            raise InterchangeError(f"{where} <{tag}> is rejected: {exc}") from None
    try:
        return Pacing(**values)
    except ValidationError as exc:
        raise InterchangeError(f"{where} is rejected: {exc}") from None


def _parse_provider(element: etree._Element, position: int) -> ContextProvider:
    label = f"ToolCalls <ContextProvider> #{position}"
    reject_stray_text(element, label)
    found = single_children(element, _PROVIDER_FIELDS, label)
    for required in ("Name", "Kind", "BudgetTokens"):
        if required not in found:
            raise InterchangeError(f"{label} has no <{required}>.")
    budget = leaf_text(found["BudgetTokens"], f"{label} <BudgetTokens>").strip()
    if INTEGER.fullmatch(budget) is None:
        raise InterchangeError(f"{label} <BudgetTokens> value {show(budget)} is not a number.")
    source = leaf_text(found["Source"], f"{label} <Source>") if "Source" in found else ""
    try:
        return ContextProvider(
            name=leaf_text(found["Name"], f"{label} <Name>").strip(),
            kind=ProviderKind.parse(leaf_text(found["Kind"], f"{label} <Kind>")),
            budget_tokens=int(budget),
            source=source,
        )
    except ValidationError as exc:
        raise InterchangeError(f"{label} is rejected: {exc}") from None


def render_direction(root: etree._Element, direction: Direction) -> None:
    """Append ``<Direction>`` to `root`, or nothing for the default direction."""
    if direction == Direction():
        return
    element = etree.SubElement(root, DIRECTION_TAG)
    etree.SubElement(element, "Plans").text = "true" if direction.plans else "false"
    etree.SubElement(element, "Cooperates").text = "true" if direction.cooperates else "false"
    pacing = etree.SubElement(element, "Pacing")
    values = asdict(direction.pacing)
    for key in (f.name for f in fields(Pacing)):
        set_text(etree.SubElement(pacing, _tag(key)), f"{values[key]}", f"<{_tag(key)}>")
    providers = etree.SubElement(element, "ContextProviders")
    for provider in direction.providers:
        where = f"ToolCalls <ContextProvider> {provider.name!r}"
        entry = etree.SubElement(providers, "ContextProvider")
        etree.SubElement(entry, "Name").text = provider.name
        etree.SubElement(entry, "Kind").text = provider.kind.value
        etree.SubElement(entry, "BudgetTokens").text = str(provider.budget_tokens)
        set_text(etree.SubElement(entry, "Source"), provider.source, f"{where} <Source>")
