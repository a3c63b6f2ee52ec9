"""``storyteller run``: the daemon, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import typer

from storyteller_daemon.cli.common import run_async, state
from storyteller_daemon.config import LoggingConfig


def configure_logging(cfg: LoggingConfig) -> None:
    """Plain, timestamped log lines on stderr (journald adds its own metadata)."""
    logging.basicConfig(
        level=cfg.level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    # Third-party chatter (HTTP request lines) stays out unless debugging.
    for noisy in ("httpx", "httpx2", "openai", "apscheduler"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(cfg.level)))


@run_async
async def run(
    ctx: typer.Context,
    seconds: Annotated[
        float | None,
        typer.Option(help="Stop after this many seconds (default: run until signalled).", min=0),
    ] = None,
) -> None:
    """Run the storyteller daemon against the configured world until SIGINT/SIGTERM."""
    from storyteller_daemon.app import build_runtime
    from storyteller_daemon.runtime.daemon import stop_on_signals

    cfg = state(ctx).config()
    configure_logging(cfg.logging)
    runtime = await build_runtime(cfg)
    log = logging.getLogger("storyteller")
    stop = asyncio.Event()
    try:
        with stop_on_signals(stop):
            log.info("model: %s; world: %s", runtime.choice.description, cfg.world.kind)
            timer = None
            if seconds is not None:
                timer = asyncio.get_running_loop().call_later(seconds, stop.set)
            await runtime.run(stop)
            if timer is not None:
                timer.cancel()
    finally:
        await runtime.close()
    log.info("stopped cleanly")
