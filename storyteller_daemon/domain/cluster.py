"""Several daemons over one database: the fair share of storytellers, and what a status shows.

A daemon of a cluster runs a storyteller only while it holds the storyteller's lease; each new
owner of a lease gets a fencing token one greater than the last, and the writes of a daemon
carry the tokens it holds so a daemon that lost a lease cannot write for it any more.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

KILL_SWITCH_FLAG = "kill_switch"
"""The cluster flag that stops every daemon's prog calls (the kill switch's database twin)."""


def fair_share(storytellers: int, live_instances: int) -> int:
    """How many storytellers one of `live_instances` daemons may hold: the total divided
    evenly, rounded up (so every storyteller has a place), at least one daemon counted."""
    instances = max(1, live_instances)
    return -(-storytellers // instances)


@dataclass(frozen=True)
class InstanceStatus:
    """One daemon of the cluster as the database sees it.

    Attributes:
        name: the daemon's ``[cluster] instance``.
        started_at: when it joined.
        renewed_at: its last renewal.
        live: whether its last renewal is recent enough (its lease time not passed).
        leases: storytellers it holds now (their leases not expired).
        open_work: open work items (pending, interested, running) of those storytellers.
    """

    name: str
    started_at: datetime
    renewed_at: datetime
    live: bool
    leases: int
    open_work: int


@dataclass(frozen=True)
class ClusterStatus:
    """The daemons, and the storytellers no live daemon holds.

    Attributes:
        instances: every daemon with a row, live or not, by name.
        storytellers: storytellers with a lease row.
        unowned: storytellers whose lease is free or expired.
        unowned_work: open work items of those.
    """

    instances: tuple[InstanceStatus, ...]
    storytellers: int
    unowned: int
    unowned_work: int
