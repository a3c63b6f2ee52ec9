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


async def test_hits_are_counted_once_per_entry_named(store: Store) -> None:
    st = await store.storytellers.create("Watcher")
    assert st.id is not None
    sid = st.id
    gulls, bell, rain = (
        recallable("room_echo", text, room_id=101, zone_id=1)
        for text in ("Gulls wheel above the masts.", "A bell tolls.", "Rain drums on the roofs.")
    )
    assert gulls is not None and bell is not None and rain is not None
    await store.verdicts.remember(sid, [(gulls, 1), (bell, 2), (rain, 3)], prompts="p")
    ids = {entry.text: entry.id for entry in await store.verdicts.list(sid)}
    first, second = ids[gulls.text], ids[bell.text]

    await store.verdicts.hit([first, second, first])
    await store.verdicts.hit([second])

    kept = await store.verdicts.list(sid)
    assert {entry.text: entry.hits for entry in kept} == {gulls.text: 2, bell.text: 2, rain.text: 0}
    assert all((entry.last_hit_at is not None) == (entry.hits > 0) for entry in kept)
