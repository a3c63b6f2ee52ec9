"""The turn journal: what a running turn has done (see `agent.ports.TurnJournal`).

A turn notes each model answer as it comes and keeps the result of each call that writes the
storyteller's notes in the same transaction as the writes (`Database.unit`), so a turn cut off
by a crash and run again under its key replays its answers and results from here: no model
request is made twice, no situation or memory is written twice. The turn's entries are deleted
by `forget` in the transaction that completes it; `prune` removes those of turns that never
completed (given up) once they are older than the backlog keeps finished work. Given a `Fence`
(a daemon of a cluster), an entry is kept only while the daemon holds the turn's storyteller:
a daemon that lost the lease cannot record what its turn did (`LeaseLost`, nothing written,
the writes of a call kept with it rolled back).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.models.work import TurnJournalRow, WorkRow


class TurnJournalRepository:
    """Keeps and reads turns' journal entries."""

    def __init__(self, db: Database, clock: Clock, fence: Fence | None = None) -> None:
        self._db = db
        self._clock = clock
        self._fence = fence

    async def _guard(self, session: AsyncSession, turn_key: str) -> None:
        """Refuse the write unless the fence holds the turn's storyteller (no fence: none)."""
        if self._fence is not None:
            owners = await session.scalars(
                select(WorkRow.storyteller_id).where(WorkRow.turn_key == turn_key).distinct()
            )
            await self._fence.check(session, set(owners))

    async def entries(self, turn_key: str) -> dict[str, str]:
        """Every entry of the turn, by name."""
        async with self._db.session() as session:
            rows = await session.execute(
                select(TurnJournalRow.entry, TurnJournalRow.body).where(
                    TurnJournalRow.turn_key == turn_key
                )
            )
            return {str(entry): str(body) for entry, body in rows}

    async def note(self, turn_key: str, entry: str, body: str) -> None:
        """Keep an entry; one kept before under the name stays."""
        async with self._db.session() as session:
            await self._keep(session, turn_key, entry, body)

    async def once(
        self, turn_key: str, entry: str, write: Callable[[], Awaitable[str]]
    ) -> tuple[str, bool]:
        """Run `write` and keep its result with its writes in one transaction, unless the
        entry is kept already (then its body, and True)."""
        async with self._db.unit():
            # Read inside the unit only once `write` is known to be needed: the look-up is a
            # plain read, and the unit's transaction begins at `write`'s first write.
            kept = await self._kept(turn_key, entry)
            if kept is not None:
                return kept, True
            body = await write()
            async with self._db.session() as session:
                await self._keep(session, turn_key, entry, body)
            return body, False

    async def _kept(self, turn_key: str, entry: str) -> str | None:
        async with self._db.reading() as connection:
            return await connection.scalar(
                select(TurnJournalRow.body).where(
                    TurnJournalRow.turn_key == turn_key, TurnJournalRow.entry == entry
                )
            )

    async def _keep(self, session: AsyncSession, turn_key: str, entry: str, body: str) -> None:
        await self._guard(session, turn_key)
        await session.execute(  # one kept before under the name stays
            self._db.insert_new(TurnJournalRow).values(
                turn_key=turn_key, entry=entry, body=body, created_at=self._clock.now()
            )
        )

    async def forget(self, turn_key: str) -> int:
        """Delete the turn's entries (it completed); return how many."""
        async with self._db.session() as session:
            await self._guard(session, turn_key)
            result = await session.execute(
                delete(TurnJournalRow).where(TurnJournalRow.turn_key == turn_key)
            )
            return int(getattr(result, "rowcount", 0) or 0)

    async def prune(self, *, created_before: datetime) -> int:
        """Delete entries kept before a time (turns that never completed); return how many."""
        async with self._db.session() as session:
            result = await session.execute(
                delete(TurnJournalRow).where(TurnJournalRow.created_at < created_before)
            )
            return int(getattr(result, "rowcount", 0) or 0)
