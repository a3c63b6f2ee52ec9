"""Read-only queries behind the web dashboard: pages of runs, what each stage did with the
events of a window, spending per hour, and situations and memories to browse.

Every query is bounded (a page size, a time window or both) and walks an index: runs by id (the
primary key) or start time, ledger rows by time, work items by id. Hour buckets are computed by
the database (``substr`` of SQLite's ISO text, ``to_char`` on PostgreSQL), so a week of spending
comes back as at most 168 rows per storyteller and purpose, however many requests it holds.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, case, func, literal_column, select
from sqlalchemy.sql.elements import ColumnElement

from storyteller_daemon.domain.situations import CharacterMemory, Situation
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.memories import memory_to_domain
from storyteller_daemon.storage.models.records import LedgerRow, RunRow
from storyteller_daemon.storage.models.story import MemoryRow, SituationRow
from storyteller_daemon.storage.models.work import WorkRow
from storyteller_daemon.storage.runs import RunSummary, StoredRun, run_summary
from storyteller_daemon.storage.situations import situation_to_domain

MAX_PAGE = 200
"""The most runs, situations or memories one query returns."""


@dataclass(frozen=True)
class RunFilter:
    """Which runs a list or the timeline shows; None matches anything."""

    storyteller_id: int | None = None
    room_id: int | None = None
    trigger_kind: str | None = None
    outcome: str | None = None
    kind: str | None = None


@dataclass(frozen=True)
class StageCount:
    """Work items of one storyteller that entered the backlog in a window, by where they are."""

    storyteller_id: int
    state: str
    rule: str | None
    count: int


@dataclass(frozen=True)
class HourSpend:
    """What one storyteller's requests of one purpose cost in one UTC hour."""

    hour: str
    """``YYYY-MM-DD HH`` (UTC)."""
    storyteller_id: int | None
    storyteller_name: str
    purpose: str
    requests: int
    input_tokens: int
    cached_tokens: int
    cost_usd: float
    failed: int = 0
    """Requests that got no answer (ledger status other than ``ok``)."""


def _page(limit: int) -> int:
    return max(1, min(limit, MAX_PAGE))


def _contains(column: Any, words: str) -> ColumnElement[bool]:
    """Case-insensitive substring match; ``%`` and ``_`` in `words` match themselves."""
    return func.lower(column).contains(words.lower(), autoescape=True)


