"""What an admin sees of a cluster: ``storyteller cluster status`` and the daemon's /metrics."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner

from storyteller_daemon.app import build_runtime
from storyteller_daemon.cli import app
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.domain.work import NewWork
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.sim import SimWorld


async def _two_daemons(url: str) -> list[int]:
    store = Store.open(url, clock=SystemClock())
    try:
        await store.db.upgrade()
        ids = [(await store.storytellers.create(f"Teller {n}")).id or 0 for n in range(4)]
        await store.leases.sync()
        for name, count in (("node-a", 2), ("node-b", 1)):
            await store.leases.join(name, 60)
            await store.leases.take(name, count, 60)
        await store.backlog.add(
            [NewWork(ids[0], f"w:{n}", "room_echo", "echo", 101, "{}") for n in range(3)]
            + [NewWork(ids[3], "w:9", "room_echo", "echo", 101, "{}")]
        )
        return ids
    finally:
        await store.close()


def test_cluster_status_shows_each_daemon_its_leases_and_work(tmp_path: Path) -> None:
    db = tmp_path / "st.db"
    asyncio.run(_two_daemons(f"sqlite+aiosqlite:///{db}"))
    runner = CliRunner()
    result = runner.invoke(app, ["--db", str(db), "cluster", "status", "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert [(i["name"], i["live"], i["leases"], i["open_work"]) for i in shown["instances"]] == [
        ("node-a", True, 2, 3),
        ("node-b", True, 1, 0),
    ]
    assert (shown["storytellers"], shown["unowned"], shown["unowned_work"]) == (4, 1, 1)
    text = runner.invoke(app, ["--db", str(db), "cluster", "status"])
    assert text.exit_code == 0
    assert "node-a" in text.stdout and "1 held by no live daemon" in text.stdout


@pytest.mark.postgres
async def test_metrics_show_the_leases_of_every_daemon(pg_url: str) -> None:
    store = Store.open(pg_url, clock=FakeClock())
    await store.db.upgrade()
    st = await store.storytellers.create("Harbour Watch")
    await store.storytellers.save(replace(st, paused=False))
    cfg = parse_config(
        {"cluster": {"enabled": True, "instance": "node-1"}, "http": {"enabled": True, "port": 0}},
        "test",
    )
    runtime = await build_runtime(
        cfg, environ={}, world=SimWorld.harbour_town(), store=store, clock=FakeClock()
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await asyncio.wait_for(runtime.daemon.ready.wait(), 10)
        assert runtime.health is not None
        url = f"http://127.0.0.1:{runtime.health.port}/metrics"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            text = await response.text()
        lines = text.splitlines()
        for expected in [
            "storyteller_cluster_leases_held 1.0",
            'storyteller_cluster_lease_renewals_total{result="ok"} 1.0',
            'storyteller_cluster_instance_live{instance="node-1"} 1.0',
            'storyteller_cluster_instance_leases{instance="node-1"} 1.0',
            'storyteller_cluster_instance_leases{instance=""} 0.0',
            'storyteller_cluster_instance_open_work{instance="node-1"} 0.0',
            'storyteller_cluster_invocations_forwarded_total{direction="sent"} 0.0',
            'storyteller_cluster_invocations_forwarded_total{direction="answered"} 0.0',
        ]:
            assert expected in lines, expected
        assert any(
            line.startswith(
                'storyteller_cluster_instance_last_renewal_timestamp_seconds{instance="node-1"}'
            )
            for line in lines
        )
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await store.close()
    assert runtime.leases is not None and runtime.leases.held == frozenset()  # released on stop
