"""Memory tools against the real SQLite repository and the sim world (FutureMUD test 24)."""

from __future__ import annotations

from agent_doubles import execute

from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.storage.store import Store

MAREN = 1001
HOLT = 2001


async def _remember(ctx: ToolContext, character_id: int = MAREN, title: str = "Owes Osric") -> int:
    envelope = await execute(
        ctx,
        "CreateMemory",
        {"Id": character_id, "Title": title, "Details": "Ten crowns, due Friday"},
    )
    assert envelope["ok"], envelope
    return int(envelope["result"]["Id"])


async def test_create_memory_returns_futuremud_keys(ctx: ToolContext, sqlite_store: Store) -> None:
    envelope = await execute(
        ctx, "CreateMemory", {"Id": str(MAREN), "Title": "Owes Osric", "Details": "Ten crowns"}
    )
    assert envelope["ok"] is True
    assert envelope["result"] == {
        "Id": envelope["result"]["Id"],
        "CharacterId": MAREN,
        "Title": "Owes Osric",
    }
    stored = await sqlite_store.memories.list(ctx.storyteller_id, MAREN)
    assert [(m.title, m.text) for m in stored] == [("Owes Osric", "Ten crowns")]


async def test_show_memory_calls_the_text_description(ctx: ToolContext) -> None:
    memory_id = await _remember(ctx)
    envelope = await execute(ctx, "ShowMemory", {"Id": memory_id})
    assert envelope["ok"] is True
    assert set(envelope["result"]) == {"Id", "Title", "Description", "CreatedOn"}
    assert envelope["result"]["Description"] == "Ten crowns, due Friday"


async def test_list_memories_for_player_calls_the_text_details(ctx: ToolContext) -> None:
    first = await _remember(ctx, title="Owes Osric")
    second = await _remember(ctx, title="Saw the smugglers")
    await _remember(ctx, character_id=1002, title="Someone else")
    envelope = await execute(ctx, "ListMemoriesForPlayer", {"Id": MAREN})
    assert envelope["ok"] is True
    memories = envelope["result"]["Memories"]
    assert [m["Id"] for m in memories] == [first, second]
    assert set(memories[0]) == {"Id", "Title", "Details", "CreatedOn"}
    assert memories[0]["Details"] == "Ten crowns, due Friday"


async def test_memory_lists_accept_player_characters_only(ctx: ToolContext) -> None:
    await _remember(ctx, character_id=HOLT, title="Holt is honest")
    for character_id in (HOLT, 9999):
        envelope = await execute(ctx, "ListMemoriesForPlayer", {"Id": character_id})
        assert envelope == {
            "ok": False,
            "error": f"No player character with id {character_id} exists.",
        }


async def test_create_memory_needs_an_existing_character(ctx: ToolContext) -> None:
    envelope = await execute(ctx, "CreateMemory", {"Id": 9999, "Title": "T", "Details": "D"})
    assert envelope == {"ok": False, "error": "No character with id 9999 exists."}


async def test_update_memory(ctx: ToolContext, sqlite_store: Store) -> None:
    memory_id = await _remember(ctx)
    envelope = await execute(
        ctx, "UpdateMemory", {"Id": memory_id, "Title": "Paid Osric", "Details": "Debt cleared"}
    )
    assert envelope == {"ok": True, "result": {"Id": memory_id, "Title": "Paid Osric"}}
    stored = await sqlite_store.memories.get(ctx.storyteller_id, memory_id)
    assert (stored.title, stored.text) == ("Paid Osric", "Debt cleared")


async def test_forget_memory_deletes_it_for_good(ctx: ToolContext, sqlite_store: Store) -> None:
    memory_id = await _remember(ctx)
    envelope = await execute(ctx, "ForgetMemory", {"Id": memory_id})
    assert envelope == {"ok": True, "result": {"Id": memory_id, "Forgot": True}}
    assert await sqlite_store.memories.list(ctx.storyteller_id) == []
    later = await execute(ctx, "UpdateMemory", {"Id": memory_id, "Title": "T", "Details": "D"})
    assert later == {"ok": False, "error": f"No memory with id {memory_id} exists."}
    shown = await execute(ctx, "ShowMemory", {"Id": memory_id})
    assert shown == {"ok": False, "error": f"No memory with id {memory_id} exists."}


async def test_memories_of_another_storyteller_are_invisible(
    ctx: ToolContext, services: ToolContext, sqlite_store: Store
) -> None:
    other = await sqlite_store.storytellers.create("Old Town Gossip")
    theirs = await _remember(services.for_turn(other, "turn-x"))
    envelope = await execute(ctx, "ShowMemory", {"Id": theirs})
    assert envelope == {"ok": False, "error": f"No memory with id {theirs} exists."}
    listed = await execute(ctx, "ListMemoriesForPlayer", {"Id": MAREN})
    assert listed == {"ok": True, "result": {"Memories": []}}
