"""The durable backlog: every storyteller's work items and their states (see `domain.work`).

The attention stage reads `pending` items a batch at a time and records a `Decision` for each;
the turn stage `claim_turn`s interested items and `finish_turn`s them. Every move is one short
transaction, guarded by the state the item must be in, so a crash between any two moves leaves
each item in exactly one recorded state, and a restart picks up from there. Given a `Fence` (a
daemon of a cluster), every move is also guarded by the storytellers' leases: a daemon that
lost one cannot move its work (`LeaseLost`, nothing written).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import TypeVar

from sqlalchemy import bindparam, case, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.work import (
    OPEN_STATES,
    TURN_RETRIES,
    Decision,
    NewWork,
    TurnClaim,
    WorkItem,
    WorkState,
)
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.models.work import TurnJournalRow, WorkRow
from storyteller_daemon.storage.storytellers import as_utc
from storyteller_daemon.storage.turn_claims import claim_next_turn, first_kinds, work_item

_T = TypeVar("_T")
_CHUNK = 500  # rows per IN (...) list: well under every backend's bound-parameter limit


def _chunks(values: Sequence[_T]) -> list[list[_T]]:
    return [list(values[i : i + _CHUNK]) for i in range(0, len(values), _CHUNK)]


class BacklogRepository:
    """Adds, lists and moves work items of every storyteller (of those whose leases `fence`
    holds, when given one)."""

    def __init__(self, db: Database, clock: Clock, fence: Fence | None = None) -> None:
        self._db = db
        self._clock = clock
        self._fence = fence

    async def _guard(self, session: AsyncSession, storyteller_ids: Collection[int]) -> None:
        """Refuse the write unless the fence holds every storyteller (no fence: no check)."""
        if self._fence is not None:
            await self._fence.check(session, storyteller_ids)

    async def _guard_items(self, session: AsyncSession, ids: Sequence[int]) -> None:
        if self._fence is not None:
            owners: set[int] = set()
            for chunk in _chunks(ids):
                found = await session.scalars(
                    select(WorkRow.storyteller_id).where(WorkRow.id.in_(chunk)).distinct()
                )
                owners.update(found)
            await self._fence.check(session, owners)

    async def _guard_turn(self, session: AsyncSession, turn_key: str) -> None:
        if self._fence is not None:
            owners = await session.scalars(
                select(WorkRow.storyteller_id).where(WorkRow.turn_key == turn_key).distinct()
            )
            await self._fence.check(session, set(owners))

    async def add(self, items: Sequence[NewWork], *, routed: bool = False) -> list[WorkItem]:
        """Store the items whose (storyteller, source) is new; return those, in order.

        One multi-row insert stores them, however many storytellers an event reaches,
        skipping what is held already (a replayed stream offers it again, or another daemon
        stored it). `routed`: a world event's work, which the daemon that stored the event adds
        for every storyteller that hears it, wherever that storyteller runs (not fenced: it
        moves nothing, and the storyteller's holder judges it).
        """
        if not items:
            return []
        async with self._db.session() as session:
            if not routed:
                await self._guard(session, sorted({item.storyteller_id for item in items}))
            now = self._clock.now()
            once: dict[tuple[int, str], NewWork] = {}
            for item in items:  # each (storyteller, source) once, the first offered, in order
                once.setdefault((item.storyteller_id, item.source), item)
            fresh = list(once.values())
            values = [
                {
                    **asdict(item),
                    "state": item.state.value,
                    "received_on": now,
                    "updated_on": now,
                    "attempts": 0,
                }
                for item in fresh
            ]
            ids: dict[tuple[int, str], int] = {}
            for rows in _chunks(values):
                inserted = await session.execute(  # many rows, one statement made once
                    self._db.insert_new(WorkRow).returning(
                        WorkRow.id, WorkRow.storyteller_id, WorkRow.source
                    ),
                    rows,
                )
                ids.update(((sid, source), row_id) for row_id, sid, source in inserted)
            received = as_utc(now)
            return [
                item.stored(ids[key], received)
                for item in fresh
                if (key := (item.storyteller_id, item.source)) in ids
            ]

    async def pending(
        self,
        storyteller_id: int,
        limit: int,
        exclude: Collection[int] = (),
        *,
        first: Collection[str] = (),
    ) -> list[WorkItem]:
        """The oldest `limit` items waiting for the attention stage, except the `exclude` ids
        (those already being judged), in the order they came; items of the `first` kinds
        (the urgent ones) are chosen before the rest, however much older work waits."""
        return await self._list(storyteller_id, WorkState.PENDING, limit, exclude, first)

    async def interested(self, storyteller_id: int, limit: int) -> list[WorkItem]:
        """The oldest `limit` items waiting for a turn."""
        return await self._list(storyteller_id, WorkState.INTERESTED, limit)

    async def _list(
        self,
        storyteller_id: int,
        state: WorkState,
        limit: int,
        exclude: Collection[int] = (),
        first: Collection[str] = (),
    ) -> list[WorkItem]:
        query = select(WorkRow).where(
            WorkRow.storyteller_id == storyteller_id, WorkRow.state == state.value
        )
        if exclude:
            query = query.where(WorkRow.id.not_in(sorted(exclude)))
        async with self._db.reading() as connection, AsyncSession(bind=connection) as session:
            rows = await session.scalars(query.order_by(*first_kinds(first)).limit(limit))
            return sorted((work_item(row) for row in rows), key=lambda item: item.id)

    async def decide(self, decisions: Sequence[Decision]) -> int:
        """Move pending items to their decided states; return how many moved.

        An item no longer pending (decided meanwhile, or gone) is left as it is.
        """
        if not decisions:
            return 0
        now = self._clock.now()
        ids = [d.item_id for d in decisions]
        statement = (
            update(WorkRow)
            .where(WorkRow.id == bindparam("item"), WorkRow.state == WorkState.PENDING.value)
            .values(
                state=bindparam("new_state"),
                reason=bindparam("new_reason"),
                rule=bindparam("new_rule"),
                updated_on=now,
            )
            .execution_options(synchronize_session=False)
        )
        rows = [
            {
                "item": d.item_id,
                "new_state": d.state.value,
                "new_reason": d.reason,
                "new_rule": d.rule,
            }
            for d in decisions
        ]
        pending = func.sum(case((WorkRow.state == WorkState.PENDING.value, 1), else_=0))
        async with self._db.session() as session:
            owners: dict[int, int] = {}  # the items' storytellers (fenced), and their pending
            for chunk in _chunks(ids):
                query = select(WorkRow.storyteller_id, pending).where(WorkRow.id.in_(chunk))
                for owner, waiting in await session.execute(query.group_by(WorkRow.storyteller_id)):
                    owners[owner] = owners.get(owner, 0) + int(waiting or 0)
            await self._guard(session, owners)
            conn = await session.connection()
            await conn.execute(statement, rows)  # one statement, many rows
        return sum(owners.values())

    async def count_attempt(self, ids: Sequence[int]) -> None:
        """Count a failed attention request against pending items (they stay pending)."""
        async with self._db.session() as session:
            await self._guard_items(session, ids)
            for chunk in _chunks(ids):
                await session.execute(
                    update(WorkRow)
                    .where(WorkRow.id.in_(chunk), WorkRow.state == WorkState.PENDING.value)
                    .values(attempts=WorkRow.attempts + 1)
                )

    async def claim_turn(
        self,
        storyteller_id: int,
        make_key: Callable[[Sequence[WorkItem]], str],
        limit: int,
        *,
        retries: int = TURN_RETRIES,
        first: Collection[str] = (),
    ) -> TurnClaim | None:
        """The next turn of a storyteller: work a stop or crash interrupted first, else fresh.

        Interrupted work (items left ``running``) is claimed again under its own turn key. A
        clean stop's cut (`stopped`) does not count; a crash does, and a turn a crash
        interrupted more than `retries` times is marked failed and returned with ``given_up``
        (the caller alerts and does not run it). Fresh work is the oldest interested item and
        the next interested items of its turn class, up to `limit`, moved to ``running`` under
        ``make_key(items)``; an interested item of the `first` kinds (the urgent ones) goes
        before older ones of other kinds.
        """
        async with self._db.session() as session:
            await self._guard(session, (storyteller_id,))
            return await claim_next_turn(
                session,
                storyteller_id,
                make_key,
                limit,
                retries=retries,
                clock=self._clock,
                first=first,
            )

    async def finish_turn(
        self, turn_key: str, state: WorkState, reason: str | None, rule: str | None = None
    ) -> int:
        """Record how a claimed turn ended (``done``, ``failed``, or ``filtered`` by the named
        `rule` when a last check refused it before any model call); return items moved."""
        if state not in (WorkState.DONE, WorkState.FAILED, WorkState.FILTERED):
            raise ValueError(f"a turn ends done, failed or filtered, not {state.value}")
        values: dict[str, object] = {"state": state.value, "reason": reason}
        if rule is not None:
            values["rule"] = rule
        async with self._db.session() as session:
            await self._guard_turn(session, turn_key)
            result = await session.execute(
                update(WorkRow)
                .where(WorkRow.turn_key == turn_key, WorkRow.state == WorkState.RUNNING.value)
                .values(**values, updated_on=self._clock.now())
            )
            return int(getattr(result, "rowcount", 0) or 0)

    async def stopped(self, turn_key: str) -> int:
        """Mark a running turn as cut off by a clean stop (its next run is not counted as a
        retry); return items marked."""
        async with self._db.session() as session:
            await self._guard_turn(session, turn_key)
            result = await session.execute(
                update(WorkRow)
                .where(WorkRow.turn_key == turn_key, WorkRow.state == WorkState.RUNNING.value)
                .values(cut_by_stop=True, updated_on=self._clock.now())
            )
            return int(getattr(result, "rowcount", 0) or 0)

    async def retry(self, turn_key: str) -> list[WorkItem]:
        """Queue a failed turn again under its key (it resumes from its journal); the items
        moved, none when the turn has no failed items."""
        async with self._db.session() as session:
            rows = list(
                await session.scalars(
                    select(WorkRow).where(
                        WorkRow.turn_key == turn_key, WorkRow.state == WorkState.FAILED.value
                    )
                )
            )
            now = self._clock.now()
            for row in rows:
                row.state, row.reason, row.rule, row.attempts, row.updated_on = (
                    WorkState.RUNNING.value,
                    None,
                    None,
                    0,
                    now,
                )
            await session.flush()
            return [work_item(r) for r in rows]

    async def expire(
        self, storyteller_id: int, *, received_before: datetime, reason: str
    ) -> list[WorkItem]:
        """Expire pending items received before a time (the maximum-age policy)."""
        async with self._db.session() as session:
            await self._guard(session, (storyteller_id,))
            rows = list(
                await session.scalars(
                    select(WorkRow).where(
                        WorkRow.storyteller_id == storyteller_id,
                        WorkRow.state == WorkState.PENDING.value,
                        WorkRow.received_on < received_before,
                    )
                )
            )
            now = self._clock.now()
            for row in rows:
                row.state, row.rule, row.reason, row.updated_on = (
                    WorkState.EXPIRED.value,
                    "max_age",
                    reason,
                    now,
                )
            await session.flush()
            return [work_item(r) for r in rows]

    async def close_source(self, prefix: str, *, reason: str) -> int:
        """Expire every open item whose source starts with `prefix` (a world that restarted)."""
        async with self._db.session() as session:
            result = await session.execute(
                update(WorkRow)
                .where(
                    WorkRow.source.startswith(prefix, autoescape=True),
                    WorkRow.state.in_([s.value for s in OPEN_STATES]),
                )
                .values(
                    state=WorkState.EXPIRED.value,
                    rule="world_restarted",
                    reason=reason,
                    updated_on=self._clock.now(),
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)

    async def depth(self) -> Counter[tuple[int, str]]:
        """(storyteller id, state) → open items, for every storyteller with open work."""
        async with self._db.session() as session:
            rows = await session.execute(
                select(WorkRow.storyteller_id, WorkRow.state, func.count())
                .where(WorkRow.state.in_([s.value for s in OPEN_STATES]))
                .group_by(WorkRow.storyteller_id, WorkRow.state)
            )
            return Counter({(int(sid), str(state)): int(n) for sid, state, n in rows})

    async def storytellers_with_open_work(self) -> set[int]:
        """Storytellers that have pending, interested or running items."""
        return {sid for sid, _ in await self.depth()}

    async def by_source(self, storyteller_id: int, source: str) -> WorkItem | None:
        """The storyteller's item stored from `source` (a game's invocation id), if any."""
        async with self._db.session() as session:
            row = await session.scalar(
                select(WorkRow).where(
                    WorkRow.storyteller_id == storyteller_id, WorkRow.source == source
                )
            )
            return None if row is None else work_item(row)

    async def items(self, storyteller_id: int, *, limit: int = 100) -> list[WorkItem]:
        """The newest `limit` items of a storyteller, newest first (for admins and tests)."""
        async with self._db.session() as session:
            rows = await session.scalars(
                select(WorkRow)
                .where(WorkRow.storyteller_id == storyteller_id)
                .order_by(WorkRow.id.desc())
                .limit(limit)
            )
            return [work_item(row) for row in rows]

    async def forget(self, storyteller_id: int) -> int:
        """Delete every item of a storyteller that no longer exists."""
        async with self._db.session() as session:
            result = await session.execute(
                delete(WorkRow).where(WorkRow.storyteller_id == storyteller_id)
            )
            return int(getattr(result, "rowcount", 0) or 0)

    async def prune(self, *, updated_before: datetime) -> int:
        """Delete final items last moved before a time, and the journals of turns that have no
        open items and were kept before it; return how many items."""
        async with self._db.session() as session:
            open_turns = select(WorkRow.turn_key).where(
                WorkRow.state.in_([s.value for s in OPEN_STATES]), WorkRow.turn_key.is_not(None)
            )
            await session.execute(
                delete(TurnJournalRow).where(
                    TurnJournalRow.created_at < updated_before,
                    TurnJournalRow.turn_key.not_in(open_turns),
                )
            )
            result = await session.execute(
                delete(WorkRow).where(
                    WorkRow.state.not_in([s.value for s in OPEN_STATES]),
                    WorkRow.updated_on < updated_before,
                )
            )
            return int(getattr(result, "rowcount", 0) or 0)
