"""The event inbox: world events stored before they are dispatched, and the stream cursor.

`store_events` writes a batch of events and advances the world's cursor in the same
transaction, so the cursor never runs ahead of what is stored. An event already stored — by
its ``(epoch, seq)``, or because it is at or before the stored cursor of its epoch — is
skipped, which makes a replayed stream harmless (at-least-once delivery, effectively-once
intake). Stored events are dispatched afterwards and marked; on a restart, `pending` returns
the ones stored but never dispatched. `prune` keeps the table small.

The daemons of a cluster all follow the world and store its events under the one world name,
each with a cursor of its own: an event is stored once, by whichever daemon has it first, and
that daemon routes it (another routes it only when it was left undispatched for a lease span:
its daemon died).

Payloads are the events' JSON form from the bridge protocol (`world_adapter.codec`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import delete, func, or_, select, update

from storyteller_daemon.clock import Clock
from storyteller_daemon.errors import StorageError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.world import InboxRow, StreamStateRow
from world_adapter.codec import CodecError, decode_event, encode_event
from world_adapter.events import Cursor, WorldEvent

_CHUNK = 500  # rows per IN (...) list: well under every backend's bound-parameter limit


class StoredEvent(NamedTuple):
    """An event and its inbox row id (for `mark_dispatched`)."""

    id: int
    event: WorldEvent


class InboxRepository:
    """Stores, lists and marks world events of any number of worlds, keyed by a world name."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def store_events(
        self, world: str, events: Sequence[WorldEvent], *, cursor_key: str | None = None
    ) -> list[StoredEvent]:
        """Store the events not stored yet and advance the cursor; return the newly stored.

        `events` must be in stream order. The cursor (kept under `cursor_key`, default
        `world`: each daemon of a cluster has its own) becomes the last event's cursor, unless
        it is already at or past it in the same epoch. An event another daemon following the
        world stored first, even a moment ago, is not stored again nor returned: the daemon
        that stored it routes it.
        """
        if not events:
            return []
        key = cursor_key or world
        async with self._db.session() as session:
            state = await session.get(StreamStateRow, key)
            fresh = _after_cursor(events, state)
            now = self._clock.now()
            stored: dict[Cursor, int] = {}
            for start in range(0, len(fresh), _CHUNK):
                rows = [
                    {
                        "world": world,
                        "epoch": e.cursor.epoch,
                        "seq": e.cursor.seq,
                        "kind": e.kind.value,
                        "payload": json.dumps(encode_event(e), ensure_ascii=False),
                        "received_on": now,
                        "dispatched": False,
                    }
                    for e in fresh[start : start + _CHUNK]
                ]
                inserted = await session.execute(  # many rows, one statement made once
                    self._db.insert_new(InboxRow).returning(
                        InboxRow.id, InboxRow.epoch, InboxRow.seq
                    ),
                    rows,
                )
                stored.update((Cursor(epoch, seq), row_id) for row_id, epoch, seq in inserted)
            last = events[-1].cursor
            if state is None:
                session.add(
                    StreamStateRow(world=key, epoch=last.epoch, seq=last.seq, updated_on=now)
                )
            elif state.epoch != last.epoch or state.seq < last.seq:
                state.epoch, state.seq, state.updated_on = last.epoch, last.seq, now
            await session.flush()
            return [StoredEvent(stored[e.cursor], e) for e in fresh if e.cursor in stored]

    async def cursor(self, world: str) -> Cursor | None:
        """The cursor of the newest stored event of `world` (or of the cursor key), or None
        before the first."""
        async with self._db.session() as session:
            state = await session.get(StreamStateRow, world)
            return None if state is None else Cursor(state.epoch, state.seq)

    async def latest_cursor(self, world: str) -> Cursor | None:
        """The cursor any daemon following `world` (under ``WORLD@INSTANCE``) moved last, or
        None: where a daemon new to a cluster starts following the world."""
        query = (
            select(StreamStateRow)
            .where(
                or_(
                    StreamStateRow.world == world,
                    StreamStateRow.world.startswith(f"{world}@", autoescape=True),
                )
            )
            .order_by(StreamStateRow.updated_on.desc())
            .limit(1)
        )
        async with self._db.session() as session:
            state = await session.scalar(query)
        return None if state is None else Cursor(state.epoch, state.seq)

    async def pending(
        self, world: str, limit: int | None = None, *, received_before: datetime | None = None
    ) -> list[StoredEvent]:
        """Stored events of `world` not yet dispatched, oldest first (of those received before
        `received_before`, when given: in a cluster, those the daemon that stored them did not
        route in time, having died).

        Raises:
            StorageError: If a stored payload cannot be read back.
        """
        query = select(InboxRow).where(InboxRow.world == world, InboxRow.dispatched.is_(False))
        if received_before is not None:
            query = query.where(InboxRow.received_on < received_before)
        query = query.order_by(InboxRow.id).limit(limit)
        async with self._db.session() as session:
            rows = list(await session.scalars(query))
        return [StoredEvent(row.id, _event(row)) for row in rows]

    async def mark_dispatched(self, ids: Sequence[int]) -> None:
        """Mark stored events as handed to the pipeline."""
        async with self._db.session() as session:
            for start in range(0, len(ids), _CHUNK):
                chunk = list(ids[start : start + _CHUNK])
                await session.execute(
                    update(InboxRow).where(InboxRow.id.in_(chunk)).values(dispatched=True)
                )

    async def prune(self, world: str, *, keep: int) -> int:
        """Delete dispatched events of `world` except the newest `keep` rows; return how many.

        Raises:
            ValueError: If `keep` is negative.
        """
        if keep < 0:
            raise ValueError(f"keep must not be negative, not {keep}")
        async with self._db.session() as session:
            threshold = await session.scalar(
                select(InboxRow.id)
                .where(InboxRow.world == world)
                .order_by(InboxRow.id.desc())
                .offset(keep)
                .limit(1)
            )
            if threshold is None:
                return 0
            result = await session.execute(
                delete(InboxRow).where(
                    InboxRow.world == world,
                    InboxRow.dispatched.is_(True),
                    InboxRow.id <= threshold,
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)

    async def count(self, world: str, *, pending_only: bool = False) -> int:
        """How many events of `world` are stored (only undispatched ones with `pending_only`)."""
        query = select(func.count()).select_from(InboxRow).where(InboxRow.world == world)
        if pending_only:
            query = query.where(InboxRow.dispatched.is_(False))
        async with self._db.session() as session:
            return int(await session.scalar(query) or 0)


def _after_cursor(events: Sequence[WorldEvent], state: StreamStateRow | None) -> list[WorldEvent]:
    """The events after the stored cursor, each (epoch, seq) once."""
    seen: set[Cursor] = set()
    fresh = []
    for event in events:
        cursor = event.cursor
        if state is not None and cursor.epoch == state.epoch and cursor.seq <= state.seq:
            continue
        if cursor not in seen:
            seen.add(cursor)
            fresh.append(event)
    return fresh


def _event(row: InboxRow) -> WorldEvent:
    try:
        return decode_event(json.loads(row.payload))
    except (ValueError, CodecError) as exc:
        raise StorageError(f"inbox event {row.id} cannot be read back: {exc}") from exc
