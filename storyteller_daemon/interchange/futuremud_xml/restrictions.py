"""A reference document's storyteller restrictions: a CSV of ids, or FutureMUD's legacy XML.

Blank text means the document is global. Text that starts like XML but is not well-formed falls
back to CSV, as FutureMUD does; when that fails too, the error names both problems.
"""

from __future__ import annotations

from storyteller_daemon.domain.references import parse_restriction_csv
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml.documents import MalformedXmlError, parse_document
from storyteller_daemon.interchange.futuremud_xml.elements import leaf_text, parse_id, show


def _clause(error: Exception) -> str:
    """An error message without its final full stop, for nesting inside another message."""
    return str(error).rstrip(".")


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
            root = parse_document(value, "Restriction list")
        except MalformedXmlError as exc:
            # FutureMUD falls back to CSV when the XML does not parse.
            xml_problem = exc
        else:
            where = "Restriction <Storyteller>"
            return frozenset(
                parse_id(leaf_text(element, where), where)
                for element in root.iterdescendants("Storyteller")
            )
    try:
        return parse_restriction_csv(value)
    except ValidationError as exc:
        if xml_problem is not None:
            raise InterchangeError(
                f"Restriction list {show(text)} is neither XML ({_clause(xml_problem)}) nor a "
                f"CSV of storyteller ids ({_clause(exc)})."
            ) from None
        raise InterchangeError(f"Restriction list {show(text)}: {exc}") from None
