"""Situations and character memories of a storyteller."""

from __future__ import annotations

import builtins
from collections.abc import Collection

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.domain.situations import CharacterMemory, Situation, check_scope
from storyteller_daemon.errors import NotFoundError, ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models import MemoryRow, SituationRow
from storyteller_daemon.storage.storytellers import Clock, as_utc, utc_now


def situation_to_domain(row: SituationRow) -> Situation:
    """Row → `Situation`."""
    return Situation(
        id=row.id,
        storyteller_id=row.storyteller_id,
        title=row.title,
        text=row.text,
        created_on=as_utc(row.created_on),
        resolved=row.resolved,
        character_id=row.scope_character_id,
        room_id=row.scope_room_id,
    )


def memory_to_domain(row: MemoryRow) -> CharacterMemory:
    """Row → `CharacterMemory`."""
    return CharacterMemory(
        id=row.id,
        storyteller_id=row.storyteller_id,
        character_id=row.character_id,
        title=row.title,
        text=row.text,
        created_on=as_utc(row.created_on),
    )


def _require_title(title: str) -> str:
    if not title.strip():
        raise ValidationError("Title must not be blank.")
    return title.strip()


class SituationRepository:
    """Open, change, resolve and list situations. Situations are resolved, never deleted."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    @staticmethod
    async def _row(session: AsyncSession, storyteller_id: int, situation_id: int) -> SituationRow:
        row = await session.get(SituationRow, situation_id)
        if row is None or row.storyteller_id != storyteller_id:
            raise NotFoundError(f"No situation with id {situation_id} exists.")
        return row

    async def create(
        self,
        storyteller_id: int,
        title: str,
        text: str,
        *,
        character_id: int | None = None,
        room_id: int | None = None,
    ) -> Situation:
        """Open a situation, optionally scoped to one character or one room."""
        check_scope(character_id, room_id)
        async with self._db.session() as session:
            row = SituationRow(
                storyteller_id=storyteller_id,
                title=_require_title(title),
                text=text,
                created_on=self._clock(),
                resolved=False,
                scope_character_id=character_id,
                scope_room_id=room_id,
            )
            session.add(row)
            await session.flush()
            return situation_to_domain(row)

    async def get(self, storyteller_id: int, situation_id: int) -> Situation:
        """One of this storyteller's situations (resolved ones too)."""
        async with self._db.session() as session:
            return situation_to_domain(await self._row(session, storyteller_id, situation_id))

    async def update(
        self,
        storyteller_id: int,
        situation_id: int,
        *,
        title: str | None = None,
        text: str | None = None,
        character_id: int | None = None,
        room_id: int | None = None,
        resolve: bool = False,
    ) -> Situation:
        """Change title/text; a given scope replaces the old one (None leaves it); maybe resolve."""
        check_scope(character_id, room_id)
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, situation_id)
            if title is not None:
                row.title = _require_title(title)
            if text is not None:
                row.text = text
            if character_id is not None:
                row.scope_character_id, row.scope_room_id = character_id, None
            elif room_id is not None:
                row.scope_character_id, row.scope_room_id = None, room_id
            if resolve:
                row.resolved = True
            await session.flush()
            return situation_to_domain(row)

    async def set_scope(
        self, storyteller_id: int, situation_id: int, character_id: int | None, room_id: int | None
    ) -> Situation:
        """Set the scope exactly (both None makes the situation universal)."""
        check_scope(character_id, room_id)
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, situation_id)
            row.scope_character_id, row.scope_room_id = character_id, room_id
            await session.flush()
            return situation_to_domain(row)

    async def list(self, storyteller_id: int, *, include_resolved: bool = True) -> list[Situation]:
        """Unresolved first, then by creation."""
        query = select(SituationRow).where(SituationRow.storyteller_id == storyteller_id)
        if not include_resolved:
            query = query.where(SituationRow.resolved.is_(False))
        query = query.order_by(SituationRow.resolved, SituationRow.created_on, SituationRow.id)
        async with self._db.session() as session:
            return [situation_to_domain(r) for r in (await session.execute(query)).scalars()]

    async def open_for_trigger(
        self,
        storyteller_id: int,
        *,
        room_id: int | None,
        character_ids: Collection[int],
        limit: int,
    ) -> builtins.list[Situation]:
        """The newest `limit` unresolved situations that concern a trigger, oldest first.

        With no room and no characters every open situation concerns it (heartbeats, direct).
        """
        query = (
            select(SituationRow)
            .where(SituationRow.storyteller_id == storyteller_id)
            .where(SituationRow.resolved.is_(False))
        )
        if room_id is not None or character_ids:
            universal = and_(
                SituationRow.scope_character_id.is_(None), SituationRow.scope_room_id.is_(None)
            )
            scoped = [universal]
            if room_id is not None:
                scoped.append(SituationRow.scope_room_id == room_id)
            if character_ids:
                scoped.append(SituationRow.scope_character_id.in_(list(character_ids)))
            query = query.where(or_(*scoped))
        query = query.order_by(SituationRow.created_on.desc(), SituationRow.id.desc()).limit(limit)
        async with self._db.session() as session:
            rows = [situation_to_domain(r) for r in (await session.execute(query)).scalars()]
        return list(reversed(rows))


