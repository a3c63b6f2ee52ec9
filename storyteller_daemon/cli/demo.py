"""``storyteller demo``: a storyteller watching the simulated harbour town, live."""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer
from rich.panel import Panel
from rich.table import Table

from storyteller_daemon.bundled import example_config
from storyteller_daemon.cli.support import console, run_async

DEMO_STORYTELLER = "Harbour Ward Watch"
DIRECTOR = "Harbour Ward Director"
PACKS = ("narrative-steward", "harbour-ward", "harbour-director")
EXAMPLE_CONFIG = example_config()


async def _opening_scene(world: object, delay: float) -> None:
    """A scripted incident early on, so every demo shows a full turn."""
    await asyncio.sleep(delay)
    say = getattr(world, "say", None)
    if say is not None:
        say(1001, "Thief! That cutpurse just took my purse, somebody stop him!")


async def _director_heartbeats(
    runtime: object, storyteller_id: int, after: float, every: float
) -> None:
    """The director's five-minute heartbeat, fired every `every` seconds from `after` on (once
    the watch has answered the opening scene), so a short demo shows a plan made on one
    heartbeat and advanced on the next ones."""
    from storyteller_daemon.app import Runtime
    from storyteller_daemon.domain.storytellers import Heartbeat

    assert isinstance(runtime, Runtime)
    await asyncio.sleep(after)
    while True:
        await runtime.pipeline.heartbeat(storyteller_id, Heartbeat.FIVE_MINUTES)
        await asyncio.sleep(every)


def _fresh_database_file(data_dir: Path) -> Path:
    """The demo database path, with any previous run's files removed."""
    data_dir.mkdir(parents=True, exist_ok=True)
    db_file = data_dir / "demo.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db_file}{suffix}").unlink(missing_ok=True)
    return db_file


