"""The fence: a write of a cluster's daemon is refused unless it still holds the lease.

`check_lease`, inside a writing transaction, reads the lease row ``FOR SHARE`` with the token
the writer holds, so a take of the lease waits for that transaction and a write after the take
finds no row and is refused with `LeaseLost`. A `Fence` is that check for the leases one daemon
holds now; repositories given one guard their writes with it, every storyteller of a write in
one ``IN (...) FOR SHARE`` query (a query per 500), its rows locked in storyteller order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.errors import LeaseLost
from storyteller_daemon.storage.models.cluster import StorytellerLeaseRow

_CHUNK = 500  # (id, token) pairs per IN (...) list


async def check_lease(
    session: AsyncSession, instance: str, storyteller_id: int, token: int
) -> None:
    """Refuse the transaction's write unless `instance` holds the storyteller with `token`.

    Raises:
        LeaseLost: another daemon took the lease since (or it was never held).
    """
    found = await session.scalar(
        select(StorytellerLeaseRow.storyteller_id)
        .where(
            StorytellerLeaseRow.storyteller_id == storyteller_id,
            StorytellerLeaseRow.owner == instance,
            StorytellerLeaseRow.token == token,
        )
        .with_for_update(read=True)
    )
    if found is None:
        raise LeaseLost(
            f"daemon {instance!r} no longer holds storyteller #{storyteller_id} "
            f"(fencing token {token} is stale): the write was refused"
        )


@dataclass(frozen=True)
class Fence:
    """The leases a daemon holds now, checked inside each guarded write.

    Attributes:
        instance: the daemon's name.
        token_of: the fencing token the daemon holds for a storyteller (None: not held).
    """

    instance: str
    token_of: Callable[[int], int | None]

    async def check(self, session: AsyncSession, storyteller_ids: Iterable[int]) -> None:
        """Refuse the transaction's write unless the daemon holds every storyteller.

        Raises:
            LeaseLost: one is not held, or its lease has a new owner.
        """
        held: list[tuple[int, int]] = []
        for sid in sorted(set(storyteller_ids)):
            token = self.token_of(sid)
            if token is None:
                raise LeaseLost(
                    f"daemon {self.instance!r} does not hold storyteller #{sid}: "
                    "the write was refused"
                )
            held.append((sid, token))
        lease = StorytellerLeaseRow
        for start in range(0, len(held), _CHUNK):
            chunk = held[start : start + _CHUNK]
            found = set(
                await session.scalars(
                    select(lease.storyteller_id)
                    .where(
                        lease.owner == self.instance,
                        tuple_(lease.storyteller_id, lease.token).in_(chunk),
                    )
                    .order_by(lease.storyteller_id)
                    .with_for_update(read=True)
                )
            )
            for sid, token in chunk:
                if sid not in found:
                    raise LeaseLost(
                        f"daemon {self.instance!r} no longer holds storyteller #{sid} "
                        f"(fencing token {token} is stale): the write was refused"
                    )
