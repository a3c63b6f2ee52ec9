"""The cost ledger: one row per model request, with its tokens, its price and who caused it.

Every request sent is a row, answered or not: its ``status`` is ``ok`` for an answer, or how it
failed (``timeout``, ``connection_error``, ``http_503``...) with what the provider may bill for
it (a request whose body reached the provider keeps its input estimate and that input's price;
one refused with a status is 0 tokens and $0). A row written before its request went out and
never settled (the daemon stopped or crashed meanwhile) stays ``sent``, at its worst case.

A row is attributed to a storyteller, a trigger kind, a room and (when a tool of the turn
touched one) a situation, so staff can ask what an arc, a room or a storyteller cost. Rows hold
no player text, so they are kept longer than run records (``runs.ledger_retention_days``); a
pruned run leaves its ledger rows behind with ``run_id`` cleared.

The day of a row is its UTC calendar day as ``YYYY-MM-DD`` text, the same on every backend, so
daily totals group and index without dialect-specific date functions. The table itself
(`LedgerRow`) is declared beside the runs table in `storyteller_daemon.storage.runs`, which
writes a run and its ledger rows in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from sqlalchemy import case, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.records import LedgerRow
from storyteller_daemon.storage.models.story import SituationRow
from storyteller_daemon.storage.spend_guard import IN_FLIGHT, SpendCaps, add_within
from storyteller_daemon.storage.storytellers import as_utc

Grouping = Literal[
    "day", "storyteller", "trigger", "situation", "room", "model", "purpose", "status"
]
"""What a cost report sums over."""


@dataclass(frozen=True)
class LedgerEntry:
    """One request's bill, as the runtime hands it in."""

    occurred_at: datetime
    purpose: str
    model: str
    storyteller_id: int | None = None
    storyteller_name: str = ""
    trigger_kind: str | None = None
    room_id: int | None = None
    situation_id: int | None = None
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    status: str = "ok"


def day_of(moment: datetime) -> str:
    """The UTC calendar day of `moment` as ``YYYY-MM-DD``."""
    return as_utc(moment).date().isoformat()


_SETTLED = (
    "occurred_at",
    "day",
    "purpose",
    "model",
    "situation_id",
    "input_tokens",
    "cached_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
    "status",
)
"""The columns a provisional row takes from what its request cost (`LedgerRepository.settle`)."""


def ledger_row(entry: LedgerEntry, run_id: int | None = None) -> LedgerRow:
    """A row for `entry`, optionally linked to the run that made the request."""
    return LedgerRow(
        run_id=run_id,
        occurred_at=entry.occurred_at,
        day=day_of(entry.occurred_at),
        purpose=entry.purpose,
        storyteller_id=entry.storyteller_id,
        storyteller_name=entry.storyteller_name,
        trigger_kind=entry.trigger_kind,
        room_id=entry.room_id,
        situation_id=entry.situation_id,
        model=entry.model,
        input_tokens=entry.input_tokens,
        cached_tokens=entry.cached_tokens,
        output_tokens=entry.output_tokens,
        reasoning_tokens=entry.reasoning_tokens,
        cost_usd=entry.cost_usd,
        status=entry.status,
    )


@dataclass(frozen=True)
class CostLine:
    """Totals of one group in a cost report.

    Attributes:
        key: the group's value (a day, a storyteller id, a trigger kind...); None for requests
            without one (e.g. turns that touched no situation).
        label: how to show the key (a storyteller's or situation's name when known).
        failed: how many of the requests got no answer (ledger status other than ``ok``).
    """

    key: str | None
    label: str
    requests: int
    failed: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_usd: float


@dataclass(frozen=True)
class DaySpend:
    """USD spent on one UTC day, in all and per storyteller."""

    total: float
    by_storyteller: dict[int, float]


def _group_column(by: Grouping) -> Any:
    return {
        "day": LedgerRow.day,
        "storyteller": LedgerRow.storyteller_id,
        "trigger": LedgerRow.trigger_kind,
        "situation": LedgerRow.situation_id,
        "room": LedgerRow.room_id,
        "model": LedgerRow.model,
        "purpose": LedgerRow.purpose,
        "status": LedgerRow.status,
    }[by]


REQUEST_OK = "ok"
"""The status of an answered request's row."""


