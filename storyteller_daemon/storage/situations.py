"""Situations of a storyteller, and the provenance every situation and memory records.

Every write records a `Provenance` (the run and events behind it, and whether players' text
reached it); once from a player, always from a player.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Collection
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Select, and_, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.situations import (
    ADMIN_PROVENANCE,
    Provenance,
    Situation,
    check_scope,
)
from storyteller_daemon.errors import NotFoundError, ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.story import MemoryRow, SituationRow
from storyteller_daemon.storage.storytellers import as_utc


def when(value: datetime | None) -> datetime | None:
    return as_utc(value) if value is not None else None


def provenance_of(row: MemoryRow | SituationRow) -> Provenance:
    """The provenance stored on a row."""
    events = tuple(json.loads(row.source_events)) if row.source_events else ()
    return Provenance(run=row.source_run, events=events, from_player=row.from_player)


def store_provenance(row: MemoryRow | SituationRow, provenance: Provenance) -> None:
    row.source_run = provenance.run
    row.source_events = json.dumps(list(provenance.events)) if provenance.events else ""
    row.from_player = provenance.from_player


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
        provenance=provenance_of(row),
        updated_on=when(row.updated_on),
        resolved_on=when(row.resolved_on),
    )


def require_title(title: str) -> str:
    if not title.strip():
        raise ValidationError("Title must not be blank.")
    return title.strip()


class SituationRepository:
    """Open, change, resolve and list situations. Situations are resolved, never deleted."""

    def __init__(self, db: Database, clock: Clock) -> None:
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
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> Situation:
        """Open a situation, optionally scoped to one character or one room."""
        check_scope(character_id, room_id)
        async with self._db.session() as session:
            row = SituationRow(
                storyteller_id=storyteller_id,
                title=require_title(title),
                text=text,
                created_on=self._clock.now(),
                resolved=False,
                scope_character_id=character_id,
                scope_room_id=room_id,
            )
            store_provenance(row, provenance)
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
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> Situation:
        """Change title/text; a given scope replaces the old one (None leaves it); maybe resolve.

        A change of title or text joins `provenance` to the situation's own.
        """
        check_scope(character_id, room_id)
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, situation_id)
            now = self._clock.now()
            if title is not None or text is not None:
                store_provenance(row, provenance_of(row).joined(provenance))
            if title is not None:
                row.title = require_title(title)
            if text is not None:
                row.text = text
            if character_id is not None:
                row.scope_character_id, row.scope_room_id = character_id, None
            elif room_id is not None:
                row.scope_character_id, row.scope_room_id = None, room_id
            if resolve and not row.resolved:
                row.resolved, row.resolved_on = True, now
            row.updated_on = now
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

    async def changed_since(
        self, storyteller_id: int, since: datetime | None, *, resolved: bool, limit: int
    ) -> builtins.list[Situation]:
        """Resolved situations resolved at or after `since`, or open ones opened or changed at
        or after it (None: any time); the newest `limit` by their latest change, oldest first."""
        latest = func.coalesce(SituationRow.updated_on, SituationRow.created_on)
        query = select(SituationRow).where(
            SituationRow.storyteller_id == storyteller_id, SituationRow.resolved.is_(resolved)
        )
        if since is not None and resolved:
            query = query.where(SituationRow.resolved_on >= since)
        elif since is not None:
            query = query.where(
                or_(SituationRow.created_on >= since, SituationRow.updated_on >= since)
            )
        query = query.order_by(latest.desc(), SituationRow.id.desc()).limit(limit)
        async with self._db.session() as session:
            rows = [situation_to_domain(r) for r in (await session.execute(query)).scalars()]
        return list(reversed(rows))

    async def open_universal(self, storyteller_id: int, *, limit: int) -> builtins.list[Situation]:
        """The `limit` most recently changed unresolved universal situations, newest first."""
        query = _open(storyteller_id).where(
            SituationRow.scope_character_id.is_(None), SituationRow.scope_room_id.is_(None)
        )
        return await self._read(query.order_by(*_NEWEST).limit(limit))

    async def open_scoped(
        self,
        storyteller_id: int,
        *,
        room_id: int | None,
        character_ids: Collection[int],
        limit: int,
    ) -> builtins.list[Situation]:
        """Unresolved situations scoped to a trigger's characters or room, best first.

        Those about one of `character_ids` come first, then those of `room_id`, the most
        recently changed first within each; `limit` at most. With no room and no characters
        (heartbeats, direct invocations) every scoped situation concerns the trigger.
        """
        query = _open(storyteller_id)
        about = SituationRow.scope_character_id.is_not(None)
        if room_id is None and not character_ids:
            query = query.where(or_(about, SituationRow.scope_room_id.is_not(None)))
        else:
            scoped: list[ColumnElement[bool]] = [
                SituationRow.scope_character_id.in_(sorted(character_ids))
            ]
            if room_id is not None:
                scoped.append(SituationRow.scope_room_id == room_id)
            query = query.where(or_(*scoped))
        first = case((about, 0), else_=1)
        return await self._read(query.order_by(first, *_NEWEST).limit(limit))

    async def _read(self, query: Select[Any]) -> builtins.list[Situation]:
        async with self._db.reading() as conn:
            rows = (await conn.execute(query)).all()
        # A row of the situation table's columns reads like the ORM row.
        return [situation_to_domain(cast(SituationRow, row)) for row in rows]


_NEWEST = (
    func.coalesce(SituationRow.updated_on, SituationRow.created_on).desc(),
    SituationRow.id.desc(),
)


def _open(storyteller_id: int) -> Select[Any]:
    """The storyteller's unresolved situations, every column of the table."""
    return (
        select(*SituationRow.__table__.c)
        .where(SituationRow.storyteller_id == storyteller_id)
        .where(SituationRow.resolved.is_(False))
    )
