"""Situation tools against the real SQLite repository and the sim world (FutureMUD 12-15, 20-23)."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_doubles import execute

from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.situations import Situation
from storyteller_daemon.storage.store import Store

MAREN = 1001
QUAY = 101


async def _open(ctx: ToolContext, **scope: int | None) -> int:
    envelope = await execute(
        ctx, "CreateSituation", {"Title": "Smuggling", "Description": "Crates at night", **scope}
    )
    assert envelope["ok"], envelope
    return int(envelope["result"]["Id"])


async def test_create_returns_futuremud_keys_and_persists(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    envelope = await execute(
        ctx,
        "CreateSituation",
        {
            "Title": "Smuggling",
            "Description": "Crates at night",
            "CharacterId": None,
            "RoomId": QUAY,
        },
    )
    assert envelope["ok"] is True
    result = envelope["result"]
    assert set(result) == {"Id", "Title", "CreatedOn", "Resolved", "CharacterId", "RoomId"}
    assert result["Title"] == "Smuggling" and result["Resolved"] is False
    assert (result["CharacterId"], result["RoomId"]) == (None, QUAY)
    assert datetime.fromisoformat(result["CreatedOn"]).tzinfo is not None
    stored = await sqlite_store.situations.get(ctx.storyteller_id, result["Id"])
    assert (stored.text, stored.room_id) == ("Crates at night", QUAY)


async def test_update_with_character_scope_sets_that_scope(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    situation_id = await _open(ctx, RoomId=QUAY)
    envelope = await execute(
        ctx,
        "UpdateSituation",
        {
            "Id": situation_id,
            "Title": "Smuggling",
            "Description": "Maren knows",
            "CharacterId": MAREN,
        },
    )
    assert envelope["ok"], envelope
    stored = await sqlite_store.situations.get(ctx.storyteller_id, situation_id)
    assert (stored.character_id, stored.room_id) == (MAREN, None)
    assert stored.text == "Maren knows"


async def test_create_with_character_and_room_is_refused(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    envelope = await execute(
        ctx,
        "CreateSituation",
        {"Title": "T", "Description": "D", "CharacterId": MAREN, "RoomId": QUAY},
    )
    assert envelope == {"ok": False, "error": "Specify either CharacterId or RoomId, but not both."}
    assert await sqlite_store.situations.list(ctx.storyteller_id) == []


async def test_update_with_null_room_id_uses_character_scope(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    situation_id = await _open(ctx)
    envelope = await execute(
        ctx,
        "UpdateSituation",
        {
            "Id": situation_id,
            "Title": "T",
            "Description": "D",
            "CharacterId": MAREN,
            "RoomId": None,
        },
    )
    assert envelope["ok"], envelope
    assert envelope["result"]["CharacterId"] == MAREN and envelope["result"]["RoomId"] is None


async def test_create_with_zero_character_id_is_a_validation_error(ctx: ToolContext) -> None:
    envelope = await execute(
        ctx, "CreateSituation", {"Title": "T", "Description": "D", "CharacterId": 0}
    )
    assert envelope == {"ok": False, "error": "CharacterId must be a positive integer."}
    envelope = await execute(
        ctx, "CreateSituation", {"Title": "T", "Description": "D", "RoomId": -3}
    )
    assert envelope == {"ok": False, "error": "RoomId must be a positive integer."}


async def test_scope_targets_must_exist_in_the_world(ctx: ToolContext) -> None:
    assert await execute(
        ctx, "CreateSituation", {"Title": "T", "Description": "D", "CharacterId": 9999}
    ) == {
        "ok": False,
        "error": "No character with id 9999 exists.",
    }
    assert await execute(
        ctx, "CreateSituation", {"Title": "T", "Description": "D", "RoomId": 999}
    ) == {
        "ok": False,
        "error": "No room with id 999 exists.",
    }


async def test_update_changes_title_and_details_and_keeps_scope(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    situation_id = await _open(ctx, RoomId=QUAY)
    envelope = await execute(
        ctx,
        "UpdateSituation",
        {"Id": situation_id, "Title": "New title", "Description": "Updated details"},
    )
    assert envelope["ok"] is True
    assert set(envelope["result"]) == {
        "Id",
        "Title",
        "CreatedOn",
        "Resolved",
        "CharacterId",
        "RoomId",
    }
    stored = await sqlite_store.situations.get(ctx.storyteller_id, situation_id)
    assert (stored.title, stored.text, stored.room_id) == ("New title", "Updated details", QUAY)


async def test_update_with_room_scope_replaces_character_scope(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    situation_id = await _open(ctx, CharacterId=MAREN)
    envelope = await execute(
        ctx,
        "UpdateSituation",
        {"Id": situation_id, "Title": "T", "Description": "D", "RoomId": 102},
    )
    assert envelope["ok"], envelope
    stored = await sqlite_store.situations.get(ctx.storyteller_id, situation_id)
    assert (stored.character_id, stored.room_id) == (None, 102)


def test_scope_matching_rules() -> None:
    def situation(character: int | None = None, room: int | None = None) -> Situation:
        return Situation(1, 1, "t", "x", datetime(2026, 1, 1, tzinfo=UTC), False, character, room)

    assert situation().matches_trigger(None, set())
    assert situation().matches_trigger(5, {6})
    assert situation(character=77).matches_trigger(None, {77, 78})
    assert not situation(character=77).matches_trigger(88, {78})
    assert situation(room=88).matches_trigger(88, set())
    assert not situation(room=88).matches_trigger(89, {88})


async def test_resolve_updates_then_resolves(ctx: ToolContext, sqlite_store: Store) -> None:
    situation_id = await _open(ctx)
    envelope = await execute(
        ctx, "ResolveSituation", {"Id": situation_id, "Title": "Settled", "Description": "Paid off"}
    )
    assert envelope["ok"] and envelope["result"]["Resolved"] is True
    stored = await sqlite_store.situations.get(ctx.storyteller_id, situation_id)
    assert (stored.title, stored.text, stored.resolved) == ("Settled", "Paid off", True)


async def test_a_resolved_situation_is_readable_but_no_longer_changes(ctx: ToolContext) -> None:
    situation_id = await _open(ctx)
    await execute(
        ctx, "ResolveSituation", {"Id": situation_id, "Title": "Done", "Description": "x"}
    )
    shown = await execute(ctx, "ShowSituation", {"Id": situation_id})
    assert shown["ok"] and shown["result"]["Resolved"] is True
    assert set(shown["result"]) == {
        "Id", "Title", "Description", "CreatedOn", "Resolved", "CharacterId", "RoomId"
    }  # fmt: skip
    again = await execute(
        ctx, "UpdateSituation", {"Id": situation_id, "Title": "T", "Description": "D"}
    )
    assert again["ok"] is False and "is resolved" in again["error"]
    twice = await execute(
        ctx, "ResolveSituation", {"Id": situation_id, "Title": "T", "Description": "D"}
    )
    assert twice == {"ok": False, "error": f"Situation {situation_id} is already resolved."}


async def test_clear_scope_makes_a_situation_universal(
    ctx: ToolContext, sqlite_store: Store
) -> None:
    situation_id = await _open(ctx, RoomId=QUAY)
    both = await execute(
        ctx,
        "UpdateSituation",
        {"Id": situation_id, "Title": "T", "Description": "D", "RoomId": 102, "ClearScope": True},
    )
    assert both["ok"] is False and "ClearScope" in both["error"]
    cleared = await execute(
        ctx,
        "UpdateSituation",
        {"Id": situation_id, "Title": "T", "Description": "D", "ClearScope": True},
    )
    assert cleared["ok"], cleared
    stored = await sqlite_store.situations.get(ctx.storyteller_id, situation_id)
    assert (stored.character_id, stored.room_id) == (None, None)


async def test_unknown_and_foreign_situations_do_not_exist(
    ctx: ToolContext, services: ToolContext, sqlite_store: Store
) -> None:
    other = await sqlite_store.storytellers.create("Old Town Gossip")
    theirs = await _open(services.for_turn(other, "turn-x"))
    for situation_id in (theirs, 4242):
        envelope = await execute(ctx, "ShowSituation", {"Id": situation_id})
        assert envelope == {"ok": False, "error": f"No situation with id {situation_id} exists."}


async def test_ids_may_be_numbers_numeric_strings_or_id_objects(ctx: ToolContext) -> None:
    situation_id = await _open(ctx)
    for form in (situation_id, str(situation_id), {"Id": situation_id}, float(situation_id)):
        envelope = await execute(ctx, "ShowSituation", {"Id": form})
        assert envelope["ok"] and envelope["result"]["Id"] == situation_id, form
    bad = await execute(ctx, "ShowSituation", {"Id": "the smuggling one"})
    assert bad == {"ok": False, "error": "Property 'Id' must contain an integer id."}
    assert (await execute(ctx, "ShowSituation", {"Id": True}))["ok"] is False


async def test_null_counts_as_missing_for_required_text(ctx: ToolContext) -> None:
    envelope = await execute(ctx, "CreateSituation", {"Title": None, "Description": "D"})
    assert envelope == {"ok": False, "error": "Missing required property 'Title'."}
    blank = await execute(ctx, "CreateSituation", {"Title": "  ", "Description": "D"})
    assert blank == {"ok": False, "error": "Title must not be blank."}
    missing = await execute(ctx, "ShowSituation", {})
    assert missing == {"ok": False, "error": "Missing required property 'Id'."}