class LedgerRepository:
    """Adds ledger rows and sums them."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, entries: Sequence[LedgerEntry]) -> list[int]:
        """Store rows not (yet) linked to a stored run; return their ids, in order.

        A request is written here as soon as it is answered; `RunRepository.add` links it to
        its run when the run ends (a run cut off by a crash leaves it unlinked, still counted).
        """
        if not entries:
            return []
        async with self._db.session() as session:
            rows = [ledger_row(e) for e in entries]
            session.add_all(rows)
            await session.flush()
            return [row.id for row in rows]

    async def add_within(self, entry: LedgerEntry, caps: SpendCaps) -> int:
        """Store a request's worst-case row only if today's ledger has room for it under
        `caps` (checked and written in one transaction, `spend_guard`); return its id.

        Raises:
            OverCap: a cap has no room; nothing was stored.
        """
        async with self._db.session() as session:
            row = ledger_row(entry)
            await add_within(session, self._db.dialect, row, caps)
            return row.id

    async def settle(self, row_id: int, entry: LedgerEntry) -> bool:
        """Replace a provisional row (written before its request) with what the request cost:
        its answer's bill, or what it may be billed after failing (and how it failed).

        Returns:
            False when the row is gone (pruned meanwhile); the caller then adds a new one.
        """
        fresh = ledger_row(entry)
        async with self._db.session() as session:
            result = await session.execute(
                update(LedgerRow)
                .where(LedgerRow.id == row_id)
                .values({column: getattr(fresh, column) for column in _SETTLED})
                .execution_options(synchronize_session=False)
            )
            return bool(getattr(result, "rowcount", 0))

    async def discard(self, row_id: int) -> None:
        """Delete a provisional row whose request was held back after all (never sent)."""
        async with self._db.session() as session:
            row = await session.get(LedgerRow, row_id)
            if row is not None:
                await session.delete(row)

    async def spend_on(self, day: date, *, in_flight_since: datetime | None = None) -> DaySpend:
        """What the daemon spent on a UTC day, replays excluded (budgets reload it at start-up).

        With `in_flight_since`, requests still in flight (rows ``sent`` since then) are left
        out: a budget keeper holds its own as reservations, and a cluster's shared check
        counts the others' (`spend_guard`).
        """
        query = (
            select(LedgerRow.storyteller_id, func.sum(LedgerRow.cost_usd))
            .where(LedgerRow.day == day.isoformat())
            # Replays are an admin's deliberate spend outside the daemon's caps.
            .where(LedgerRow.purpose != "replay")
            .group_by(LedgerRow.storyteller_id)
        )
        if in_flight_since is not None:
            query = query.where(
                or_(LedgerRow.status != IN_FLIGHT, LedgerRow.occurred_at < in_flight_since)
            )
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        by_storyteller = {int(sid): float(total or 0.0) for sid, total in rows if sid is not None}
        return DaySpend(sum(float(total or 0.0) for _, total in rows), by_storyteller)

    async def totals(
        self,
        by: Grouping,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        storyteller_id: int | None = None,
        storyteller_name: str | None = None,
    ) -> list[CostLine]:
        """Requests, tokens and USD per group, most expensive first (by day: newest first).

        Args:
            by: what to group by.
            since: only requests at or after this time.
            until: only requests before this time.
            storyteller_id: only this storyteller's requests.
            storyteller_name: only requests of storytellers with this name (any case).
        """
        column = _group_column(by)
        cost = func.sum(LedgerRow.cost_usd)
        query = select(
            column,
            func.count(),
            func.sum(case((LedgerRow.status != REQUEST_OK, 1), else_=0)),
            func.sum(LedgerRow.input_tokens),
            func.sum(LedgerRow.cached_tokens),
            func.sum(LedgerRow.output_tokens),
            func.sum(LedgerRow.reasoning_tokens),
            cost,
        ).group_by(column)
        if since is not None:
            query = query.where(LedgerRow.occurred_at >= since)
        if until is not None:
            query = query.where(LedgerRow.occurred_at < until)
        if storyteller_id is not None:
            query = query.where(LedgerRow.storyteller_id == storyteller_id)
        if storyteller_name is not None:
            query = query.where(func.lower(LedgerRow.storyteller_name) == storyteller_name.lower())
        query = query.order_by(column.desc() if by == "day" else cost.desc(), column)
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
            labels = await self._labels(session, by, [r[0] for r in rows])
        return [
            CostLine(
                key=None if key is None else str(key),
                label=labels.get(key, "none" if key is None else str(key)),
                requests=int(count),
                failed=int(failed or 0),
                input_tokens=int(tin or 0),
                cached_tokens=int(cached or 0),
                output_tokens=int(tout or 0),
                reasoning_tokens=int(reasoning or 0),
                cost_usd=float(usd or 0.0),
            )
            for key, count, failed, tin, cached, tout, reasoning, usd in rows
        ]

    @staticmethod
    async def _labels(session: AsyncSession, by: Grouping, keys: list[Any]) -> dict[Any, str]:
        """Readable names for storyteller and situation ids (as recorded, or as now titled)."""
        wanted = [k for k in keys if k is not None]
        if not wanted:
            return {}
        if by == "storyteller":
            rows = await session.execute(
                select(LedgerRow.storyteller_id, func.max(LedgerRow.storyteller_name))
                .where(LedgerRow.storyteller_id.in_(wanted))
                .group_by(LedgerRow.storyteller_id)
            )
            return {sid: f"{name} (#{sid})" for sid, name in rows.all()}
        if by == "situation":
            rows = await session.execute(
                select(SituationRow.id, SituationRow.title).where(SituationRow.id.in_(wanted))
            )
            return {sid: f"#{sid} {title}" for sid, title in rows.all()}
        return {}

    async def prune(self, before: datetime) -> int:
        """Delete rows older than `before`; how many went."""
        async with self._db.session() as session:
            result = await session.execute(delete(LedgerRow).where(LedgerRow.occurred_at < before))
        return int(getattr(result, "rowcount", 0) or 0)
