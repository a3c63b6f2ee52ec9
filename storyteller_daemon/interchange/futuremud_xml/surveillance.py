"""FutureMUD's surveillance definition: the rooms a storyteller watches, read and written.

The ``<Definition>`` holds ``<Zones>`` of ``<Zone>`` ids, ``<IncludedCells>`` and
``<ExcludedCells>`` of ``<Cell>`` ids; a missing list is empty, blank text watches nothing.
"""

from __future__ import annotations

from lxml import etree

from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import InterchangeError
from storyteller_daemon.interchange.futuremud_xml.documents import is_blank, parse_document
from storyteller_daemon.interchange.futuremud_xml.elements import (
    leaf_text,
    parse_id,
    reject_stray_text,
    serialise,
    single_children,
)

_SURVEILLANCE_LISTS = {"Zones": "Zone", "IncludedCells": "Cell", "ExcludedCells": "Cell"}


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
    if is_blank(document):
        return Surveillance()
    root = parse_document(document, "Surveillance document")
    if root.tag != "Definition":
        raise InterchangeError(
            f"Surveillance document root is <{root.tag}>; expected <Definition>."
        )
    reject_stray_text(root, "Surveillance <Definition>")
    sections = single_children(root, tuple(_SURVEILLANCE_LISTS), "Surveillance <Definition>")
    lists: dict[str, frozenset[int]] = {}
    for tag, section in sections.items():
        item = _SURVEILLANCE_LISTS[tag]
        reject_stray_text(section, f"Surveillance <{tag}>")
        ids: set[int] = set()
        for entry in section:
            if entry.tag != item:
                raise InterchangeError(
                    f"Surveillance <{tag}> has an unexpected element <{entry.tag}>; "
                    f"expected <{item}>."
                )
            where = f"Surveillance <{tag}> <{item}>"
            ids.add(parse_id(leaf_text(entry, where), where))
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
    return serialise(root)
