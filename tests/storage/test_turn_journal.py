"""The turn journal on SQLite and PostgreSQL: an entry kept under a name stays."""

from __future__ import annotations

from storyteller_daemon.storage.store import Store


async def test_an_entry_noted_again_under_its_name_keeps_the_first_body(store: Store) -> None:
    await store.journal.note("turn-1", "round:1", '{"first": true}')
    await store.journal.note("turn-1", "round:1", '{"first": false}')
    await store.journal.note("turn-1", "round:2", "{}")
    await store.journal.note("turn-2", "round:1", "[]")

    assert await store.journal.entries("turn-1") == {"round:1": '{"first": true}', "round:2": "{}"}
    assert await store.journal.entries("turn-2") == {"round:1": "[]"}


async def test_a_kept_call_is_not_written_again(store: Store) -> None:
    writes: list[str] = []

    async def write() -> str:
        writes.append("x")
        return '{"ok": true}'

    assert await store.journal.once("turn-1", "call:1:1", write) == ('{"ok": true}', False)
    assert await store.journal.once("turn-1", "call:1:1", write) == ('{"ok": true}', True)
    assert writes == ["x"]
