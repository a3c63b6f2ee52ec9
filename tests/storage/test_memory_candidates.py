"""The queries behind a turn's prompt knowledge: memory candidates from their indexes, and the
open situations of the two situation blocks, on both backends."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import insert, text

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.memory_ranking import MemoryCandidate
from storyteller_daemon.storage import memory_search
from storyteller_daemon.storage.models.story import MemoryRow
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, OSRIC, WREN = 1001, 1002, 2004


@pytest.fixture
async def ticking(db_url: str) -> Any:
    # The clock moves one minute on every reading, so every row has its own time.
    store = Store.open(db_url, clock=FakeClock(T0, tick=60.0))
    await store.db.upgrade()
    try:
        yield store
    finally:
        await store.close()


def by_id(candidates: list[MemoryCandidate]) -> dict[int, MemoryCandidate]:
    return {c.memory.id: c for c in candidates}


async def test_word_matches_are_scored_and_stay_with_their_storyteller(ticking: Store) -> None:
    sid = (await ticking.storytellers.create("A")).id or 0
    other = (await ticking.storytellers.create("B")).id or 0
    titled = await ticking.memories.create(sid, WREN, "The cutpurse", "Quick hands on the quay.")
    told = await ticking.memories.create(sid, MAREN, "Lost her purse", "A cutpurse took it.")
    plain = await ticking.memories.create(sid, OSRIC, "Drinks", "Every night at the Lantern.")
    debts = await ticking.memories.create(sid, OSRIC, "Debts", "Owes the temple.")
    await ticking.memories.create(other, WREN, "The cutpurse", "Another storyteller's note.")
    found = by_id(
        await ticking.memories.candidates(
            sid, character_ids=(), words=("cutpurse", "debt"), limit=10
        )
    )
    assert set(found) == {titled.id, told.id, plain.id, debts.id}  # not the other's
    assert found[titled.id].words > found[told.id].words > 0  # a title match weighs more
    assert found[debts.id].words > 0  # "debt" matches "Debts" as a prefix
    assert found[plain.id].words == 0
    assert found[titled.id].memory.title == "The cutpurse"


async def test_each_candidate_list_is_cut_at_the_limit(ticking: Store) -> None:
    sid = (await ticking.storytellers.create("A")).id or 0
    made = [
        await ticking.memories.create(sid, OSRIC, f"Note {n}", "nothing much", importance=5)
        for n in range(30)
    ]
    vital = await ticking.memories.create(sid, OSRIC, "Vital", "x", importance=10)
    about = await ticking.memories.create(sid, MAREN, "About Maren", "x", importance=1)
    changed = await ticking.memories.update(sid, made[0].id, "Note 0, changed", "now")
    newest = await ticking.memories.create(sid, OSRIC, "Newest", "x", importance=1)
    found = by_id(await ticking.memories.candidates(sid, character_ids=(MAREN,), words=(), limit=2))
    assert len(found) <= 5 * 2
    assert {vital.id, about.id, changed.id, newest.id} <= set(found)
    assert made[5].id not in found  # old, plain, unchanged, about nobody involved
    assert await ticking.memories.candidates(sid, character_ids=(), words=(), limit=0) == []


async def test_open_situations_are_ranked_by_scope_and_recency(ticking: Store) -> None:
    situations = ticking.situations
    sid = (await ticking.storytellers.create("A")).id or 0
    storm = await situations.create(sid, "Storm season", "")
    fair = await situations.create(sid, "Harvest fair", "")
    quay = await situations.create(sid, "Quay smuggling", "", room_id=101)
    debt = await situations.create(sid, "Maren's debt", "", character_id=MAREN)
    temple = await situations.create(sid, "Temple feud", "", room_id=202)
    done = await situations.create(sid, "Old quarrel", "")
    await situations.update(sid, done.id, resolve=True)
    await situations.update(sid, storm.id, text="worse")  # changed last: first
    remit = await situations.open_universal(sid, limit=5)
    assert [s.id for s in remit] == [storm.id, fair.id]
    assert [s.id for s in await situations.open_universal(sid, limit=1)] == [storm.id]
    here = await situations.open_scoped(sid, room_id=101, character_ids=(MAREN,), limit=5)
    assert [s.id for s in here] == [debt.id, quay.id]  # characters first
    anywhere = await situations.open_scoped(sid, room_id=None, character_ids=(), limit=5)
    assert [s.id for s in anywhere] == [debt.id, temple.id, quay.id]
    in_room = await situations.open_scoped(sid, room_id=202, character_ids=(), limit=5)
    assert [s.id for s in in_room] == [temple.id]


def explained(statement: Any, conn: Any) -> str:
    """The statement as SQL text with its values written in, for EXPLAIN."""
    return str(statement.compile(conn.sync_engine, compile_kwargs={"literal_binds": True}))


async def test_sqlite_reads_every_list_from_an_index(sqlite_store: Store) -> None:
    statements = [
        memory_search.about_characters(1, (MAREN, OSRIC), 40),
        memory_search.newest_written(1, 40),
        memory_search.newest_changed(1, 40),
        memory_search.most_important(1, 40),
    ]
    words, params = memory_search.word_matches("sqlite", 1, ("cutpurse",), 40)
    async with sqlite_store.db.engine.connect() as conn:
        for statement in [*statements, words.params(params)]:
            rows = await conn.execute(text(f"EXPLAIN QUERY PLAN {explained(statement, conn)}"))
            plan = " | ".join(str(row[-1]) for row in rows)
            if statement is statements[0]:  # the newest about several characters: sorted
                assert "USING INDEX ix_character_memories_character" in plan, plan
            elif statement in statements:
                assert "USING INDEX ix_character_memories_" in plan, plan
                assert "TEMP B-TREE" not in plan, plan
            else:
                assert "VIRTUAL TABLE INDEX" in plan, plan
                assert "USING INTEGER PRIMARY KEY" in plan, plan


@pytest.mark.postgres
async def test_postgres_word_matches_use_the_word_index(pg_url: str) -> None:
    store = Store.open(pg_url, clock=SystemClock())
    await store.db.upgrade()
    try:
        sid = (await store.storytellers.create("A")).id or 0
        rows = [
            {"storyteller_id": sid, "character_id": MAREN, "title": f"Note {n}", "text": "tides",
             "created_on": T0}
            for n in range(3000)
        ]  # fmt: skip
        rows[1234]["text"] = "the cutpurse again"
        async with store.db.engine.begin() as conn:
            await conn.execute(insert(MemoryRow), rows)
            await conn.execute(text("ANALYZE character_memories"))
        words, params = memory_search.word_matches("postgresql", sid, ("cutpurse",), 40)
        async with store.db.engine.connect() as conn:
            # At this size a scan of the stored vectors is as cheap; the index must be usable.
            await conn.execute(text("SET enable_seqscan = off"))
            lines = await conn.execute(text(f"EXPLAIN {explained(words.params(params), conn)}"))
            plan = " | ".join(str(row[0]) for row in lines)
        assert "ix_character_memories_words" in plan, plan
        found = await store.memories.candidates(sid, character_ids=(), words=("cutpurse",), limit=5)
        assert [c.memory.title for c in found if c.words > 0] == ["Note 1234"]
    finally:
        await store.close()
