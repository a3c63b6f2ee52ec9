"""The speech history of watched rooms, the source of a speech prompt's recent-speech context.

FutureMUD keeps it in a saving effect on the room (``RecentSpeechContextEffect``); here it is the
``speech_history`` table with the same bounds per room: the newest 200 lines, none older than
24 hours before the newest line recorded, 400 characters per text field.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.domain.text import SpeechLine, as_utc
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.world import SpeechRow
from world_adapter.events import Speech

MAX_LINES_PER_ROOM = 200
MAX_AGE = timedelta(hours=24)


def line_to_domain(row: SpeechRow) -> SpeechLine:
    """Row → `SpeechLine` (the row's text was cleaned when it was recorded)."""
    return SpeechLine(
        cell_id=row.cell_id,
        occurred_at=as_utc(row.occurred_at),
        speaker_id=row.speaker_id,
        speaker_name=row.speaker_name,
        message=row.message,
        volume=row.volume,
        language=row.language,
        accent=row.accent,
        target_id=row.target_id,
        target_kind=row.target_kind,
        target_description=row.target_description,
    )


def _values(line: SpeechLine, heard_as: str) -> dict[str, object]:
    return {
        "cell_id": line.cell_id,
        "occurred_at": line.occurred_at,
        "speaker_id": line.speaker_id,
        "speaker_name": line.speaker_name,
        "target_id": line.target_id,
        "target_kind": line.target_kind,
        "target_description": line.target_description,
        "message": line.message,
        "volume": line.volume,
        "language": line.language,
        "accent": line.accent,
        "heard_as": heard_as,
    }


class SpeechHistoryRepository:
    """Records what is said in watched rooms and reads back the recent lines of one room."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(self, event: Speech) -> SpeechLine:
        """Store one speech as a cleaned line and prune its room to the history bounds.

        Returns:
            The line as stored.
        """
        [line] = await self.record_many([event])
        return line

    async def record_many(self, events: Sequence[Speech]) -> list[SpeechLine]:
        """Store speeches in one transaction, pruning each room they were said in once. A
        speech event stored before (the same stream position and time: routed again) is not
        stored twice."""
        lines = [SpeechLine.from_event(event) for event in events]
        if not lines:
            return []
        rows = [
            _values(line, f"{event.cursor.epoch}:{event.cursor.seq}")
            for line, event in zip(lines, events, strict=True)
        ]
        async with self._db.session() as session:
            await session.execute(self._db.insert_new(SpeechRow), rows)
            newest: dict[int, datetime] = {}
            for line in lines:
                newest[line.cell_id] = max(
                    newest.get(line.cell_id, line.occurred_at), line.occurred_at
                )
            for cell_id, latest in newest.items():
                await self._prune(session, cell_id, latest - MAX_AGE)
        return lines

    @staticmethod
    async def _prune(session: AsyncSession, cell_id: int, oldest: datetime) -> None:
        """Drop the room's lines older than `oldest` and all but its newest 200."""
        in_room = SpeechRow.cell_id == cell_id
        await session.execute(delete(SpeechRow).where(in_room, SpeechRow.occurred_at < oldest))
        newest = (
            select(SpeechRow.id)
            .where(in_room)
            .order_by(SpeechRow.occurred_at.desc(), SpeechRow.id.desc())
            .limit(MAX_LINES_PER_ROOM)
        )
        await session.execute(delete(SpeechRow).where(in_room, SpeechRow.id.not_in(newest)))

    async def recent(
        self, cell_id: int, *, limit: int, since: datetime, until: datetime | None = None
    ) -> list[SpeechLine]:
        """The newest `limit` lines heard in a room from `since` up to `until`, oldest first.

        Args:
            cell_id: the room.
            limit: at most this many lines (none when zero or less).
            since: the oldest moment included.
            until: the newest moment included (None: no upper bound).
        """
        if limit <= 0:
            return []
        query = (
            select(SpeechRow)
            .where(SpeechRow.cell_id == cell_id, SpeechRow.occurred_at >= as_utc(since))
            .order_by(SpeechRow.occurred_at.desc(), SpeechRow.id.desc())
            .limit(limit)
        )
        if until is not None:
            query = query.where(SpeechRow.occurred_at <= as_utc(until))
        async with self._db.session() as session:
            rows = (await session.execute(query)).scalars().all()
        return [line_to_domain(row) for row in reversed(rows)]
