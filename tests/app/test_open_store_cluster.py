"""A daemon of a cluster has PostgreSQL end a session left idle inside a transaction after a
lease span, so one frozen mid-transaction keeps no lease row locked from the others."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storyteller_daemon.app.adapters import open_store
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config


async def _idle_timeout(url: str, cluster: dict[str, object]) -> str:
    cfg = parse_config({"database": {"url": url}, "cluster": cluster}, "test")
    store = open_store(cfg, SystemClock(), {})
    try:
        async with store.db.reading() as connection:
            return str(await connection.scalar(text("SHOW idle_in_transaction_session_timeout")))
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_cluster_daemons_sessions_end_when_idle_in_a_transaction(pg_url: str) -> None:
    clustered = {"enabled": True, "instance": "st-1", "lease_seconds": 12.0}
    assert await _idle_timeout(pg_url, clustered) == "12s"
    assert (
        await _idle_timeout(pg_url, {**clustered, "lease_seconds": 3.0, "renew_seconds": 0.5})
        == "5s"
    )
    assert await _idle_timeout(pg_url, {"enabled": False}) == "0"  # the server's default
