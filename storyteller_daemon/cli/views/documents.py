"""How reference documents read in tables, in ``--json`` and in ``aisr show``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from storyteller_daemon.cli.support import say
from storyteller_daemon.domain.references import ReferenceDocument

if TYPE_CHECKING:
    pass

DOCUMENT_COLUMNS = ("Id", "Name", "Folder", "Type", "Keywords", "Visibility")


def visibility(doc: ReferenceDocument) -> str:
    """``Global`` or ``Restricted``, as FutureMUD's list shows it."""
    return "Global" if doc.is_global else "Restricted"


def document_row(doc: ReferenceDocument) -> list[object]:
    """One row of a document table."""
    return [doc.id, doc.name, doc.folder, doc.doc_type, doc.keywords, visibility(doc)]


def document_json(doc: ReferenceDocument, *, with_contents: bool = False) -> dict[str, Any]:
    """A document for ``--json``; lists leave the contents out."""
    data: dict[str, Any] = {
        "id": doc.id,
        "name": doc.name,
        "description": doc.description,
        "folder": doc.folder,
        "type": doc.doc_type,
        "keywords": doc.keywords,
        "visibility": visibility(doc).lower(),
        "restricted_to": sorted(doc.restricted_to),
    }
    if with_contents:
        data["contents"] = doc.contents
    return data


def restricted_names(doc: ReferenceDocument, names: Mapping[int, str]) -> list[str]:
    """``Name (#id)`` for each allowed storyteller; ids with no storyteller say so."""
    return [
        f"{names[i]} (#{i})" if i in names else f"#{i} (no such storyteller)"
        for i in sorted(doc.restricted_to)
    ]


def show_document(doc: ReferenceDocument, names: Mapping[int, str]) -> None:
    """Print everything about a document, FutureMUD's ``aisr show`` order."""
    say(f"Reference document #{doc.id}: {doc.name}")
    say(f"Folder: {doc.folder}")
    say(f"Type: {doc.doc_type}")
    say(f"Keywords: {doc.keywords or '(none)'}")
    say(f"Visibility: {visibility(doc)}")
    if not doc.is_global:
        say("Visible to: " + ", ".join(restricted_names(doc, names)))
    say(f"Description: {doc.description}")
    say("Contents:")
    for line in doc.contents.splitlines() or ["(empty)"]:
        say(f"  {line}")
