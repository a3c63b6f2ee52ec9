"""Parked prog calls awaiting approval (the prog calls the caps count are `policy_actions`).

Every move of a parked call is one short transaction guarded by the state it must be in (see
`storyteller_daemon.domain.approvals`), so an approval cannot be decided twice, and an approved
call is claimed by exactly one runner.
"""

from __future__ import annotations

import builtins
from collections.abc import Collection
from dataclasses import asdict
from datetime import datetime

from sqlalchemy import select, update

from storyteller_daemon.domain.approvals import (
    Approval,
    ApprovalState,
    ParkedCall,
)
from storyteller_daemon.errors import ConflictError, NotFoundError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.policy import ApprovalRow
from storyteller_daemon.storage.storytellers import as_utc


def approval_to_domain(row: ApprovalRow) -> Approval:
    """Row → `Approval`."""
    return Approval(
        key=row.key,
        storyteller_id=row.storyteller_id,
        tool=row.tool,
        arguments=row.arguments,
        turn_key=row.turn_key,
        trigger=row.trigger,
        room_id=row.room_id,
        created_at=as_utc(row.created_at),
        expires_at=as_utc(row.expires_at),
        id=row.id,
        state=ApprovalState(row.state),
        decided_at=as_utc(row.decided_at) if row.decided_at is not None else None,
        decided_by=row.decided_by,
        note=row.note,
        result=row.result,
    )


class ApprovalRepository:
    """Parks, lists, decides, claims and finishes calls held for approval."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def park(self, call: ParkedCall) -> Approval:
        """Park `call`; a call with the same key parked before is returned as it stands."""
        async with self._db.session() as session:
            found = await session.scalar(select(ApprovalRow).where(ApprovalRow.key == call.key))
            if found is not None:
                return approval_to_domain(found)
            row = ApprovalRow(
                **asdict(call), state=ApprovalState.PENDING.value, decided_by="", note="", result=""
            )
            session.add(row)
            await session.flush()
            return approval_to_domain(row)

    async def get(self, approval_id: int) -> Approval:
        """One parked call.

        Raises:
            NotFoundError: no parked call has this id.
        """
        async with self._db.session() as session:
            row = await session.get(ApprovalRow, approval_id)
            if row is None:
                raise NotFoundError(f"no parked call #{approval_id}")
            return approval_to_domain(row)

    async def list(
        self, states: Collection[ApprovalState] = (), *, limit: int = 100
    ) -> builtins.list[Approval]:
        """Parked calls in `states` (all when empty), newest first."""
        query = select(ApprovalRow).order_by(ApprovalRow.id.desc()).limit(limit)
        if states:
            query = query.where(ApprovalRow.state.in_([s.value for s in states]))
        async with self._db.session() as session:
            return [approval_to_domain(r) for r in await session.scalars(query)]

    async def decide(
        self, approval_id: int, *, approve: bool, now: datetime, by: str = "", note: str = ""
    ) -> Approval:
        """Approve or reject a pending call; an expired one becomes ``expired`` instead.

        Raises:
            NotFoundError: no parked call has this id.
            ConflictError: the call is not pending (decided before, expired, or running).
        """
        async with self._db.session() as session:
            row = await session.get(ApprovalRow, approval_id)
            if row is None:
                raise NotFoundError(f"no parked call #{approval_id}")
            if row.state != ApprovalState.PENDING.value:
                raise ConflictError(f"parked call #{approval_id} is {row.state}, not pending")
            expired = as_utc(row.expires_at) <= now
            if expired:
                row.state = ApprovalState.EXPIRED.value
            else:
                row.state = (ApprovalState.APPROVED if approve else ApprovalState.REJECTED).value
                row.decided_by, row.note = by, note
            row.decided_at = now
            await session.flush()
            decided = approval_to_domain(row)
        if expired:  # raised after the commit, so the call stays expired
            raise ConflictError(
                f"parked call #{approval_id} expired at {decided.expires_at:%Y-%m-%d %H:%M} UTC;"
                " it will not run"
            )
        return decided

    async def expire(self, now: datetime) -> builtins.list[Approval]:
        """Mark pending calls whose time is up ``expired``; return them."""
        async with self._db.session() as session:
            rows = list(
                await session.scalars(
                    select(ApprovalRow).where(
                        ApprovalRow.state == ApprovalState.PENDING.value,
                        ApprovalRow.expires_at <= now,
                    )
                )
            )
            for row in rows:
                row.state, row.decided_at = ApprovalState.EXPIRED.value, now
            return [approval_to_domain(r) for r in rows]

    async def claim(self, storytellers: Collection[int] | None = None) -> builtins.list[Approval]:
        """Approved calls, moved to ``running``, plus calls a stopped daemon left running (of
        these `storytellers` only, when given: those a daemon of a cluster holds).

        A call left ``running`` was claimed before a crash or stop and may have reached the
        game; it is run again under the same idempotency key, which the game answers with the
        stored outcome if it ran.
        """
        query = select(ApprovalRow).where(
            ApprovalRow.state.in_([ApprovalState.APPROVED.value, ApprovalState.RUNNING.value])
        )
        if storytellers is not None:
            query = query.where(ApprovalRow.storyteller_id.in_(sorted(storytellers)))
        async with self._db.session() as session:
            rows = list(await session.scalars(query.order_by(ApprovalRow.id)))
            for row in rows:
                row.state = ApprovalState.RUNNING.value
            return [approval_to_domain(r) for r in rows]

    async def finish(self, approval_id: int, *, ok: bool, result: str) -> None:
        """Record a claimed call's outcome (``done`` or ``failed``)."""
        state = ApprovalState.DONE if ok else ApprovalState.FAILED
        async with self._db.session() as session:
            await session.execute(
                update(ApprovalRow)
                .where(
                    ApprovalRow.id == approval_id,
                    ApprovalRow.state == ApprovalState.RUNNING.value,
                )
                .values(state=state.value, result=result)
            )
