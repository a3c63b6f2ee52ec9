"""The verdict memory on SQLite and PostgreSQL: two passes keeping the same ignored text at
once (two daemons while a storyteller changes hands) both succeed, and one entry stays."""

from __future__ import annotations

import asyncio

from storyteller_daemon.domain.verdict_memory import recallable
from storyteller_daemon.storage.store import Store


async def test_the_same_text_kept_by_two_passes_at_once_is_kept_once(store: Store) -> None:
    st = await store.storytellers.create("Watcher")
    assert st.id is not None
    sid = st.id
    event = recallable(
        "room_echo", "Gulls wheel and shriek above the masts.", room_id=101, zone_id=1
    )
    assert event is not None

    async def keep(item: int) -> None:
        await store.verdicts.remember(sid, [(event, item)], prompts="p")

    await asyncio.gather(*(keep(n) for n in range(1, 7)))
    kept = await store.verdicts.list(sid)
    assert len(kept) == 1
