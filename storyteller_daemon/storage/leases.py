"""Storyteller leases: which daemon of a cluster runs which storyteller, and the fencing check.

A daemon keeps a row in ``cluster_instances`` alive by renewing it; a storyteller's row in
``storyteller_leases`` names the daemon that runs it, until when, and the fencing token of that
ownership. Taking a lease (free, expired, or left by this daemon's previous run) adds one to
its token; renewing and releasing are guarded by owner and token, so a daemon that lost a lease
renews or releases nothing of it. On PostgreSQL the free leases are picked ``FOR UPDATE SKIP
LOCKED``, so daemons taking at once never wait on each other, and every take is a guarded
``UPDATE … RETURNING``: of two daemons racing for one lease, one gets it.

The fence that guards writes with these leases is in `storage.fence`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import timedelta

from sqlalchemy import delete, func, or_, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.cluster import ClusterStatus, InstanceStatus
from storyteller_daemon.domain.work import OPEN_STATES
from storyteller_daemon.errors import ConfigError, LeaseLost
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.fence import check_lease
from storyteller_daemon.storage.lease_signals import LEASE_CHANNEL
from storyteller_daemon.storage.models.cluster import ClusterInstanceRow, StorytellerLeaseRow
from storyteller_daemon.storage.models.storytellers import StorytellerRow
from storyteller_daemon.storage.models.work import WorkRow
from storyteller_daemon.storage.notifications import notify
from storyteller_daemon.storage.presence import departed
from storyteller_daemon.storage.storytellers import as_utc

_CHUNK = 500  # (id, token) pairs per IN (...) list


def _chunks(held: Mapping[int, int]) -> list[list[tuple[int, int]]]:
    pairs = sorted(held.items())
    return [pairs[i : i + _CHUNK] for i in range(0, len(pairs), _CHUNK)]


class LeaseRepository:
    """Joins, renews and leaves the cluster, and takes, renews and releases leases."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def join(self, instance: str, lease_seconds: float, *, first: bool = False) -> None:
        """Enter the cluster as `instance`, alive for `lease_seconds`, and free the leases a
        previous run under the same name left (that process is gone).

        Raises:
            ConfigError: `first` (the daemon is starting) while a daemon under the name is
                alive: two processes were given one ``cluster.instance``.
        """
        now = self._clock.now()
        async with self._db.session() as session:
            row = await session.get(ClusterInstanceRow, instance, with_for_update=True)
            expires = now + timedelta(seconds=lease_seconds)
            if row is not None and first and as_utc(row.expires_at) > now:
                left = (as_utc(row.expires_at) - now).total_seconds()
                raise ConfigError(
                    "config",
                    f"a daemon named '{instance}' already runs against this database: give "
                    f"each daemon its own name (or, if it was just killed, start in {left:.0f} s)",
                    key="cluster.instance",
                )
            if row is None:
                session.add(
                    ClusterInstanceRow(
                        name=instance, started_at=now, renewed_at=now, expires_at=expires
                    )
                )
            else:
                row.started_at, row.renewed_at, row.expires_at = now, now, expires
            await session.execute(
                update(StorytellerLeaseRow)
                .where(StorytellerLeaseRow.owner == instance)
                .values(owner=None, expires_at=None)
            )
            await self._notify(session, instance)

    async def beat(self, instance: str, lease_seconds: float) -> None:
        """Tell the others `instance` is alive for `lease_seconds` more (joins again if its row
        was removed meanwhile)."""
        now = self._clock.now()
        expires = now + timedelta(seconds=lease_seconds)
        async with self._db.session() as session:
            row = await session.get(ClusterInstanceRow, instance)
            if row is None:
                session.add(
                    ClusterInstanceRow(
                        name=instance, started_at=now, renewed_at=now, expires_at=expires
                    )
                )
            else:
                row.renewed_at, row.expires_at = now, expires

    async def leave(self, instance: str) -> None:
        """Leave the cluster: the others stop counting `instance` at once (and on PostgreSQL
        are woken to even out now)."""
        async with self._db.session() as session:
            await session.execute(
                delete(ClusterInstanceRow).where(ClusterInstanceRow.name == instance)
            )
            await self._notify(session, instance)

    async def _notify(self, session: AsyncSession, instance: str) -> None:
        """Wake the other daemons when this transaction commits (PostgreSQL's NOTIFY)."""
        await notify(session, LEASE_CHANNEL, instance)

    async def sync(self) -> int:
        """Give every storyteller a lease row and drop those of storytellers that are gone;
        return how many storytellers there are."""
        async with self._db.session() as session:
            leased = select(StorytellerLeaseRow.storyteller_id)
            await session.execute(
                delete(StorytellerLeaseRow).where(
                    StorytellerLeaseRow.storyteller_id.not_in(select(StorytellerRow.id))
                )
            )
            missing = list(
                await session.scalars(
                    select(StorytellerRow.id).where(StorytellerRow.id.not_in(leased))
                )
            )
            if missing:
                await session.execute(
                    self._db.insert_new(StorytellerLeaseRow),
                    [{"storyteller_id": sid, "token": 0} for sid in missing],
                )
            return int(
                await session.scalar(select(func.count()).select_from(StorytellerLeaseRow)) or 0
            )

    async def free_departed(self, instance: str) -> list[str]:
        """Free the leases of the daemons other than `instance` that died (their presence
        lock is free: `storage.presence`) and forget them; return their names."""
        async with self._db.session() as session:
            others = await session.scalars(
                select(ClusterInstanceRow.name).where(ClusterInstanceRow.name != instance)
            )
            gone = await departed(session, list(others))
            if gone:
                await session.execute(
                    update(StorytellerLeaseRow)
                    .where(StorytellerLeaseRow.owner.in_(gone))
                    .values(owner=None, expires_at=None)
                )
                await session.execute(
                    delete(ClusterInstanceRow).where(ClusterInstanceRow.name.in_(gone))
                )
                await self._notify(session, instance)  # the others even out at once too
            return gone

    async def live_instances(self) -> list[str]:
        """The daemons whose last renewal has not expired, by name."""
        async with self._db.session() as session:
            names = await session.scalars(
                select(ClusterInstanceRow.name)
                .where(ClusterInstanceRow.expires_at > self._clock.now())
                .order_by(ClusterInstanceRow.name)
            )
            return list(names)

    async def sharing_instances(self, lease_seconds: float) -> list[str]:
        """The live daemons that share the storytellers out: those that joined in the last
        `lease_seconds` (still taking their first share) or hold an unexpired lease. A daemon
        that says it is alive but has held nothing for longer (it cannot keep its leases) is
        not counted, so the others take what it lost instead of waiting on it."""
        now = self._clock.now()
        holding = (
            select(StorytellerLeaseRow.storyteller_id)
            .where(
                StorytellerLeaseRow.owner == ClusterInstanceRow.name,
                StorytellerLeaseRow.expires_at > now,
            )
            .exists()
        )
        async with self._db.session() as session:
            names = await session.scalars(
                select(ClusterInstanceRow.name)
                .where(
                    ClusterInstanceRow.expires_at > now,
                    or_(
                        ClusterInstanceRow.started_at > now - timedelta(seconds=lease_seconds),
                        holding,
                    ),
                )
                .order_by(ClusterInstanceRow.name)
            )
            return list(names)

    async def take(self, instance: str, limit: int, lease_seconds: float) -> dict[int, int]:
        """Take up to `limit` free or expired leases; return storyteller id → new token."""
        if limit <= 0:
            return {}
        now = self._clock.now()
        free = or_(StorytellerLeaseRow.owner.is_(None), StorytellerLeaseRow.expires_at < now)
        async with self._db.session() as session:
            ids = list(
                await session.scalars(
                    select(StorytellerLeaseRow.storyteller_id)
                    .where(free)
                    .order_by(StorytellerLeaseRow.storyteller_id)
                    .limit(limit)
                    .with_for_update(skip_locked=True)
                )
            )
            if not ids:
                return {}
            taken = await session.execute(
                update(StorytellerLeaseRow)
                .where(StorytellerLeaseRow.storyteller_id.in_(ids), free)
                .values(
                    owner=instance,
                    token=StorytellerLeaseRow.token + 1,
                    expires_at=now + timedelta(seconds=lease_seconds),
                    taken_at=now,
                )
                .returning(StorytellerLeaseRow.storyteller_id, StorytellerLeaseRow.token)
            )
            return {int(sid): int(token) for sid, token in taken}

    async def expired_of_live(self, instance: str) -> dict[int, str]:
        """Expired leases whose owner (not `instance`) still renews its presence: storyteller
        id → owner. Taking one over from a daemon that looks alive is worth an alert (it hangs,
        or it lost the database only for its leases)."""
        now = self._clock.now()
        async with self._db.session() as session:
            rows = await session.execute(
                select(StorytellerLeaseRow.storyteller_id, StorytellerLeaseRow.owner)
                .join(ClusterInstanceRow, ClusterInstanceRow.name == StorytellerLeaseRow.owner)
                .where(
                    StorytellerLeaseRow.owner != instance,
                    StorytellerLeaseRow.expires_at < now,
                    ClusterInstanceRow.expires_at > now,
                )
            )
            return {int(sid): str(owner) for sid, owner in rows}

    async def renew(
        self, instance: str, held: Mapping[int, int], lease_seconds: float
    ) -> dict[int, int]:
        """Renew the leases `instance` holds with these tokens; return those still held.

        The renewal never waits for one lease row while it holds another, so it cannot
        deadlock with this daemon's guarded writes (which share-lock their rows): rows free
        now are renewed together (locked without waiting), each row a write holds is renewed
        in a transaction of its own once that write is done.
        """
        expires = self._clock.now() + timedelta(seconds=lease_seconds)
        lease = StorytellerLeaseRow
        kept: dict[int, int] = {}
        for chunk in _chunks(held):
            mine = (lease.owner == instance, tuple_(lease.storyteller_id, lease.token).in_(chunk))
            async with self._db.session() as session:
                free = select(lease.storyteller_id).where(*mine).order_by(lease.storyteller_id)
                ids = list(await session.scalars(free.with_for_update(skip_locked=True)))
                renewed = await session.execute(
                    update(lease)
                    .where(*mine, lease.storyteller_id.in_(ids))
                    .values(expires_at=expires)
                    .returning(lease.storyteller_id, lease.token)
                )
                kept.update({int(sid): int(token) for sid, token in renewed})
        for sid, token in sorted(held.items()):
            if sid not in kept:
                async with self._db.session() as session:
                    one = update(lease).where(
                        lease.storyteller_id == sid, lease.owner == instance, lease.token == token
                    )
                    if (await session.execute(one.values(expires_at=expires))).rowcount:  # type: ignore[attr-defined]
                        kept[sid] = token
        return kept

    async def release(self, instance: str, held: Mapping[int, int]) -> int:
        """Free the leases `instance` holds with these tokens at once; return how many.

        The rows are locked in storyteller order first, the order a guarded write locks its
        own (`Fence.check`), so a release waits for such a write instead of deadlocking with it.
        """
        lease = StorytellerLeaseRow
        released = 0
        async with self._db.session() as session:
            for chunk in _chunks(held):
                mine = (
                    lease.owner == instance,
                    tuple_(lease.storyteller_id, lease.token).in_(chunk),
                )
                ids = list(
                    await session.scalars(
                        select(lease.storyteller_id)
                        .where(*mine)
                        .order_by(lease.storyteller_id)
                        .with_for_update()
                    )
                )
                result = await session.execute(
                    update(lease)
                    .where(*mine, lease.storyteller_id.in_(ids))
                    .values(owner=None, expires_at=None)
                )
                released += int(getattr(result, "rowcount", 0) or 0)
            if released:
                await self._notify(session, instance)
        return released

    async def holds(self, instance: str, storyteller_id: int, token: int) -> bool:
        """Whether `instance` still holds the storyteller with `token` (asked before a prog
        call is sent)."""
        try:
            async with self._db.session() as session:
                await check_lease(session, instance, storyteller_id, token)
        except LeaseLost:
            return False
        return True

    async def holders(
        self, only: Collection[int] | None = None
    ) -> dict[int, tuple[str | None, int]]:
        """Storyteller id → (the daemon holding its unexpired lease or None, token), of every
        storyteller or of `only` these."""
        now = self._clock.now()
        query = select(
            StorytellerLeaseRow.storyteller_id,
            StorytellerLeaseRow.owner,
            StorytellerLeaseRow.expires_at,
            StorytellerLeaseRow.token,
        )
        if only is not None:
            query = query.where(StorytellerLeaseRow.storyteller_id.in_(list(only)))
        async with self._db.session() as session:
            rows = await session.execute(query)
            return {
                int(sid): (
                    owner
                    if owner is not None and expires is not None and as_utc(expires) > now
                    else None,
                    int(token),
                )
                for sid, owner, expires, token in rows
            }

    async def status(self) -> ClusterStatus:
        """The daemons with their leases and open work, and what no live daemon holds."""
        now = self._clock.now()
        holders = await self.holders()
        async with self._db.session() as session:
            instances = list(
                await session.scalars(select(ClusterInstanceRow).order_by(ClusterInstanceRow.name))
            )
            work = await session.execute(
                select(WorkRow.storyteller_id, func.count())
                .where(WorkRow.state.in_([s.value for s in OPEN_STATES]))
                .group_by(WorkRow.storyteller_id)
            )
            open_work = {int(sid): int(n) for sid, n in work}
        leases: dict[str | None, int] = {}
        per_owner: dict[str | None, int] = {}
        for sid, (owner, _token) in holders.items():
            leases[owner] = leases.get(owner, 0) + 1
            per_owner[owner] = per_owner.get(owner, 0) + open_work.get(sid, 0)
        return ClusterStatus(
            instances=tuple(
                InstanceStatus(
                    name=row.name,
                    started_at=as_utc(row.started_at),
                    renewed_at=as_utc(row.renewed_at),
                    live=as_utc(row.expires_at) > now,
                    leases=leases.get(row.name, 0),
                    open_work=per_owner.get(row.name, 0),
                )
                for row in instances
            ),
            storytellers=len(holders),
            unowned=leases.get(None, 0),
            unowned_work=per_owner.get(None, 0),
        )
