"""The pipeline benchmark: a burst of world events through intake, attention and turns.

It runs the real pipeline, storage and sim world with the offline stand-in model (no network) on a
throw-away SQLite file, so its numbers say what the daemon itself costs.
"""

from __future__ import annotations

import asyncio
import resource
import tempfile
import time
from dataclasses import replace
from pathlib import Path


def peak_rss_mib() -> float:
    """The process's peak resident memory so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_pipeline_bench(events: int) -> dict[str, object]:
    """Push `events` emotes through the daemon and time every stage; the report's rows."""
    from storyteller_daemon.agent.models.offline import OfflineStandInModel
    from storyteller_daemon.app import ModelChoice, build_runtime
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.config import parse_config
    from storyteller_daemon.interchange.packs.files import read_pack
    from storyteller_daemon.storage.seeding import load_pack
    from storyteller_daemon.storage.store import Store
    from world_adapter.sim import SimWorld

    with tempfile.TemporaryDirectory(prefix="storyteller-bench-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        cfg = parse_config({"database": {"url": url}, "limits": {"queue_size": 10_000}}, "bench")
        store = Store.open(url, clock=SystemClock())
        await store.db.upgrade()
        await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
        watch = await store.storytellers.get("Harbour Ward Watch")
        await store.storytellers.save(replace(watch, paused=False))
        world = SimWorld.harbour_town(buffer_size=max(10_000, events * 2))
        offline = OfflineStandInModel()
        runtime = await build_runtime(
            cfg,
            world=world,
            choice=ModelChoice(offline, offline.name),
            store=store,
            clock=store.clock,
        )
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.daemon.run(stop))
        await runtime.daemon.ready.wait()
        while world.waiting_subscriptions == 0:  # noqa: ASYNC110 - polls the sim's counter
            await asyncio.sleep(0.001)

        lines = ["shouts for help: a thief!", "hauls a rope along the quay."]
        started = time.perf_counter()
        for i in range(events):
            world.emote(2003, lines[i % 2])
        await asyncio.sleep(0)
        produced = time.perf_counter() - started
        while runtime.stats.events_in < events:  # noqa: ASYNC110 - polls the pump's counter
            await asyncio.sleep(0.001)
        intake = time.perf_counter() - started
        await runtime.pipeline.wait_idle()
        total = time.perf_counter() - started
        stop.set()
        await task
        await runtime.close()

    stats = runtime.stats
    turns = sum(stats.turns.values())
    return {
        "events": events,
        "events produced per second": round(events / produced),
        "events taken in per second": round(events / intake),
        "attention requests": stats.attention_calls,
        "verdicts": dict(stats.verdicts),
        "turns": turns,
        "events per turn": round(stats.verdicts["interested"] / turns, 2) if turns else 0,
        "turns per second": round(turns / total, 1) if total else 0,
        "model requests per turn": round((stats.requests - stats.attention_calls) / turns, 2)
        if turns
        else 0,
        "tool calls per turn": round(stats.tool_calls / turns, 2) if turns else 0,
        "seconds until everything drained": round(total, 2),
        "dropped": dict(stats.dropped),
        "peak RSS (MiB)": round(peak_rss_mib(), 1),
    }
