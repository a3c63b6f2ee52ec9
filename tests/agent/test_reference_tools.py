"""Reference-document tools against the real SQLite repository: search, show, visibility."""

from __future__ import annotations

import pytest
from agent_doubles import execute

from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.storage.store import Store


@pytest.fixture
async def documents(ctx: ToolContext, sqlite_store: Store) -> dict[str, int]:
    other = await sqlite_store.storytellers.create("Old Town Gossip")
    refs = sqlite_store.references
    made = {
        "global": await refs.create(
            ReferenceDocument(
                name="Harbour Politics",
                description="Who runs the docks",
                folder="Lore",
                doc_type="Setting",
                keywords="harbour,politics",
                contents="The Harbourmaster and the Fishers' Guild feud over berths.",
            )
        ),
        "mine": await refs.create(
            ReferenceDocument(
                name="Watch Rota",
                contents="Holt patrols the harbour at night.",
                restricted_to=frozenset({ctx.storyteller_id}),
            )
        ),
        "theirs": await refs.create(
            ReferenceDocument(
                name="Old Town Secrets",
                contents="The harbour tunnels lead to the temple.",
                restricted_to=frozenset({other.id or 0}),
            )
        ),
    }
    return {k: d.id or 0 for k, d in made.items()}


async def test_blank_search_lists_visible_documents_only(
    ctx: ToolContext, documents: dict[str, int]
) -> None:
    for query in (None, "", "   "):
        envelope = await execute(ctx, "SearchReferenceDocuments", {"Query": query})
        assert envelope["ok"] is True
        assert envelope["result"]["Query"] == ""
        ids = [d["Id"] for d in envelope["result"]["Documents"]]
        assert sorted(ids) == sorted([documents["global"], documents["mine"]])


async def test_search_returns_metadata_and_a_snippet_without_contents(
    ctx: ToolContext, documents: dict[str, int]
) -> None:
    envelope = await execute(ctx, "SearchReferenceDocuments", {"Query": "harbour politics"})
    assert envelope["result"]["Query"] == "harbour politics"
    [doc] = envelope["result"]["Documents"]
    assert doc == {
        "Id": documents["global"],
        "Name": "Harbour Politics",
        "Folder": "Lore",
        "Type": "Setting",
        "Keywords": "harbour,politics",
        "Description": "Who runs the docks",
        "Snippet": "The «Harbour»master and the Fishers' Guild feud over berths.",
    }


async def test_search_never_finds_invisible_documents(
    ctx: ToolContext, documents: dict[str, int]
) -> None:
    envelope = await execute(ctx, "SearchReferenceDocuments", {"Query": "tunnels"})
    assert envelope == {"ok": True, "result": {"Query": "tunnels", "Documents": []}}
    harbour = await execute(ctx, "SearchReferenceDocuments", {"Query": "harbour"})
    ids = {d["Id"] for d in harbour["result"]["Documents"]}
    assert documents["theirs"] not in ids and documents["mine"] in ids


async def test_show_returns_contents_of_visible_documents(
    ctx: ToolContext, documents: dict[str, int]
) -> None:
    envelope = await execute(ctx, "ShowReferenceDocument", {"Id": documents["mine"]})
    assert envelope["ok"] is True
    assert envelope["result"]["Contents"] == "Holt patrols the harbour at night."
    assert set(envelope["result"]) == {
        "Id",
        "Name",
        "Folder",
        "Type",
        "Keywords",
        "Description",
        "Contents",
    }


async def test_invisible_and_missing_documents_look_the_same(
    ctx: ToolContext, documents: dict[str, int]
) -> None:
    for document_id in (documents["theirs"], 9999, 0):
        envelope = await execute(ctx, "ShowReferenceDocument", {"Id": document_id})
        assert envelope == {
            "ok": False,
            "error": f"No visible reference document with id {document_id} exists.",
        }
