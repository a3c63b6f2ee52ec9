"""``storyteller run``: the daemon, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.cli.support import run_async, state

if TYPE_CHECKING:
    from storyteller_daemon.alerts import Alerts


async def report_failed_start(alerts: Alerts, exc: Exception) -> None:
    """Alert that the daemon could not start, and post what is queued before exiting."""
    from storyteller_daemon.alerts.sanitise import exception_summary

    alerts.alert(
        "startup_failed",
        "The storyteller daemon could not start",
        f"{exception_summary(exc)} `storyteller doctor` checks what the daemon depends on.",
        severity="critical",
        key="startup_failed",
    )
    async with alerts.running():
        pass  # leaving the block posts the queue (a few seconds at most)


def own_cli(ctx: typer.Context) -> list[str]:
    """The command that runs this CLI with the same configuration (in-game admin commands run
    through it)."""
    options = state(ctx)
    argv = [sys.executable, "-m", "storyteller_daemon"]
    if options.config_path is not None:
        argv += ["--config", os.path.abspath(options.config_path)]
    if options.database_url is not None:
        argv += ["--db", options.database_url]
    return argv


@run_async
async def run(
    ctx: typer.Context,
    seconds: Annotated[
        float | None,
        typer.Option(help="Stop after this many seconds (default: run until signalled).", min=0),
    ] = None,
) -> None:
    """Run the storyteller daemon against the configured world until SIGINT/SIGTERM."""
    # Start-up builds ~200,000 objects (modules, classes, the storytellers) that nearly all
    # live on; the cyclic garbage collector would scan them again and again while they are
    # made (a quarter of the CPU time to ready). It runs again once the daemon is ready.
    gc.disable()
    try:
        await _run(ctx, seconds)
    finally:
        gc.enable()


async def _collect_once_ready(ready: asyncio.Event) -> None:
    """Once ready, collect again, leaving out what start-up built: frozen, those objects are
    never scanned again (a collection of them all would take a tenth of a second; the few
    hundred left unreachable by start-up are not worth it)."""
    await ready.wait()
    gc.freeze()
    gc.enable()


async def _run(ctx: typer.Context, seconds: float | None) -> None:
    from storyteller_daemon.alerts.crash_loop import check_crash_loop
    from storyteller_daemon.app import build_alerts, build_runtime, start_history
    from storyteller_daemon.app.logs import configure_logging
    from storyteller_daemon.clock import SystemClock
    from storyteller_daemon.runtime.daemon import stop_on_signals
    from storyteller_daemon.runtime.health.systemd import (
        SystemdNotifier,
        run_under_systemd,
        status_line,
    )

    cfg = state(ctx).config()
    configure_logging(cfg.logging)
    clock = SystemClock()
    alerts = build_alerts(cfg, clock)
    history = start_history(cfg)
    if history is not None:  # recorded first: failing starts are the ones that loop
        check_crash_loop(history, clock.now(), alerts)  # posted once the alerts run
    try:
        runtime = await build_runtime(cfg, clock=clock, alerts=alerts, admin_cli=own_cli(ctx))
    except Exception as exc:
        await report_failed_start(alerts, exc)
        raise
    notifier = SystemdNotifier.from_environ(os.environ)
    log = logging.getLogger("storyteller")
    stop = asyncio.Event()
    collecting = asyncio.create_task(_collect_once_ready(runtime.daemon.ready), name="gc-on-ready")
    try:
        with stop_on_signals(stop):
            log.info("model: %s; world: %s", runtime.choice.description, cfg.world.kind)
            timer = None
            if seconds is not None:
                timer = asyncio.get_running_loop().call_later(seconds, stop.set)
            await run_under_systemd(
                runtime.run(stop),
                notifier=notifier,
                ready=runtime.daemon.ready,
                stop=stop,
                clock=clock,
                status=lambda: status_line(runtime.daemon),
            )
            if timer is not None:
                timer.cancel()
    finally:
        collecting.cancel()
        await runtime.close()
    log.info("stopped cleanly")
