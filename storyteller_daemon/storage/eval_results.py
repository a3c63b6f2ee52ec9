"""Kept eval results: each scenario of each ``storyteller eval``, per storyteller by name.

`add` stores an evaluation's results and keeps only the newest `KEEP_PER_SCENARIO` of each
storyteller's scenario; `latest` gives each storyteller's newest evaluation, `rounds` the
evaluations over time (the trend), both read by the dashboard.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import delete, func, select

from storyteller_daemon.domain.eval_results import EvalResult, EvalRound
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.records import EvalResultRow
from storyteller_daemon.storage.storytellers import as_utc

KEEP_PER_SCENARIO = 60
"""Evaluations kept of each storyteller's scenario (the trend's length)."""


def _domain(row: EvalResultRow) -> EvalResult:
    return EvalResult(
        storyteller=row.storyteller,
        pack=row.pack,
        scenario=row.scenario,
        model=row.model,
        evaluated_at=as_utc(row.evaluated_at),
        runs=row.runs,
        threshold=row.threshold,
        pass_rate=row.pass_rate,
        passed=row.passed,
        skipped=row.skipped,
        tokens=row.tokens,
        usd=row.cost_usd,
        seconds=row.seconds,
    )


class EvalResultRepository:
    """Stores and reads the kept eval results."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, results: Sequence[EvalResult]) -> None:
        """Store one evaluation's results; drop what falls beyond `KEEP_PER_SCENARIO`."""
        if not results:
            return
        async with self._db.session() as session:
            session.add_all(
                EvalResultRow(
                    storyteller=r.storyteller,
                    pack=r.pack,
                    scenario=r.scenario,
                    model=r.model,
                    evaluated_at=r.evaluated_at,
                    runs=r.runs,
                    threshold=r.threshold,
                    pass_rate=r.pass_rate,
                    passed=r.passed,
                    skipped=r.skipped,
                    tokens=r.tokens,
                    cost_usd=r.usd,
                    seconds=r.seconds,
                )
                for r in results
            )
            await session.flush()
            for storyteller, scenario in {(r.storyteller, r.scenario) for r in results}:
                old = (
                    select(EvalResultRow.id)
                    .where(
                        EvalResultRow.storyteller == storyteller,
                        EvalResultRow.scenario == scenario,
                    )
                    .order_by(EvalResultRow.evaluated_at.desc(), EvalResultRow.id.desc())
                    .offset(KEEP_PER_SCENARIO)
                )
                ids = list((await session.execute(old)).scalars())
                if ids:
                    await session.execute(delete(EvalResultRow).where(EvalResultRow.id.in_(ids)))

    async def latest(self) -> dict[str, list[EvalResult]]:
        """Each storyteller's newest evaluation, by storyteller name, scenarios by name."""
        newest = (
            select(EvalResultRow.storyteller, func.max(EvalResultRow.evaluated_at).label("at"))
            .group_by(EvalResultRow.storyteller)
            .subquery()
        )
        query = (
            select(EvalResultRow)
            .join(
                newest,
                (EvalResultRow.storyteller == newest.c.storyteller)
                & (EvalResultRow.evaluated_at == newest.c.at),
            )
            .order_by(EvalResultRow.storyteller, EvalResultRow.scenario)
        )
        async with self._db.session() as session:
            rows = (await session.execute(query)).scalars().all()
        found: dict[str, list[EvalResult]] = defaultdict(list)
        for row in rows:
            found[row.storyteller].append(_domain(row))
        return dict(found)

    async def rounds(self, storyteller: str) -> list[EvalRound]:
        """The storyteller's evaluations over time, oldest first: scenarios passed, failed and
        skipped each time."""
        query = (
            select(EvalResultRow)
            .where(EvalResultRow.storyteller == storyteller)
            .order_by(EvalResultRow.evaluated_at, EvalResultRow.id)
        )
        async with self._db.session() as session:
            rows = (await session.execute(query)).scalars().all()
        counts: dict[tuple[datetime, str], list[int]] = {}
        for row in rows:
            tally = counts.setdefault((as_utc(row.evaluated_at), row.model), [0, 0, 0])
            tally[2 if row.skipped else 0 if row.passed else 1] += 1
        return [
            EvalRound(storyteller, at, model, passed, failed, skipped)
            for (at, model), (passed, failed, skipped) in counts.items()
        ]
