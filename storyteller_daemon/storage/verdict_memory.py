"""The verdict memory: ignore verdicts kept to settle repeats by rule (`domain.verdict_memory`).

The attention stage `recall`s the entries for a batch's events (made under the storyteller's
current prompts, within the horizon), counts the `hit`s, and `remember`s what the model newly
ignored; `invalidate` clears entries made under other prompts. The admin lists (`list`) and
clears (`clear`) them. `relevant_characters` names the characters a storyteller keeps notes on
(open situations, memories), whose speech the memory never settles.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.verdict_memory import Recallable, SettledVerdict
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.story import MemoryRow, SituationRow
from storyteller_daemon.storage.models.work import SettledVerdictRow
from storyteller_daemon.storage.storytellers import as_utc

_CHUNK = 500


def _verdict(row: SettledVerdictRow) -> SettledVerdict:
    return SettledVerdict(
        id=row.id,
        storyteller_id=row.storyteller_id,
        key=row.key,
        kind=row.kind,
        speaker_id=row.speaker_id,
        room_class=row.room_class,
        text=row.text,
        item_id=row.item_id,
        prompts=row.prompts,
        ignored_at=as_utc(row.ignored_on),
        hits=row.hits,
        last_hit_at=as_utc(row.last_hit_on) if row.last_hit_on is not None else None,
    )


class VerdictMemoryRepository:
    """Reads and writes the settled verdicts of every storyteller."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def recall(
        self, storyteller_id: int, keys: Collection[str], *, prompts: str, since: datetime
    ) -> dict[str, SettledVerdict]:
        """The entries for `keys` made under `prompts` at or after `since`, by key."""
        found: dict[str, SettledVerdict] = {}
        wanted = sorted(set(keys))
        async with self._db.reading() as connection, AsyncSession(bind=connection) as session:
            for start in range(0, len(wanted), _CHUNK):
                rows = await session.scalars(
                    select(SettledVerdictRow).where(
                        SettledVerdictRow.storyteller_id == storyteller_id,
                        SettledVerdictRow.key.in_(wanted[start : start + _CHUNK]),
                        SettledVerdictRow.prompts == prompts,
                        SettledVerdictRow.ignored_on >= since,
                    )
                )
                found.update((row.key, _verdict(row)) for row in rows)
        return found

    async def hit(self, ids: Sequence[int]) -> None:
        """Count one settled event against each entry of `ids` (an id may repeat)."""
        if not ids:
            return
        now = self._clock.now()
        by_count: dict[int, list[int]] = {}  # one statement per number of hits (mostly one)
        for entry, n in sorted(Counter(ids).items()):
            by_count.setdefault(n, []).append(entry)
        async with self._db.session() as session:
            for n, entries in by_count.items():
                for start in range(0, len(entries), _CHUNK):
                    await session.execute(
                        update(SettledVerdictRow)
                        .where(SettledVerdictRow.id.in_(entries[start : start + _CHUNK]))
                        .values(hits=SettledVerdictRow.hits + n, last_hit_on=now)
                    )

    async def remember(
        self, storyteller_id: int, ignored: Sequence[tuple[Recallable, int]], *, prompts: str
    ) -> None:
        """Keep what the model ignored now (event, work item), replacing older entries."""
        if not ignored:
            return
        now = self._clock.now()
        latest = {event.key: (event, item_id) for event, item_id in ignored}
        keys = sorted(latest)
        async with self._db.session() as session:
            for start in range(0, len(keys), _CHUNK):
                await session.execute(
                    delete(SettledVerdictRow).where(
                        SettledVerdictRow.storyteller_id == storyteller_id,
                        SettledVerdictRow.key.in_(keys[start : start + _CHUNK]),
                    )
                )
            await session.execute(  # one written meanwhile by another pass is as fresh
                self._db.insert_new(SettledVerdictRow),
                [
                    {
                        "storyteller_id": storyteller_id,
                        "key": key,
                        "kind": event.kind,
                        "speaker_id": event.speaker_id,
                        "room_class": event.room_class,
                        "text": event.text,
                        "item_id": item_id,
                        "prompts": prompts,
                        "ignored_on": now,
                        "hits": 0,
                    }
                    for key, (event, item_id) in latest.items()
                ],
            )

    async def invalidate(self, storyteller_id: int, *, keep_prompts: str) -> int:
        """Clear the entries made under prompts other than `keep_prompts`; how many."""
        async with self._db.session() as session:
            result = await session.execute(
                delete(SettledVerdictRow).where(
                    SettledVerdictRow.storyteller_id == storyteller_id,
                    SettledVerdictRow.prompts != keep_prompts,
                )
            )
        return int(getattr(result, "rowcount", 0) or 0)

    async def list(
        self, storyteller_id: int, *, since: datetime | None = None, limit: int = 1000
    ) -> list[SettledVerdict]:
        """Entries of a storyteller, the most used first (then the newest)."""
        query = select(SettledVerdictRow).where(SettledVerdictRow.storyteller_id == storyteller_id)
        if since is not None:
            query = query.where(SettledVerdictRow.ignored_on >= since)
        query = query.order_by(
            SettledVerdictRow.hits.desc(), SettledVerdictRow.ignored_on.desc()
        ).limit(limit)
        async with self._db.session() as session:
            return [_verdict(row) for row in await session.scalars(query)]

    async def clear(self, storyteller_id: int, ids: Collection[int] | None = None) -> int:
        """Clear a storyteller's entries (only `ids`, when given); how many went."""
        statement = delete(SettledVerdictRow).where(
            SettledVerdictRow.storyteller_id == storyteller_id
        )
        if ids is not None:
            statement = statement.where(SettledVerdictRow.id.in_(sorted(ids)))
        async with self._db.session() as session:
            result = await session.execute(statement)
        return int(getattr(result, "rowcount", 0) or 0)

    async def prune(self, *, ignored_before: datetime) -> int:
        """Delete entries older than any horizon can reach; how many."""
        async with self._db.session() as session:
            result = await session.execute(
                delete(SettledVerdictRow).where(SettledVerdictRow.ignored_on < ignored_before)
            )
        return int(getattr(result, "rowcount", 0) or 0)

    async def relevant_characters(self, storyteller_id: int) -> frozenset[int]:
        """Characters the storyteller keeps notes on: open situations about them, memories."""
        async with self._db.reading() as connection, AsyncSession(bind=connection) as session:
            scoped = await session.scalars(
                select(SituationRow.scope_character_id)
                .where(
                    SituationRow.storyteller_id == storyteller_id,
                    SituationRow.resolved.is_(False),
                    SituationRow.scope_character_id.is_not(None),
                )
                .distinct()
            )
            remembered = await session.scalars(
                select(MemoryRow.character_id)
                .where(MemoryRow.storyteller_id == storyteller_id)
                .distinct()
            )
            return frozenset(c for c in (*scoped, *remembered) if c is not None)
