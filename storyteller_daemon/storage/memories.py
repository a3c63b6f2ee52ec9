"""Character memories of a storyteller, with their provenance and edit history.

Every change to a memory is kept in `memory_edits` (who or what made it, when, the title and text
before and after), forgetting and consolidation included; the history outlives the memory until
the character is erased.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Row, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.memory_ranking import MemoryCandidate
from storyteller_daemon.domain.situations import (
    ADMIN_PROVENANCE,
    DEFAULT_IMPORTANCE,
    CharacterMemory,
    MemoryAction,
    MemoryEdit,
    Provenance,
    check_importance,
)
from storyteller_daemon.errors import NotFoundError, ValidationError
from storyteller_daemon.storage import memory_search
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.story import MemoryEditRow, MemoryRow
from storyteller_daemon.storage.situations import (
    provenance_of,
    require_title,
    store_provenance,
    when,
)
from storyteller_daemon.storage.storytellers import as_utc


def memory_to_domain(row: MemoryRow) -> CharacterMemory:
    """Row → `CharacterMemory`."""
    return CharacterMemory(
        id=row.id,
        storyteller_id=row.storyteller_id,
        character_id=row.character_id,
        title=row.title,
        text=row.text,
        created_on=as_utc(row.created_on),
        importance=row.importance,
        provenance=provenance_of(row),
        updated_on=when(row.updated_on),
    )


def edit_to_domain(row: MemoryEditRow) -> MemoryEdit:
    """Row → `MemoryEdit`."""
    return MemoryEdit(
        id=row.id,
        storyteller_id=row.storyteller_id,
        memory_id=row.memory_id,
        character_id=row.character_id,
        action=MemoryAction(row.action),
        actor=row.actor,
        at=as_utc(row.at),
        title_before=row.title_before,
        text_before=row.text_before,
        title_after=row.title_after,
        text_after=row.text_after,
        from_player=row.from_player,
    )


class MemoryRepository:
    """Per-character memories, with their edit history. Forgetting deletes the memory; its
    history stays until the character is erased."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    @staticmethod
    async def _row(session: AsyncSession, storyteller_id: int, memory_id: int) -> MemoryRow:
        row = await session.get(MemoryRow, memory_id)
        if row is None or row.storyteller_id != storyteller_id:
            raise NotFoundError(f"No memory with id {memory_id} exists.")
        return row

    def _edit(
        self,
        row: MemoryRow,
        action: MemoryAction,
        actor: str,
        before: tuple[str, str] | None,
        after: tuple[str, str] | None,
    ) -> MemoryEditRow:
        return MemoryEditRow(
            storyteller_id=row.storyteller_id,
            memory_id=row.id,
            character_id=row.character_id,
            action=action.value,
            actor=actor,
            at=self._clock.now(),
            title_before=before[0] if before else None,
            text_before=before[1] if before else None,
            title_after=after[0] if after else None,
            text_after=after[1] if after else None,
            from_player=row.from_player,
        )

    async def create(
        self,
        storyteller_id: int,
        character_id: int,
        title: str,
        text: str,
        *,
        importance: int = DEFAULT_IMPORTANCE,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> CharacterMemory:
        """Remember something about a character (importance 1-10)."""
        if character_id <= 0:
            raise ValidationError("Character id must be a positive integer.")
        async with self._db.session() as session:
            row = MemoryRow(
                storyteller_id=storyteller_id,
                character_id=character_id,
                title=require_title(title),
                text=text,
                created_on=self._clock.now(),
                importance=check_importance(importance),
            )
            store_provenance(row, provenance)
            session.add(row)
            await session.flush()
            after = (row.title, row.text)
            session.add(self._edit(row, MemoryAction.CREATED, provenance.actor, None, after))
            return memory_to_domain(row)

    async def get(self, storyteller_id: int, memory_id: int) -> CharacterMemory:
        """One memory of this storyteller."""
        async with self._db.session() as session:
            return memory_to_domain(await self._row(session, storyteller_id, memory_id))

    async def update(
        self,
        storyteller_id: int,
        memory_id: int,
        title: str,
        text: str,
        *,
        importance: int | None = None,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> CharacterMemory:
        """Replace a memory's title and text (and importance, when given); the change joins
        `provenance` to the memory's own and goes into its history."""
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, memory_id)
            before = (row.title, row.text)
            row.title, row.text = require_title(title), text
            if importance is not None:
                row.importance = check_importance(importance)
            store_provenance(row, provenance_of(row).joined(provenance))
            row.updated_on = self._clock.now()
            after = (row.title, row.text)
            session.add(self._edit(row, MemoryAction.UPDATED, provenance.actor, before, after))
            await session.flush()
            return memory_to_domain(row)

    async def forget(
        self,
        storyteller_id: int,
        memory_id: int,
        *,
        provenance: Provenance = ADMIN_PROVENANCE,
    ) -> CharacterMemory:
        """Delete a memory for good (its history records who did)."""
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, memory_id)
            gone = memory_to_domain(row)
            before = (row.title, row.text)
            session.add(self._edit(row, MemoryAction.FORGOTTEN, provenance.actor, before, None))
            await session.execute(delete(MemoryRow).where(MemoryRow.id == memory_id))
            return gone

    async def consolidate(
        self,
        storyteller_id: int,
        keep_id: int,
        merged_ids: Collection[int],
        title: str,
        text: str,
        *,
        actor: str,
    ) -> CharacterMemory:
        """Merge memories about one character into `keep_id`, in one transaction.

        The kept memory takes `title` and `text`, the highest importance and the joined
        provenance of all; the merged ones are deleted. The history records an ``absorbed``
        entry for the kept memory and a ``consolidated`` entry for each merged one.

        Raises:
            NotFoundError: a memory does not exist or is not this storyteller's.
            ValidationError: no memory to merge, or they are about different characters.
        """
        merged = [m for m in dict.fromkeys(merged_ids) if m != keep_id]
        if not merged:
            raise ValidationError("Name at least one memory to merge into the kept one.")
        async with self._db.session() as session:
            keep = await self._row(session, storyteller_id, keep_id)
            rows = [await self._row(session, storyteller_id, m) for m in merged]
            if any(r.character_id != keep.character_id for r in rows):
                raise ValidationError("Only memories about the same character can be merged.")
            provenance = provenance_of(keep)
            for row in rows:
                provenance = provenance.joined(provenance_of(row))
                note = f"{actor}: merged into memory #{keep.id}"
                before = (row.title, row.text)
                session.add(self._edit(row, MemoryAction.CONSOLIDATED, note, before, None))
            before = (keep.title, keep.text)
            keep.title, keep.text = require_title(title), text
            keep.importance = max([keep.importance, *(r.importance for r in rows)])
            store_provenance(
                keep, Provenance(keep.source_run, provenance.events, provenance.from_player)
            )
            keep.updated_on = self._clock.now()
            note = f"{actor}: absorbed " + ", ".join(f"#{r.id}" for r in rows)
            session.add(
                self._edit(keep, MemoryAction.ABSORBED, note, before, (keep.title, keep.text))
            )
            await session.execute(delete(MemoryRow).where(MemoryRow.id.in_(merged)))
            await session.flush()
            return memory_to_domain(keep)

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

    async def candidates(
        self,
        storyteller_id: int,
        *,
        character_ids: Collection[int],
        words: Sequence[str],
        limit: int,
    ) -> builtins.list[MemoryCandidate]:
        """Memories worth ranking for a turn, each once, with its word-index score.

        At most `limit` from each of: the best matches of any of `words`, the newest changed
        about `character_ids`, the newest written, the newest changed and the most important
        (`storage.memory_search`); every list is read from an index.
        """
        if limit <= 0:
            return []
        found: dict[int, MemoryCandidate] = {}

        def add(rows: Sequence[Row[Any]], scored: bool = False) -> None:
            for row in rows:
                score = float(row.words) if scored else 0.0
                known = found.get(row.id)
                if known is None or known.words < score:
                    # A row of the memory table's columns reads like the ORM row.
                    memory = memory_to_domain(cast(MemoryRow, row))
                    found[row.id] = MemoryCandidate(memory, score)

        async with self._db.reading() as conn:
            if words:
                dialect = conn.dialect.name
                statement, params = memory_search.word_matches(
                    dialect, storyteller_id, words, limit
                )
                add((await conn.execute(statement, params)).all(), scored=True)
            if character_ids:
                statement = memory_search.about_characters(storyteller_id, character_ids, limit)
                add((await conn.execute(statement)).all())
            for listing in (
                memory_search.newest_written,
                memory_search.newest_changed,
                memory_search.most_important,
            ):
                add((await conn.execute(listing(storyteller_id, limit))).all())
        return sorted(found.values(), key=lambda c: c.memory.id)

    async def history(
        self, storyteller_id: int, *, memory_id: int | None = None, character_id: int | None = None
    ) -> builtins.list[MemoryEdit]:
        """Edit history of one memory, or of every memory about one character, oldest first.

        Raises:
            ValidationError: neither or both of `memory_id` and `character_id` given.
        """
        if (memory_id is None) == (character_id is None):
            raise ValidationError("Give either a memory id or a character id.")
        query = select(MemoryEditRow).where(MemoryEditRow.storyteller_id == storyteller_id)
        if memory_id is not None:
            query = query.where(MemoryEditRow.memory_id == memory_id)
        else:
            query = query.where(MemoryEditRow.character_id == character_id)
        query = query.order_by(MemoryEditRow.at, MemoryEditRow.id)
        async with self._db.session() as session:
            return [edit_to_domain(r) for r in (await session.execute(query)).scalars()]

    async def edits_since(
        self,
        storyteller_id: int,
        since: datetime | None,
        *,
        limit: int,
        actions: Collection[MemoryAction] | None = None,
    ) -> builtins.list[MemoryEdit]:
        """The newest `limit` edits of this storyteller's memories at or after `since` (None:
        any time), of the given `actions` (None: all), oldest first."""
        query = select(MemoryEditRow).where(MemoryEditRow.storyteller_id == storyteller_id)
        if actions is not None:
            query = query.where(MemoryEditRow.action.in_([a.value for a in actions]))
        if since is not None:
            query = query.where(MemoryEditRow.at >= since)
        query = query.order_by(MemoryEditRow.at.desc(), MemoryEditRow.id.desc()).limit(limit)
        async with self._db.session() as session:
            rows = [edit_to_domain(r) for r in (await session.execute(query)).scalars()]
        return list(reversed(rows))

    async def counts_by_character(self, storyteller_id: int) -> dict[int, int]:
        """Character id → number of memories, for player summaries."""
        query = (
            select(MemoryRow.character_id, func.count(MemoryRow.id))
            .where(MemoryRow.storyteller_id == storyteller_id)
            .group_by(MemoryRow.character_id)
        )
        async with self._db.session() as session:
            return dict((await session.execute(query)).all())