class MemoryRepository:
    """Per-character memories. Forgetting deletes the row."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
        self._db = db
        self._clock = clock

    @staticmethod
    async def _row(session: AsyncSession, storyteller_id: int, memory_id: int) -> MemoryRow:
        row = await session.get(MemoryRow, memory_id)
        if row is None or row.storyteller_id != storyteller_id:
            raise NotFoundError(f"No memory with id {memory_id} exists.")
        return row

    async def create(
        self, storyteller_id: int, character_id: int, title: str, text: str
    ) -> CharacterMemory:
        """Remember something about a character."""
        if character_id <= 0:
            raise ValidationError("Character id must be a positive integer.")
        async with self._db.session() as session:
            row = MemoryRow(
                storyteller_id=storyteller_id,
                character_id=character_id,
                title=_require_title(title),
                text=text,
                created_on=self._clock(),
            )
            session.add(row)
            await session.flush()
            return memory_to_domain(row)

    async def get(self, storyteller_id: int, memory_id: int) -> CharacterMemory:
        """One memory of this storyteller."""
        async with self._db.session() as session:
            return memory_to_domain(await self._row(session, storyteller_id, memory_id))

    async def update(
        self, storyteller_id: int, memory_id: int, title: str, text: str
    ) -> CharacterMemory:
        """Replace a memory's title and text."""
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, memory_id)
            row.title, row.text = _require_title(title), text
            await session.flush()
            return memory_to_domain(row)

    async def forget(self, storyteller_id: int, memory_id: int) -> CharacterMemory:
        """Delete a memory for good."""
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, memory_id)
            gone = memory_to_domain(row)
            await session.execute(delete(MemoryRow).where(MemoryRow.id == memory_id))
            return gone

    async def list(
        self, storyteller_id: int, character_id: int | None = None
    ) -> list[CharacterMemory]:
        """This storyteller's memories, optionally about one character, oldest first."""
        query = select(MemoryRow).where(MemoryRow.storyteller_id == storyteller_id)
        if character_id is not None:
            query = query.where(MemoryRow.character_id == character_id)
        query = query.order_by(MemoryRow.created_on, MemoryRow.id)
        async with self._db.session() as session:
            return [memory_to_domain(r) for r in (await session.execute(query)).scalars()]

    async def counts_by_character(self, storyteller_id: int) -> dict[int, int]:
        """Character id → number of memories, for player summaries."""
        query = (
            select(MemoryRow.character_id, func.count(MemoryRow.id))
            .where(MemoryRow.storyteller_id == storyteller_id)
            .group_by(MemoryRow.character_id)
        )
        async with self._db.session() as session:
            return dict((await session.execute(query)).all())