class DashboardQueries:
    """The dashboard's reads (and nothing else: it writes through the other repositories)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    # ------------------------------------------------------------------ runs

    @staticmethod
    def _filtered(query: Select[Any], where: RunFilter) -> Select[Any]:
        if where.storyteller_id is not None:
            query = query.where(RunRow.storyteller_id == where.storyteller_id)
        if where.room_id is not None:
            query = query.where(RunRow.room_id == where.room_id)
        if where.trigger_kind is not None:
            query = query.where(RunRow.trigger_kind == where.trigger_kind)
        if where.outcome is not None:
            query = query.where(RunRow.outcome == where.outcome)
        if where.kind is not None:
            query = query.where(RunRow.kind == where.kind)
        return query

    async def runs_before(
        self, where: RunFilter, *, before: int | None = None, limit: int = 50
    ) -> list[RunSummary]:
        """Runs matching `where` with an id below `before` (all when None), newest first."""
        query = self._filtered(select(RunRow), where)
        if before is not None:
            query = query.where(RunRow.id < before)
        query = query.order_by(RunRow.id.desc()).limit(_page(limit))
        async with self._db.session() as session:
            return [run_summary(r) for r in (await session.execute(query)).scalars()]

    async def runs_with_records(
        self, where: RunFilter, *, after: int | None = None, limit: int = 50
    ) -> list[StoredRun]:
        """Runs with their records: with `after`, those stored since that id, oldest first;
        without, the newest `limit`, newest first."""
        query = self._filtered(select(RunRow), where)
        if after is not None:
            query = query.where(RunRow.id > after).order_by(RunRow.id)
        else:
            query = query.order_by(RunRow.id.desc())
        async with self._db.session() as session:
            rows = (await session.execute(query.limit(_page(limit)))).scalars().all()
            return [StoredRun(run_summary(r), json.loads(r.record)) for r in rows]

    async def newest_run_id(self) -> int:
        """The id of the newest stored run (0 when there is none)."""
        async with self._db.session() as session:
            return int((await session.execute(select(func.max(RunRow.id)))).scalar() or 0)

    async def turn_outcomes(self, since: datetime) -> list[tuple[int, str, int]]:
        """(storyteller id, outcome, turns) of the turns started since `since`."""
        query = (
            select(RunRow.storyteller_id, RunRow.outcome, func.count())
            .where(RunRow.started_at >= since, RunRow.kind == "turn")
            .group_by(RunRow.storyteller_id, RunRow.outcome)
        )
        async with self._db.session() as session:
            return [(int(s), str(o), int(n)) for s, o, n in await session.execute(query)]

    async def runs_for_keys(self, keys: Sequence[str]) -> dict[str, int]:
        """Turn key → the id of the turn run under that key, for the keys that have one."""
        wanted = sorted({k for k in keys if k})
        if not wanted:
            return {}
        query = (
            select(RunRow.turn_key, func.max(RunRow.id))
            .where(RunRow.turn_key.in_(wanted), RunRow.kind == "turn")
            .group_by(RunRow.turn_key)
        )
        async with self._db.session() as session:
            return {str(k): int(i) for k, i in await session.execute(query)}

    # ------------------------------------------------------------------ stages

    async def stage_counts(self, since: datetime) -> list[StageCount]:
        """Work items received since `since`, by storyteller, state and deciding rule."""
        # The oldest item received in the window bounds the scan by primary key: ids grow
        # with arrival, and received_on has no index of its own.
        first = select(func.min(WorkRow.id)).where(WorkRow.received_on >= since)
        async with self._db.session() as session:
            start = (await session.execute(first)).scalar()
            if start is None:
                return []
            rows = await session.execute(
                select(WorkRow.storyteller_id, WorkRow.state, WorkRow.rule, func.count())
                .where(WorkRow.id >= start, WorkRow.received_on >= since)
                .group_by(WorkRow.storyteller_id, WorkRow.state, WorkRow.rule)
            )
            return [StageCount(int(s), str(st), r, int(n)) for s, st, r, n in rows]

    # ------------------------------------------------------------------ spending

    def _hour(self) -> Any:
        if self._db.dialect == "postgresql":
            return func.to_char(
                func.timezone("UTC", LedgerRow.occurred_at), literal_column("'YYYY-MM-DD HH24'")
            )
        return func.substr(LedgerRow.occurred_at, 1, 13)

    async def hourly_spend(self, since: datetime, until: datetime) -> list[HourSpend]:
        """Spending per UTC hour, storyteller and purpose in [since, until), oldest first."""
        hour = self._hour().label("hour")
        query = (
            select(
                hour,
                LedgerRow.storyteller_id,
                func.max(LedgerRow.storyteller_name),
                LedgerRow.purpose,
                func.count(),
                func.sum(LedgerRow.input_tokens),
                func.sum(LedgerRow.cached_tokens),
                func.sum(LedgerRow.cost_usd),
                func.sum(case((LedgerRow.status != "ok", 1), else_=0)),
            )
            .where(LedgerRow.occurred_at >= since, LedgerRow.occurred_at < until)
            .group_by(hour, LedgerRow.storyteller_id, LedgerRow.purpose)
            .order_by(hour)
        )
        async with self._db.session() as session:
            rows = (await session.execute(query)).all()
        return [
            HourSpend(
                hour=str(h).replace("T", " "),
                storyteller_id=None if sid is None else int(sid),
                storyteller_name=str(name or ""),
                purpose=str(purpose),
                requests=int(n),
                input_tokens=int(tin or 0),
                cached_tokens=int(cached or 0),
                cost_usd=float(usd or 0.0),
                failed=int(failed or 0),
            )
            for h, sid, name, purpose, n, tin, cached, usd, failed in rows
        ]

    # ------------------------------------------------------------------ narrative

    async def open_situation_counts(self) -> dict[int, int]:
        """Storyteller id → unresolved situations."""
        query = (
            select(SituationRow.storyteller_id, func.count())
            .where(SituationRow.resolved.is_(False))
            .group_by(SituationRow.storyteller_id)
        )
        async with self._db.session() as session:
            return {int(s): int(n) for s, n in await session.execute(query)}

    async def situations(
        self,
        *,
        storyteller_id: int | None = None,
        words: str = "",
        include_resolved: bool = True,
        limit: int = 100,
    ) -> builtins.list[Situation]:
        """Situations whose title or text holds `words`, open first, newest first."""
        query = select(SituationRow)
        if storyteller_id is not None:
            query = query.where(SituationRow.storyteller_id == storyteller_id)
        if not include_resolved:
            query = query.where(SituationRow.resolved.is_(False))
        if words.strip():
            text = words.strip()
            query = query.where(
                _contains(SituationRow.title, text) | _contains(SituationRow.text, text)
            )
        query = query.order_by(SituationRow.resolved, SituationRow.id.desc()).limit(_page(limit))
        async with self._db.session() as session:
            return [situation_to_domain(r) for r in (await session.execute(query)).scalars()]

    async def memories(
        self,
        *,
        storyteller_id: int | None = None,
        character_id: int | None = None,
        words: str = "",
        limit: int = 100,
    ) -> builtins.list[CharacterMemory]:
        """Memories whose title or text holds `words`, newest first."""
        query = select(MemoryRow)
        if storyteller_id is not None:
            query = query.where(MemoryRow.storyteller_id == storyteller_id)
        if character_id is not None:
            query = query.where(MemoryRow.character_id == character_id)
        if words.strip():
            text = words.strip()
            query = query.where(_contains(MemoryRow.title, text) | _contains(MemoryRow.text, text))
        query = query.order_by(MemoryRow.id.desc()).limit(_page(limit))
        async with self._db.session() as session:
            return [memory_to_domain(r) for r in (await session.execute(query)).scalars()]
