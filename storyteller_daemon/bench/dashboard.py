"""``storyteller bench dashboard``: how long each dashboard page takes with many run records.

A throw-away SQLite file is filled with run records spread over the
last 30 days (half attention calls, half turns with tool calls and a tape), one ledger row per
run, a day's worth of work items per day, situations and memories; then the dashboard is served
on loopback and each page is fetched repeatedly. The times are whole requests over loopback,
so they bound the server's own time from above.
"""

from __future__ import annotations

import random
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import BudgetsConfig, PolicyConfig
from storyteller_daemon.runtime.stats import percentile
from storyteller_daemon.storage.ledger import LedgerEntry
from storyteller_daemon.storage.runs import NewRun
from storyteller_daemon.storage.store import Store

BATCH = 2000
STORYTELLERS = ("Harbour Watch", "Market Crier", "Temple Bells")
OUTCOMES = ("completed", "completed", "completed", "noop", "crashed", "budget_exceeded")
TOKEN = secrets.token_urlsafe(16)


def _record(kind: str, n: int, at: datetime) -> dict[str, Any]:
    """A record the size and shape of a real one (a few kB)."""
    trigger: dict[str, Any] = {
        "kind": "room_echo",
        "label": "Room Echo",
        "occurred_at": at.isoformat(),
        "event": {"kind": "room_echo", "cell_id": 101 + n % 7, "text": f"Wren lifts purse {n}."},
        "attention_reason": "a theft" if kind == "turn" else None,
        "coalesced": [],
    }
    if kind == "attention":
        verdict = {"decision": "interested", "reason": "a theft", "violation": None}
        return {
            "kind": kind,
            "trigger": trigger,
            "events": [{"trigger": trigger, "verdict": verdict}],
            "input": f"[{n}] Wren lifts purse {n}. " * 10,
            "requests": [{"request": {"model": "gpt-5-nano", "input": []}, "response": None}],
        }
    calls = [
        {
            "round": 1,
            "call_id": f"c{n}-{i}",
            "name": name,
            "arguments": '{"Room": 101, "Text": "A whistle shrills along the quay."}',
            "envelope": {"ok": True, "result": {"done": True}},
        }
        for i, name in enumerate(("CreateSituation", "EchoToRoom"))
    ]
    request = {"model": "gpt-5-mini", "instructions": "You are the watch. " * 80, "input": []}
    return {
        "kind": kind,
        "trigger": trigger,
        "prompt": "Situations and events. " * 120,
        "turn": {"requests": [{"round": 1, "request": request, "response": None}], "calls": calls},
        "tape": [{"service": "world", "method": "execute_prog", "args": {"prog": "11"}}],
    }


def _runs(count: int, now: datetime, seed: int = 5) -> list[tuple[NewRun, list[LedgerEntry]]]:
    rng = random.Random(seed)
    span = timedelta(days=30).total_seconds()
    made = []
    for n in range(count):
        at = now - timedelta(seconds=span * (count - n) / count)
        kind = "attention" if n % 2 == 0 else "turn"
        teller = n % len(STORYTELLERS)
        cost = rng.uniform(0.0001, 0.01)
        run = NewRun(
            kind=kind,
            turn_key=f"st{teller + 1}:event:sim:{n // 2}",
            storyteller_id=teller + 1,
            storyteller_name=STORYTELLERS[teller],
            trigger_kind="room_echo",
            trigger_label="Room Echo",
            room_id=101 + n % 7,
            verdict="interested",
            outcome="interested" if kind == "attention" else rng.choice(OUTCOMES),
            started_at=at,
            record=_record(kind, n, at),
            rounds=1,
            tool_calls=2 if kind == "turn" else 0,
            input_tokens=1200,
            cached_tokens=400,
            output_tokens=150,
            cost_usd=cost,
        )
        entry = LedgerEntry(
            occurred_at=at,
            purpose=kind,
            model="gpt-5-mini",
            storyteller_id=teller + 1,
            storyteller_name=STORYTELLERS[teller],
            trigger_kind="room_echo",
            room_id=run.room_id,
            input_tokens=1200,
            cached_tokens=400,
            output_tokens=150,
            cost_usd=cost,
        )
        made.append((run, [entry]))
    return made


