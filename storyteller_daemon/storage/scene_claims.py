"""Scene claims: which storyteller holds which room, until when (`domain.scenes`).

Taking a claim checks for another storyteller's and writes its own in one transaction. SQLite
has one writer at a time, so two claims of one room cannot interleave; on PostgreSQL the
transaction first takes an advisory lock named after the room, with the same effect.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.scenes import (
    MAX_CLAIM_REASON_CHARS,
    MAX_CLAIMS_PER_STORYTELLER,
    SceneClaim,
    claim_window,
)
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.story import SceneClaimRow
from storyteller_daemon.storage.models.storytellers import StorytellerRow
from storyteller_daemon.storage.storytellers import as_utc

_LOCK_SPACE = 0x5C3E  # keeps these advisory locks apart from any other use of them


def _claim(row: SceneClaimRow, name: str) -> SceneClaim:
    return SceneClaim(
        id=row.id,
        storyteller_id=row.storyteller_id,
        storyteller_name=name,
        room_id=row.room_id,
        claimed_at=as_utc(row.claimed_at),
        expires_at=as_utc(row.expires_at),
        reason=row.reason,
        released_at=as_utc(row.released_at) if row.released_at is not None else None,
    )


def _holding(now: datetime) -> tuple[object, ...]:
    return (
        SceneClaimRow.released_at.is_(None),
        SceneClaimRow.claimed_at <= now,
        SceneClaimRow.expires_at > now,
    )


class SceneClaimRepository:
    """Take, release and list scene claims."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def _lock_room(self, session: AsyncSession, room_id: int) -> None:
        if self._db.dialect == "postgresql":
            await session.execute(
                text("SELECT pg_advisory_xact_lock(:space, :room)"),
                {"space": _LOCK_SPACE, "room": room_id % 2**31},
            )

    async def claim(
        self, storyteller_id: int, room_id: int, *, minutes: int, reason: str
    ) -> SceneClaim:
        """Hold `room_id` for `minutes` from now (extending this storyteller's own claim).

        Raises:
            ConflictError: another storyteller holds the room (the message says who, and
                until when).
            ValidationError: a window outside 1-60 minutes, or too many claims held.
        """
        window = claim_window(minutes)
        reason = " ".join(reason.split())[:MAX_CLAIM_REASON_CHARS]
        now = self._clock.now()
        async with self._db.session() as session:
            await self._lock_room(session, room_id)
            held = (
                await session.execute(
                    select(SceneClaimRow, StorytellerRow.name)
                    .join(StorytellerRow, StorytellerRow.id == SceneClaimRow.storyteller_id)
                    .where(SceneClaimRow.room_id == room_id, *_holding(now))  # type: ignore[arg-type]
                    .order_by(SceneClaimRow.id)
                )
            ).all()
            mine = next((row for row, _ in held if row.storyteller_id == storyteller_id), None)
            other = next(((r, n) for r, n in held if r.storyteller_id != storyteller_id), None)
            if other is not None:
                row, name = other
                raise ConflictError(
                    f"Room #{room_id} is claimed by storyteller {name} until "
                    f"{as_utc(row.expires_at):%H:%M} UTC ({row.reason or 'no reason given'})."
                )
            if mine is None:
                count = (
                    await session.execute(
                        select(func.count(SceneClaimRow.id)).where(
                            SceneClaimRow.storyteller_id == storyteller_id,
                            *_holding(now),  # type: ignore[arg-type]
                        )
                    )
                ).scalar_one()
                if count >= MAX_CLAIMS_PER_STORYTELLER:
                    raise ValidationError(
                        f"This storyteller already holds {count} scenes (at most "
                        f"{MAX_CLAIMS_PER_STORYTELLER}); release one first."
                    )
                mine = SceneClaimRow(storyteller_id=storyteller_id, room_id=room_id, claimed_at=now)
                session.add(mine)
            mine.expires_at, mine.reason = now + window, reason
            await session.flush()
            owner = await session.get(StorytellerRow, storyteller_id)
            return _claim(mine, owner.name if owner is not None else "")

    async def release(self, storyteller_id: int, room_id: int) -> SceneClaim:
        """End this storyteller's claim on `room_id` now.

        Raises:
            NotFoundError: it holds no claim on that room.
        """
        now = self._clock.now()
        async with self._db.session() as session:
            row = (
                await session.execute(
                    select(SceneClaimRow).where(
                        SceneClaimRow.storyteller_id == storyteller_id,
                        SceneClaimRow.room_id == room_id,
                        *_holding(now),  # type: ignore[arg-type]
                    )
                )
            ).scalar_one_or_none()
            if row is None:
                raise NotFoundError(f"This storyteller holds no claim on room #{room_id}.")
            row.released_at = now
            await session.flush()
            owner = await session.get(StorytellerRow, storyteller_id)
            return _claim(row, owner.name if owner is not None else "")

    async def active(self, room_ids: Collection[int] | None = None) -> list[SceneClaim]:
        """Claims holding now (on `room_ids`, or anywhere), by room, then oldest first."""
        now = self._clock.now()
        query = (
            select(SceneClaimRow, StorytellerRow.name)
            .join(StorytellerRow, StorytellerRow.id == SceneClaimRow.storyteller_id)
            .where(*_holding(now))  # type: ignore[arg-type]
            .order_by(SceneClaimRow.room_id, SceneClaimRow.id)
        )
        if room_ids is not None:
            query = query.where(SceneClaimRow.room_id.in_(sorted(room_ids)))
        # Read on every turn and before every prog call: a reading connection takes no turn
        # among the writers.
        async with self._db.reading() as connection, AsyncSession(bind=connection) as session:
            return [_claim(row, name) for row, name in (await session.execute(query)).all()]

    async def recent(self, limit: int = 50) -> list[SceneClaim]:
        """The newest claims, held or not (the admin's view), newest first."""
        query = (
            select(SceneClaimRow, StorytellerRow.name)
            .join(StorytellerRow, StorytellerRow.id == SceneClaimRow.storyteller_id)
            .order_by(SceneClaimRow.id.desc())
            .limit(limit)
        )
        async with self._db.session() as session:
            return [_claim(row, name) for row, name in (await session.execute(query)).all()]
