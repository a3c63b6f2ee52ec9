"""The audit log: admin actions on players' data (exports, erasures), with counts, never data."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.character_data import AuditEntry
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.records import AuditRow
from storyteller_daemon.storage.storytellers import as_utc


def audit_to_domain(row: AuditRow) -> AuditEntry:
    """Row → `AuditEntry`."""
    return AuditEntry(
        id=row.id,
        at=as_utc(row.at),
        actor=row.actor,
        action=row.action,
        subject=row.subject,
        detail=json.loads(row.detail) if row.detail else {},
    )


class AuditRepository:
    """Writes and reads the audit log."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def add_in(
        self, session: AsyncSession, actor: str, action: str, subject: str, detail: dict[str, Any]
    ) -> AuditEntry:
        """Write one entry in `session`'s transaction (it stands or falls with the action)."""
        row = AuditRow(
            at=self._clock.now(),
            actor=actor,
            action=action,
            subject=subject,
            detail=json.dumps(detail, sort_keys=True, separators=(",", ":")),
        )
        session.add(row)
        await session.flush()
        return audit_to_domain(row)

    async def add(
        self, actor: str, action: str, subject: str, detail: dict[str, Any]
    ) -> AuditEntry:
        """Write one entry in a transaction of its own."""
        async with self._db.session() as session:
            return await self.add_in(session, actor, action, subject, detail)

    async def list(
        self, *, subject: str | None = None, action: str | None = None, limit: int = 100
    ) -> list[AuditEntry]:
        """Entries, newest first, optionally about one subject or of one action."""
        query = select(AuditRow).order_by(AuditRow.at.desc(), AuditRow.id.desc()).limit(limit)
        if subject is not None:
            query = query.where(AuditRow.subject == subject)
        if action is not None:
            query = query.where(AuditRow.action == action)
        async with self._db.session() as session:
            return [audit_to_domain(r) for r in await session.scalars(query)]
