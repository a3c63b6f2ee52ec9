"""Run records: what every storyteller turn and attention call did, for audit and replay.

A run is one of three kinds:

* ``turn``: a tool-loop turn. Its record holds the trigger, the user prompt, every request body
  and response, every tool call with arguments and result envelope, skips, refusals, retries,
  usage, cost, outcome and duration, plus the tape of what the world and the repositories
  answered (which is what makes a replay possible).
* ``attention``: one attention-gate request about one trigger, with its verdict and reason. Every
  judged trigger gets one, interested or not; a turn that follows an interested verdict carries
  the same ``turn_key``, which is how `RunRepository.related` links the two.
* ``digest``: one refresh of a storyteller's rolling digest while it was idle: the changes it
  read, the request and answer, and the digest it wrote (trigger kind ``reflection``).

The full record is JSON in ``record``; the columns beside it exist to filter and sum without
parsing it. Runs hold player text and prompts, so they are pruned after
``runs.retention_days``; their cost-ledger rows (`storage.ledger`, no text) outlive them with
``run_id`` cleared.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import (
    delete,
    func,
    select,
)
from sqlalchemy import update as sql_update

from storyteller_daemon.errors import NotFoundError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.ledger import LedgerEntry, ledger_row
from storyteller_daemon.storage.models.records import LedgerRow, RunRow
from storyteller_daemon.storage.storytellers import as_utc


@dataclass(frozen=True)
class NewRun:
    """A run to store: the filterable facts and the whole record."""

    kind: str
    turn_key: str
    storyteller_id: int
    storyteller_name: str
    trigger_kind: str
    trigger_label: str
    outcome: str
    started_at: datetime
    record: dict[str, Any]
    room_id: int | None = None
    verdict: str | None = None
    duration_seconds: float = 0.0
    rounds: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    situation_id: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class RunSummary:
    """A stored run without its record: what lists show."""

    id: int
    kind: str
    turn_key: str
    storyteller_id: int
    storyteller_name: str
    trigger_kind: str
    trigger_label: str
    room_id: int | None
    verdict: str | None
    outcome: str
    started_at: datetime
    duration_seconds: float
    rounds: int
    tool_calls: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    reasoning_tokens: int
    cost_usd: float
    situation_id: int | None
    error: str | None

    def to_json(self) -> dict[str, Any]:
        """The run with stable keys, as the CLI's and the dashboard's JSON show it."""
        return {
            "id": self.id,
            "kind": self.kind,
            "turn_key": self.turn_key,
            "storyteller": {"id": self.storyteller_id, "name": self.storyteller_name},
            "trigger": {
                "kind": self.trigger_kind,
                "label": self.trigger_label,
                "room_id": self.room_id,
            },
            "verdict": self.verdict,
            "outcome": self.outcome,
            "started_at": self.started_at.isoformat(),
            "duration_seconds": self.duration_seconds,
            "rounds": self.rounds,
            "tool_calls": self.tool_calls,
            "usage": {
                "input_tokens": self.input_tokens,
                "cached_tokens": self.cached_tokens,
                "output_tokens": self.output_tokens,
                "reasoning_tokens": self.reasoning_tokens,
            },
            "cost_usd": self.cost_usd,
            "situation_id": self.situation_id,
            "error": self.error,
        }


@dataclass(frozen=True)
class StoredRun:
    """A stored run with its full record."""

    summary: RunSummary
    record: dict[str, Any]


def run_summary(row: RunRow) -> RunSummary:
    return RunSummary(
        id=row.id,
        kind=row.kind,
        turn_key=row.turn_key,
        storyteller_id=row.storyteller_id,
        storyteller_name=row.storyteller_name,
        trigger_kind=row.trigger_kind,
        trigger_label=row.trigger_label,
        room_id=row.room_id,
        verdict=row.verdict,
        outcome=row.outcome,
        started_at=as_utc(row.started_at),
        duration_seconds=row.duration_seconds,
        rounds=row.rounds,
        tool_calls=row.tool_calls,
        input_tokens=row.input_tokens,
        cached_tokens=row.cached_tokens,
        output_tokens=row.output_tokens,
        reasoning_tokens=row.reasoning_tokens,
        cost_usd=row.cost_usd,
        situation_id=row.situation_id,
        error=row.error,
    )


def _row(run: NewRun) -> RunRow:
    columns = {k: v for k, v in vars(run).items() if k != "record"}
    text = json.dumps(run.record, ensure_ascii=False, separators=(",", ":"), default=str)
    return RunRow(**columns, record=text)


class RunRepository:
    """Stores, lists, shows and prunes run records (and writes their ledger rows)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(
        self, run: NewRun, charges: Sequence[LedgerEntry] = (), ledger_ids: Sequence[int] = ()
    ) -> int:
        """Store a run and the ledger rows of its requests in one transaction; the run's id.

        `charges` are written as new rows; `ledger_ids` name rows written earlier (as each
        request was answered), which are linked to the run.

        A turn that touched a situation has its requests, and those of its attention call (same
        storyteller and turn key), attributed to that situation, so an arc's cost includes the
        judging that started its turns.
        """
        async with self._db.session() as session:
            row = _row(run)
            session.add(row)
            await session.flush()
            if run.situation_id is not None:
                charges = [
                    c if c.situation_id is not None else replace(c, situation_id=run.situation_id)
                    for c in charges
                ]
            session.add_all([ledger_row(c, row.id) for c in charges])
            if ledger_ids:
                await session.execute(
                    sql_update(LedgerRow)
                    .where(LedgerRow.id.in_(list(ledger_ids)))
                    .values(run_id=row.id)
                )
                if run.situation_id is not None:
                    await session.execute(
                        sql_update(LedgerRow)
                        .where(LedgerRow.id.in_(list(ledger_ids)), LedgerRow.situation_id.is_(None))
                        .values(situation_id=run.situation_id)
                    )
            if run.kind == "turn" and run.situation_id is not None:
                attention_runs = select(RunRow.id).where(
                    RunRow.kind == "attention",
                    RunRow.turn_key == run.turn_key,
                    RunRow.storyteller_id == run.storyteller_id,
                )
                await session.execute(
                    sql_update(LedgerRow)
                    .where(LedgerRow.run_id.in_(attention_runs), LedgerRow.situation_id.is_(None))
                    .values(situation_id=run.situation_id)
                )
            return row.id

    async def add_many(self, runs: Sequence[tuple[NewRun, Sequence[LedgerEntry]]]) -> None:
        """Store many runs with their ledger rows in one transaction (benchmarks and bulk
        loads; the daemon stores each run as it ends with `add`)."""
        async with self._db.session() as session:
            rows = [_row(run) for run, _ in runs]
            session.add_all(rows)
            await session.flush()
            session.add_all(
                [
                    ledger_row(entry, row.id)
                    for row, (_, charges) in zip(rows, runs, strict=True)
                    for entry in charges
                ]
            )

    async def get(self, run_id: int) -> StoredRun:
        """One run with its record.

        Raises:
            NotFoundError: no run has that id (it may have been pruned).
        """
        async with self._db.session() as session:
            row = await session.get(RunRow, run_id)
            if row is None:
                raise NotFoundError(f"No run with id {run_id} exists (it may have been pruned).")
            return StoredRun(run_summary(row), json.loads(row.record))

    async def list(
        self,
        *,
        storyteller_id: int | None = None,
        storyteller_name: str | None = None,
        trigger_kind: str | None = None,
        outcome: str | None = None,
        kind: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
    ) -> builtins.list[RunSummary]:
        """Runs matching every given filter, newest first, at most `limit`."""
        query = select(RunRow)
        if storyteller_id is not None:
            query = query.where(RunRow.storyteller_id == storyteller_id)
        if storyteller_name is not None:
            query = query.where(func.lower(RunRow.storyteller_name) == storyteller_name.lower())
        if trigger_kind is not None:
            query = query.where(RunRow.trigger_kind == trigger_kind)
        if outcome is not None:
            query = query.where(RunRow.outcome == outcome)
        if kind is not None:
            query = query.where(RunRow.kind == kind)
        if since is not None:
            query = query.where(RunRow.started_at >= since)
        if until is not None:
            query = query.where(RunRow.started_at < until)
        query = query.order_by(RunRow.started_at.desc(), RunRow.id.desc()).limit(limit)
        async with self._db.session() as session:
            rows = (await session.execute(query)).scalars().all()
            return [run_summary(r) for r in rows]

    async def records_since(
        self,
        storyteller_id: int | None,
        since: datetime | None,
        *,
        kind: str,
        limit: int,
        min_tool_calls: int = 0,
    ) -> builtins.list[StoredRun]:
        """The newest `limit` runs of one kind of a storyteller (None: of every one) started at
        or after `since` (None: any time) with at least `min_tool_calls` tool calls, with their
        records, oldest first."""
        query = select(RunRow).where(RunRow.kind == kind, RunRow.tool_calls >= min_tool_calls)
        if storyteller_id is not None:
            query = query.where(RunRow.storyteller_id == storyteller_id)
        if since is not None:
            query = query.where(RunRow.started_at >= since)
        query = query.order_by(RunRow.started_at.desc(), RunRow.id.desc()).limit(limit)
        async with self._db.session() as session:
            rows = (await session.execute(query)).scalars().all()
            found = [StoredRun(run_summary(r), json.loads(r.record)) for r in rows]
        return list(reversed(found))

    async def turn_run(self, turn_key: str) -> StoredRun | None:
        """The newest turn run stored under `turn_key`, with its record, or None."""
        query = (
            select(RunRow)
            .where(RunRow.turn_key == turn_key, RunRow.kind == "turn")
            .order_by(RunRow.id.desc())
            .limit(1)
        )
        async with self._db.session() as session:
            row = (await session.execute(query)).scalars().first()
            return None if row is None else StoredRun(run_summary(row), json.loads(row.record))

    async def related(self, run: RunSummary) -> builtins.list[RunSummary]:
        """The other runs of the same storyteller and turn key (a turn's attention call)."""
        query = (
            select(RunRow)
            .where(
                RunRow.turn_key == run.turn_key,
                RunRow.storyteller_id == run.storyteller_id,
                RunRow.id != run.id,
            )
            .order_by(RunRow.started_at, RunRow.id)
        )
        async with self._db.session() as session:
            return [run_summary(r) for r in (await session.execute(query)).scalars().all()]

    async def prune(self, before: datetime) -> int:
        """Delete runs started before `before` (their ledger rows stay); how many went."""
        async with self._db.session() as session:
            result = await session.execute(delete(RunRow).where(RunRow.started_at < before))
        return int(getattr(result, "rowcount", 0) or 0)
