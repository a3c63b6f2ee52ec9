"""``storyteller dashboard``: the dashboard's pages from a database, without the daemon."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.storage.runs import NewRun, RunRepository
from storyteller_daemon.storage.store import Store

ROOT = Path(__file__).resolve().parents[2]


async def _database(tmp_path: Path) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path / 'dash.db'}"
    store = Store.open(url, clock=SystemClock())
    await store.db.upgrade()
    watch = await store.storytellers.create("Quay Watch")
    assert watch.id is not None
    await RunRepository(store.db).add(
        NewRun(
            kind="attention",
            turn_key="k1",
            storyteller_id=watch.id,
            storyteller_name=watch.name,
            trigger_kind="room_echo",
            trigger_label="Room Echo",
            outcome="ignore",
            started_at=datetime(2026, 3, 1, 12, tzinfo=UTC),
            record={"events": [], "input": "[1] <b>Wren</b> waves"},
        )
    )
    await store.close()
    return url


def _command(url: str, *args: str, token: str = "") -> subprocess.Popen[str]:
    env = {**os.environ, "DASH_TOKEN": token}
    return subprocess.Popen(
        [sys.executable, "-m", "storyteller_daemon", "--db", url, "dashboard", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_the_dashboard_serves_the_database_until_sigterm(tmp_path: Path) -> None:
    url = await _database(tmp_path)
    process = _command(url, "--host", "127.0.0.1", "--port", "0")
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        assert line.startswith("Dashboard at http://127.0.0.1:"), line
        base = line.split()[2].rstrip("/")
        async with aiohttp.ClientSession() as session:
            async with session.get(f"{base}/runs") as response:
                assert response.status == 200
                page = await response.text()
            assert "Quay Watch" in page and "Room Echo" in page
            async with session.get(f"{base}/api/overview") as response:
                overview = await response.json()
            assert overview["daemon"]["running"] is False
            assert [s["name"] for s in overview["storytellers"]] == ["Quay Watch"]
            async with session.get(f"{base}/runs/1") as response:
                page = await response.text()
            assert "&lt;b&gt;Wren&lt;/b&gt; waves" in page
            async with session.post(f"{base}/api/storytellers/1/resume") as response:
                assert response.status == 403  # no token configured: the CSRF token guards
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = await asyncio.to_thread(process.communicate, None, 30)
    assert process.returncode == 0, err


def test_another_address_without_a_token_is_refused_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'none.db'}"
    process = _command(url, "--host", "0.0.0.0", "--port", "0")
    _, err = process.communicate(timeout=60)
    assert process.returncode == 78
    assert "a bearer token is required when host is not a loopback address" in err
    assert "Traceback" not in err