@run_async
async def demo(
    seconds: Annotated[float, typer.Option(help="How long to run.", min=1)] = 60.0,
    data_dir: Annotated[
        Path, typer.Option(help="Where the demo database is written (recreated each run).")
    ] = Path("demo-data"),
    tick: Annotated[
        float, typer.Option(help="Seconds between steps of the town's activity.", min=0.1)
    ] = 2.0,
) -> None:
    """Migrate a fresh SQLite file, load the packs, and watch a storyteller work (Ctrl-C ends)."""
    from storyteller_daemon.app import OFFLINE_BANNER, build_runtime, choose_model, open_store
    from storyteller_daemon.app.logs import configure_logging
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.config import load_config, parse_config
    from storyteller_daemon.interchange.packs.files import read_pack
    from storyteller_daemon.runtime.daemon import stop_on_signals
    from storyteller_daemon.storage.seeding import Action, load_pack
    from world_adapter.sim import SimWorld

    db_file = _fresh_database_file(data_dir)
    example = load_config(EXAMPLE_CONFIG)  # the documented price table, so costs are real
    cfg = parse_config(
        {
            "database": {"url": f"sqlite+aiosqlite:///{db_file}"},
            "model": {
                "offline_when_no_key": True,
                "prices": {name: p.model_dump() for name, p in example.model.prices.items()},
            },
            "world": {"sim_tick_seconds": tick},
            "logging": {"level": "WARNING"},
            # The demo's world moves every `tick` seconds, so a burst is over after a tick or
            # two; the defaults suit a game's real pace. Its few minutes show every verdict:
            # no calm pacing.
            "attention": {
                "quiet_seconds": tick,
                "max_wait_seconds": 3 * tick,
                "calm_wait_factor": 1.0,
            },
            # The director's heartbeats come faster than the town's players act.
            "budgets": {"skip_idle_heartbeats": False},
            # Its five-minute heartbeat comes every two ticks: the ten minutes a tool waits
            # before acting on the same room again shrink in step, to four ticks.
            "policy": {"target_cooldown_seconds": 4 * tick},
        },
        "demo",
    )
    configure_logging(cfg.logging)
    clock = SystemClock()
    store = open_store(cfg, clock)
    await store.db.upgrade()
    for pack in PACKS:
        report = await load_pack(store.db, read_pack(pack), clock=store.clock)
        created = Counter(c.kind for c in report.changes if c.action is Action.CREATE)
        tellers, documents = created["storyteller"], created["document"]
        console.print(
            f"loaded pack [bold]{pack}[/]: {tellers} storyteller{'s' * (tellers != 1)} and "
            f"{documents} document{'s' * (documents != 1)} created"
        )
    watcher = await store.storytellers.get(DEMO_STORYTELLER)
    await store.storytellers.save(replace(watcher, paused=False))
    director = await store.storytellers.get(DIRECTOR)
    # The pack paces the director for a game's real time (ten minutes between two touches of
    # one room); its heartbeats come every two ticks here, so the gap shrinks in step.
    pacing = replace(director.direction.pacing, room_gap_seconds=round(4 * tick))
    direction = replace(director.direction, pacing=pacing)
    await store.storytellers.save(replace(director, paused=False, direction=direction))

    choice = choose_model(cfg, os.environ)
    if choice.offline:
        console.print(Panel(OFFLINE_BANNER, title="offline stand-in", style="bold yellow"))
    else:
        console.print(Panel(f"model endpoint: {choice.description}", style="bold green"))

    world = SimWorld.harbour_town(seed=cfg.world.sim_seed)
    players = [(s.id, s.name) for s in world.all_sheets() if s.is_player]
    from storyteller_daemon.cli.views.live import ConsoleObserver

    observer = ConsoleObserver(
        console, clock=clock, players=lambda: players, output_of=world.output_of
    )
    # The panel above said it; the daemon's own start-up warning would say it twice.
    logging.getLogger("storyteller_daemon.app").setLevel(logging.ERROR)
    runtime = await build_runtime(
        cfg,
        world=world,
        choice=choice,
        observer=observer,
        store=store,
        reload_seconds=2.0,
        clock=clock,
    )
    console.print(
        f"[bold]{DEMO_STORYTELLER}[/] watches the Harbour Ward and [bold]{DIRECTOR}[/] plans its "
        f"evening on a heartbeat every {2 * tick:g} s; running for {seconds:.0f} s "
        "(Ctrl-C stops earlier).\n"
    )
    stop = asyncio.Event()
    delay = min(3.0, seconds / 3)
    opening = asyncio.create_task(_opening_scene(world, delay))
    beats = asyncio.create_task(
        _director_heartbeats(runtime, director.id or 0, delay + 3 * tick, 2 * tick)
    )
    try:
        with stop_on_signals(stop):
            timer = asyncio.get_running_loop().call_later(seconds, stop.set)
            await runtime.run(stop)
            timer.cancel()
        await _summary(runtime, watcher.id or 0, director.id or 0)
    finally:
        opening.cancel()
        beats.cancel()
        await asyncio.gather(opening, beats, return_exceptions=True)
        await runtime.close()


async def _summary(runtime: object, storyteller_id: int, director_id: int) -> None:
    from storyteller_daemon.app import Runtime

    assert isinstance(runtime, Runtime)
    table = Table(title="demo summary", show_header=False)
    table.add_column("what", style="bold")
    table.add_column("count")
    table.add_row("model", runtime.choice.description)
    for label, value in runtime.stats.summary_rows():
        table.add_row(label, value)
    situations = await runtime.store.situations.list(storyteller_id)
    table.add_row(
        "situations",
        "\n".join(f"#{s.id} {s.title} ({s.scope_label})" for s in situations) or "none",
    )
    plans = await runtime.store.plans.list(director_id)
    table.add_row(
        "director's plans",
        "\n".join(
            f"#{p.id} {p.goal} ({p.status.value}, "
            f"{sum(s.state.value == 'done' for s in p.steps)}/{len(p.steps)} steps done)"
            for p in plans
        )
        or "none yet",
    )
    console.print()
    console.print(table)
