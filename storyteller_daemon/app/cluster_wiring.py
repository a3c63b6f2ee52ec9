"""A daemon of a cluster's own parts, wired (`build_runtime` adds them when ``[cluster]
enabled``): its name and stream cursor, its lease keeper over connections of its own, its
presence lock, and the forwarding of the game's invocations to the daemon running their
storyteller."""

from __future__ import annotations

import functools
import socket
from dataclasses import dataclass

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import Config
from storyteller_daemon.runtime.cluster import InvocationForwarder, LeaseKeeper
from storyteller_daemon.storage.cluster_messages import cluster_messages, send_message
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.lease_signals import lease_signals
from storyteller_daemon.storage.presence import Presence
from storyteller_daemon.storage.store import Store

LEASE_CONNECTIONS = 3
"""A cluster daemon's connections for its leases: its presence lock's, and two for renewals."""


@dataclass
class ClusterParts:
    """What a daemon of a cluster adds to the wiring."""

    instance: str
    cursor_key: str
    """Where this daemon's stream cursor is kept (each daemon follows the game itself)."""
    keeper: LeaseKeeper
    fenced: Store
    """The store whose backlog and turn journal write only for the storytellers held."""
    forwarder: InvocationForwarder
    lease_store: Store
    """The leases' own connections (closed after the daemon's store)."""


def cluster_parts(
    cfg: Config, store: Store, stamped: Store, clock: Clock, alerts: AlertSink
) -> ClusterParts:
    """Wire a cluster daemon's leases, fence and forwarding over `store`'s database."""
    instance = cfg.cluster.instance or socket.gethostname()
    # The leases are kept on connections of their own: a renewal never queues for one behind
    # the storytellers' work, however busy this daemon is.
    lease_store = Store.open(
        store.db.url,
        clock=clock,
        idle_in_transaction_seconds=max(cfg.cluster.lease_seconds, 5.0),
        pool_size=LEASE_CONNECTIONS,
    )
    keeper = LeaseKeeper(
        lease_store.leases,
        cfg.cluster,
        instance,
        clock,
        alerts=alerts,
        signals=functools.partial(lease_signals, store.db, clock),
        presence=Presence(instance, lease_store.db),
        checks=stamped.leases,
    )
    fenced = stamped.fenced_by(Fence(instance, keeper.token))
    forwarder = InvocationForwarder(  # a game's invoke reaches the storyteller's daemon
        instance,
        storytellers=store.storytellers,
        holders=fenced.leases.holders,
        send=functools.partial(send_message, store.db, instance),
        listen=functools.partial(cluster_messages, store.db, clock, instance),
        clock=clock,
    )
    return ClusterParts(
        instance, f"{cfg.world.kind}@{instance}", keeper, fenced, forwarder, lease_store
    )
