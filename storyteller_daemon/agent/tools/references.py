"""Reference-document tools: search and read the knowledge base the storyteller may see.

A document restricted to other storytellers behaves exactly like one that does not exist.
"""

from __future__ import annotations

from typing import Any

from storyteller_daemon.agent.tools.arguments import optional_text, required_id
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.argument_limits import WORD_CHARS
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.errors import NotFoundError, ToolError


def _metadata(doc: ReferenceDocument) -> dict[str, Any]:
    return {
        "Id": doc.id,
        "Name": doc.name,
        "Folder": doc.folder,
        "Type": doc.doc_type,
        "Keywords": doc.keywords,
        "Description": doc.description,
    }


async def search_reference_documents(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """SearchReferenceDocuments."""
    query = (optional_text(arguments, "Query") or "").strip()
    hits = await ctx.services.references.search_hits(query or None, visible_to=ctx.storyteller_id)
    return {
        "Query": query,
        "Documents": [{**_metadata(h.document), "Snippet": h.snippet} for h in hits],
    }


async def show_reference_document(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ShowReferenceDocument."""
    document_id = required_id(arguments, "Id")
    missing = ToolError(f"No visible reference document with id {document_id} exists.")
    if document_id <= 0:
        raise missing
    try:
        doc = await ctx.services.references.get(document_id)
    except NotFoundError:
        raise missing from None
    # The store also resolves names; only an exact id match counts here.
    if doc.id != document_id or not doc.is_visible_to(ctx.storyteller_id):
        raise missing
    return {**_metadata(doc), "Contents": doc.contents}


TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "SearchReferenceDocuments",
        "Searches the reference documents you may read (lore, places, rules, guidance). Every "
        "word of the query must appear somewhere in a document. Returns names, summaries and a "
        "short snippet of the contents around the first match (marked «like this»), not the "
        "full contents.",
        search_reference_documents,
        {"Query": {"type": "string", "description": "Words to search for; blank lists all."}},
        limits={"Query": WORD_CHARS},
    ),
    Tool.define(
        "ShowReferenceDocument",
        "Shows one reference document in full, by id.",
        show_reference_document,
        {"Id": {"type": "integer", "description": "The document's id, from a search."}},
        required=("Id",),
    ),
)
