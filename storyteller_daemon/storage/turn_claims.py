"""Choosing a storyteller's next turn from its backlog, and counting how often it was tried.

Work a stop or crash interrupted (items left ``running``) comes first, under its own turn key:
a clean stop's cut does not count as an attempt, a crash does, and work a crash interrupted
more than ``retries`` times is marked failed and handed back ``given_up``. Otherwise the oldest
interested item (of an urgent kind, when there is one) and the next interested items of its
turn class become one turn. Runs inside
the caller's transaction (`BacklogRepository.claim_turn`). `work_item` reads a backlog row into
its `WorkItem`, here and for the backlog.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.work import TurnClaim, WorkItem, WorkState
from storyteller_daemon.storage.models.work import WorkRow
from storyteller_daemon.storage.storytellers import as_utc


def first_kinds(kinds: Collection[str]) -> tuple[Any, ...]:
    """The order of a storyteller's open work: items of `kinds` (the urgent ones) first, each
    part oldest first."""
    if not kinds:
        return (WorkRow.id,)
    return (case((WorkRow.kind.in_(sorted(kinds)), 0), else_=1), WorkRow.id)


def work_item(row: WorkRow) -> WorkItem:
    """Row → `WorkItem`."""
    return WorkItem(
        id=row.id,
        storyteller_id=row.storyteller_id,
        source=row.source,
        kind=row.kind,
        turn_class=row.turn_class,
        room_id=row.room_id,
        payload=row.payload,
        state=WorkState(row.state),
        received_at=as_utc(row.received_on),
        reason=row.reason,
        rule=row.rule,
        turn_key=row.turn_key,
        attempts=row.attempts,
        cut_by_stop=row.cut_by_stop,
    )


async def claim_next_turn(
    session: AsyncSession,
    storyteller_id: int,
    make_key: Callable[[Sequence[WorkItem]], str],
    limit: int,
    *,
    retries: int,
    clock: Clock,
    first: Collection[str] = (),
) -> TurnClaim | None:
    """The next turn of a storyteller, its items moved (see the module's description)."""
    running = list(
        await session.scalars(
            select(WorkRow)
            .where(
                WorkRow.storyteller_id == storyteller_id,
                WorkRow.state == WorkState.RUNNING.value,
            )
            .order_by(WorkRow.id)
        )
    )
    if running:
        key = running[0].turn_key
        rows = [r for r in running if r.turn_key == key]
        stopped = all(r.cut_by_stop for r in rows)
        attempt = max(r.attempts for r in rows) + (0 if stopped else 1)
        attempt = max(attempt, 1)
        given_up = attempt > 1 + retries
        now = clock.now()
        for row in rows:
            row.updated_on = now
            if given_up:
                row.state = WorkState.FAILED.value
                row.reason = f"interrupted {attempt - 1} times; given up"
            else:
                row.attempts, row.cut_by_stop = attempt, False
        await session.flush()
        items = tuple(work_item(r) for r in rows)
        return TurnClaim(storyteller_id, key or "", items, attempt, resumed=True, given_up=given_up)
    head = await session.scalar(
        select(WorkRow)
        .where(
            WorkRow.storyteller_id == storyteller_id,
            WorkRow.state == WorkState.INTERESTED.value,
        )
        .order_by(*first_kinds(first))
        .limit(1)
    )
    if head is None:
        return None
    rows = list(
        await session.scalars(
            select(WorkRow)
            .where(
                WorkRow.storyteller_id == storyteller_id,
                WorkRow.state == WorkState.INTERESTED.value,
                WorkRow.turn_class == head.turn_class,
            )
            .order_by(*first_kinds(first))
            .limit(limit)
        )
    )
    key = make_key([work_item(r) for r in rows])
    now = clock.now()
    for row in rows:
        row.state, row.turn_key, row.attempts, row.updated_on = (
            WorkState.RUNNING.value,
            key,
            1,
            now,
        )
    await session.flush()
    claimed = tuple(work_item(r) for r in rows)
    return TurnClaim(storyteller_id, key, claimed, 1)
