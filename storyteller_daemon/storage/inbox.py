"""The event inbox: world events stored before they are dispatched, and the stream cursor.

`store_events` writes a batch of events and advances the world's cursor in the same
transaction, so the cursor never runs ahead of what is stored. An event already stored — by
its ``(epoch, seq)``, or because it is at or before the stored cursor of its epoch — is
skipped, which makes a replayed stream harmless (at-least-once delivery, effectively-once
intake). Stored events are dispatched afterwards and marked; on a restart, `pending` returns
the ones stored but never dispatched. `prune` keeps the table small.

Payloads are the events' JSON form from the bridge protocol (`world_adapter.codec`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
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

    async def store_events(self, world: str, events: Sequence[WorldEvent]) -> list[StoredEvent]:
        """Store the events not stored yet and advance the cursor; return the newly stored.

        `events` must be in stream order. The cursor becomes the last event's cursor, unless
        the stored cursor is already at or past it in the same epoch.
        """
        if not events:
            return []
        async with self._db.session() as session:
            state = await session.get(StreamStateRow, world)
            fresh = _after_cursor(events, state)
            known: set[Cursor] = set()
            for epoch, chunk in _by_epoch(fresh):
                seqs = [e.cursor.seq for e in chunk]
                stored = await session.scalars(
                    select(InboxRow.seq).where(
                        InboxRow.world == world, InboxRow.epoch == epoch, InboxRow.seq.in_(seqs)
                    )
                )
                known.update(Cursor(epoch, seq) for seq in stored)
            fresh = [e for e in fresh if e.cursor not in known]
            now = self._clock.now()
            rows = [
                InboxRow(
                    world=world,
                    epoch=e.cursor.epoch,
                    seq=e.cursor.seq,
                    kind=e.kind.value,
                    payload=json.dumps(encode_event(e), ensure_ascii=False),
                    received_on=now,
                    dispatched=False,
                )
                for e in fresh
            ]
            session.add_all(rows)
            last = events[-1].cursor
            if state is None:
                session.add(
                    StreamStateRow(world=world, epoch=last.epoch, seq=last.seq, updated_on=now)
                )
            elif state.epoch != last.epoch or state.seq < last.seq:
                state.epoch, state.seq, state.updated_on = last.epoch, last.seq, now
            await session.flush()
            return [StoredEvent(row.id, event) for row, event in zip(rows, fresh, strict=True)]

    async def cursor(self, world: str) -> Cursor | None:
        """The cursor of the newest stored event of `world`, or None before the first."""
        async with self._db.session() as session:
            state = await session.get(StreamStateRow, world)
            return None if state is None else Cursor(state.epoch, state.seq)

    async def pending(self, world: str, limit: int | None = None) -> list[StoredEvent]:
        """Stored events of `world` not yet dispatched, oldest first.

        Raises:
            StorageError: If a stored payload cannot be read back.
        """
        query = (
            select(InboxRow)
            .where(InboxRow.world == world, InboxRow.dispatched.is_(False))
            .order_by(InboxRow.id)
            .limit(limit)
        )
        async with self._db.session() as session:
            rows = list(await session.scalars(query))
        return [StoredEvent(row.id, _event(row)) for row in rows]

    async def received_since(self, world: str, since: datetime) -> list[StoredEvent]:
        """Stored events of `world` received at or after `since`, dispatched or not, oldest
        first, as every daemon of a cluster following that world stored them (under
        ``WORLD@INSTANCE``): a daemon routes them again to storytellers it has just taken
        over, which the daemon that stored them may not have held when it routed them.
        """
        base = world.split("@", 1)[0]
        query = (
            select(InboxRow)
            .where(
                or_(InboxRow.world == base, InboxRow.world.startswith(f"{base}@")),
                InboxRow.received_on >= since,
            )
            .order_by(InboxRow.id)
        )
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


def _by_epoch(events: Sequence[WorldEvent]) -> Iterator[tuple[str, list[WorldEvent]]]:
    """The events grouped by epoch, in chunks of at most `_CHUNK`."""
    epochs: dict[str, list[WorldEvent]] = {}
    for event in events:
        epochs.setdefault(event.cursor.epoch, []).append(event)
    for epoch, group in epochs.items():
        for start in range(0, len(group), _CHUNK):
            yield epoch, group[start : start + _CHUNK]


def _event(row: InboxRow) -> WorldEvent:
    try:
        return decode_event(json.loads(row.payload))
    except (ValueError, CodecError) as exc:
        raise StorageError(f"inbox event {row.id} cannot be read back: {exc}") from exc
