"""Switches every daemon of the database honours (the kill switch's database twin)."""

from __future__ import annotations

from sqlalchemy import select

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.cluster import ClusterFlagRow


class ClusterFlagRepository:
    """Reads and sets named on/off flags shared by every daemon of the database."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def on(self, name: str) -> bool:
        """Whether the flag is set (a flag never set is off)."""
        async with self._db.reading() as connection:
            value = await connection.scalar(
                select(ClusterFlagRow.on).where(ClusterFlagRow.name == name)
            )
        return bool(value)

    async def set(self, name: str, on: bool, *, by: str) -> None:
        """Set the flag on or off, noting who did and when."""
        async with self._db.session() as session:
            row = await session.get(ClusterFlagRow, name)
            now = self._clock.now()
            if row is None:
                session.add(ClusterFlagRow(name=name, on=on, changed_at=now, changed_by=by))
            else:
                row.on, row.changed_at, row.changed_by = on, now, by
