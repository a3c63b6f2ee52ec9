"""What the lease keeper needs from storage: the lease repository (`storage.leases`), the
daemon's presence lock (`PresenceLock`), and word of other daemons' lease changes
(`LeaseSignals`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Protocol

LeaseSignals = Callable[[Callable[[str], None]], AbstractAsyncContextManager[None]]
"""Listens, while inside, for daemons that join, release or leave, calling back with the name
of each (`storage.lease_signals.lease_signals` over the database)."""


class PresenceLock(Protocol):
    """This daemon's presence, held by the database for as long as the process lives
    (`storage.presence.Presence`)."""

    async def hold(self) -> None:
        """Hold it (again, after its connection broke); `ConfigError` if another process
        holds the name."""
        ...

    async def release(self) -> None:
        """Give it up (a clean stop)."""
        ...


class LeaseStore(Protocol):
    """The daemons of the cluster and the storytellers' leases (the lease repository)."""

    async def join(self, instance: str, lease_seconds: float, *, first: bool = False) -> None:
        """Enter the cluster, freeing what a previous run under the name held (`first`: refuse
        a name a live daemon holds, with `ConfigError`)."""
        ...

    async def beat(self, instance: str, lease_seconds: float) -> None:
        """Say the daemon is alive for `lease_seconds` more."""
        ...

    async def leave(self, instance: str) -> None:
        """Leave the cluster."""
        ...

    async def sync(self) -> int:
        """Give every storyteller a lease row; return how many storytellers there are."""
        ...

    async def free_departed(self, instance: str) -> list[str]:
        """Free the leases of the other daemons that died (their presence is gone) and
        forget them; return their names."""
        ...

    async def sharing_instances(self, lease_seconds: float) -> list[str]:
        """The live daemons the storytellers are shared out among."""
        ...

    async def take(self, instance: str, limit: int, lease_seconds: float) -> dict[int, int]:
        """Take up to `limit` free or expired leases: storyteller id → new token."""
        ...

    async def expired_of_live(self, instance: str) -> dict[int, str]:
        """Expired leases of daemons that still look alive: storyteller id → owner."""
        ...

    async def renew(
        self, instance: str, held: Mapping[int, int], lease_seconds: float
    ) -> dict[int, int]:
        """Renew the leases held with these tokens; return those still held."""
        ...

    async def release(self, instance: str, held: Mapping[int, int]) -> int:
        """Free the leases held with these tokens."""
        ...

    async def holds(self, instance: str, storyteller_id: int, token: int) -> bool:
        """Whether the daemon still holds the storyteller with `token`."""
        ...