async def _fill(store: Store, runs: int, now: datetime) -> None:
    from storyteller_daemon.domain.work import NewWork
    from storyteller_daemon.testing import FakeClock

    for name in STORYTELLERS:
        await store.storytellers.create(name)
    repository = store.runs
    made = _runs(runs, now)
    for start in range(0, len(made), BATCH):
        await repository.add_many(made[start : start + BATCH])
    per_day = max(1, runs // 30)
    for day in range(30, -1, -1):
        moment = now - timedelta(days=day)
        backlog = store.stamped_by(FakeClock(moment)).backlog
        await backlog.add(
            [
                NewWork(1 + n % 3, f"sim:{day}:{n}", "room_echo", "event", 101, "{}")
                for n in range(per_day)
            ]
        )
    for n in range(300):
        await store.situations.create(1 + n % 3, f"Thread {n} on the quay", f"Wren, purse {n}")
    for n in range(600):
        await store.memories.create(1 + n % 3, 2000 + n % 50, f"Note {n}", f"Quick hands {n}")


@asynccontextmanager
async def _store() -> AsyncIterator[Store]:
    with tempfile.TemporaryDirectory(prefix="storyteller-bench-") as tmp:
        store = Store.open(f"sqlite+aiosqlite:///{Path(tmp) / 'dashboard.db'}", clock=SystemClock())
        try:
            await store.db.upgrade()
            yield store
        finally:
            await store.close()


async def run_dashboard_bench(runs: int, requests: int) -> dict[str, object]:
    """Fill, serve, fetch each page `requests` times; the report's rows."""
    import aiohttp

    from storyteller_daemon.runtime.dashboard import Controls, Dashboard, DashboardData, RunFeed
    from storyteller_daemon.runtime.dashboard.server import DashboardServer

    async with _store() as store:
        now = store.clock.now()
        began = time.perf_counter()
        await _fill(store, runs, now)
        filled = time.perf_counter() - began
        data = DashboardData(store, BudgetsConfig(), store.clock, Controls(PolicyConfig(), None))
        site = Dashboard(data, RunFeed(poll_seconds=2.0))
        newest = await data.queries.newest_run_id()
        pages = {
            "overview /": "/",
            "timeline /timeline": "/timeline",
            "runs /runs": "/runs",
            "runs, deep page": f"/runs?before={newest // 2}",
            "runs, filtered": "/runs?storyteller=2&run=turn&outcome=crashed",
            "run inspector /runs/<id>": f"/runs/{newest - 1}",
            "costs, 24 h": "/costs",
            "costs, 7 days": "/costs?hours=168",
            "situations, search": "/situations?q=quay",
            "memories, search": "/memories?q=hands",
            "api /api/overview": "/api/overview",
        }
        rows: dict[str, object] = {
            "database": store.db.dialect,
            "run records": runs,
            "fill seconds": round(filled, 1),
            "requests per page": requests,
        }
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with (
            DashboardServer(
                site, host="127.0.0.1", port=0, token=TOKEN, clock=store.clock
            ) as server,
            aiohttp.ClientSession(headers=headers) as session,
        ):
            base = f"http://127.0.0.1:{server.port}"
            worst = 0.0
            for label, path in pages.items():
                timings = []
                for _ in range(requests + 1):
                    began = time.perf_counter()
                    async with session.get(base + path) as response:
                        await response.read()
                        if response.status != 200:
                            raise RuntimeError(f"{path} answered {response.status}")
                    timings.append((time.perf_counter() - began) * 1000)
                timings = timings[1:]  # the first request warms caches
                worst = max(worst, percentile(timings, 0.95))
                rows[f"{label} p50/p95 ms"] = (
                    f"{statistics.median(timings):.1f} / {percentile(timings, 0.95):.1f}"
                )
            rows["slowest page p95 ms (target 200)"] = round(worst, 1)
    return rows
