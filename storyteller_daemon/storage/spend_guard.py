"""Daily caps checked against the shared cost ledger as a request's row is written.

Several daemons of a cluster spend from the same daily caps. Each request's worst case is a
ledger row (status ``sent``) written before it goes; `add_within` writes it only if today's
ledger still has room for it, in one transaction: on PostgreSQL it first takes a transaction
advisory lock per cap (the global cap's, then the storyteller's, always in that order), so the
checks of every daemon against one cap run one after another and each sees the rows of the
checks before it. However many daemons send at once, the rows of one day, worst cases of the
requests in flight included, stay under each cap.

What a check counts: every row of the day but replays (an admin's deliberate spend). A ``sent``
row is a request in flight, unless it is older than `SpendCaps.settled_before`: its daemon
died before the answer, and its worst case is what it may have cost. `OverCap` says which of
the two left no room: a cap whose settled spend leaves none is reached for the day, one held
by requests in flight may have room once they are answered.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.storage.models.records import LedgerRow

BUDGET_LOCKS = 0x53_54_42_55
"""The first key of the budget checks' advisory locks; the second is the storyteller's id (0:
the global cap)."""
IN_FLIGHT = "sent"
"""The status of a row written before its request went out."""


@dataclass(frozen=True)
class SpendCaps:
    """The daily caps a request's row must fit under (0: none).

    Attributes:
        daily_usd: all storytellers together.
        storyteller_usd: the storyteller the request is for.
        settled_before: a ``sent`` row older than this counts as spent, not in flight (None:
            every ``sent`` row is in flight).
    """

    daily_usd: float = 0.0
    storyteller_usd: float = 0.0
    settled_before: datetime | None = None


class OverCap(BudgetExceeded):
    """Today's ledger has no room for the request under one cap.

    Attributes:
        storyteller_id: whose cap (None: the global cap).
        cap: the cap in USD.
        settled: USD spent today under it.
        in_flight: USD held by requests in flight (their worst case).
        usd: the request's worst case.
    """

    def __init__(
        self, storyteller_id: int | None, cap: float, settled: float, in_flight: float, usd: float
    ) -> None:
        self.storyteller_id = storyteller_id
        self.cap = cap
        self.settled = settled
        self.in_flight = in_flight
        self.usd = usd
        label = "the global daily budget" if storyteller_id is None else "its daily budget"
        super().__init__(
            f"{label} of ${cap:.2f} has no room for this request (${settled:.4f} spent, "
            f"${in_flight:.4f} in flight, up to ${usd:.4f} more)"
        )

    @property
    def reached(self) -> bool:
        """Whether the request could not fit even once the requests in flight are answered."""
        return self.settled + self.usd > self.cap


async def add_within(session: AsyncSession, dialect: str, row: LedgerRow, caps: SpendCaps) -> None:
    """Add `row` (a request's worst case) if today's ledger has room for it under `caps`.

    Raises:
        OverCap: a cap has no room; nothing was added.
    """
    scopes: list[tuple[int | None, float]] = []
    if caps.daily_usd > 0:
        scopes.append((None, caps.daily_usd))
    if caps.storyteller_usd > 0 and row.storyteller_id is not None:
        scopes.append((row.storyteller_id, caps.storyteller_usd))
    for storyteller_id, cap in scopes:
        if dialect == "postgresql":
            await session.execute(
                select(func.pg_advisory_xact_lock(BUDGET_LOCKS, storyteller_id or 0))
            )
        settled, in_flight = await _day_spend(session, row.day, storyteller_id, caps)
        if settled + in_flight + row.cost_usd > cap:
            raise OverCap(storyteller_id, cap, settled, in_flight, row.cost_usd)
    session.add(row)
    await session.flush()


async def _day_spend(
    session: AsyncSession, day: str, storyteller_id: int | None, caps: SpendCaps
) -> tuple[float, float]:
    """USD settled and USD in flight on `day`, for one storyteller or (None) for all."""
    flying = LedgerRow.status == IN_FLIGHT
    if caps.settled_before is not None:
        flying = and_(flying, LedgerRow.occurred_at >= caps.settled_before)
    query = select(
        func.sum(case((flying, 0.0), else_=LedgerRow.cost_usd)),
        func.sum(case((flying, LedgerRow.cost_usd), else_=0.0)),
    ).where(LedgerRow.day == day, LedgerRow.purpose != "replay")
    if storyteller_id is not None:
        query = query.where(LedgerRow.storyteller_id == storyteller_id)
    settled, in_flight = (await session.execute(query)).one()
    return float(settled or 0.0), float(in_flight or 0.0)
