"""``storyteller run``: the daemon, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated

import typer

from storyteller_daemon.cli.common import run_async, state

if TYPE_CHECKING:
    from storyteller_daemon.alerts import Alerts
    from storyteller_daemon.config import LoggingConfig


_SYSLOG_PRIORITY = {
    logging.CRITICAL: 2,
    logging.ERROR: 3,
    logging.WARNING: 4,
    logging.INFO: 6,
    logging.DEBUG: 7,
}


PLAIN_FORMAT = "%(levelname)s %(name)s: %(message)s"


class JournalFormatter(logging.Formatter):
    """Log lines for journald: each line starts with its syslog priority (``<3>`` for errors),
    so ``journalctl -p err`` finds them; journald adds the time itself.

    Args:
        inner: what each record becomes before the prefix (default: level, logger, message).
    """

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self._inner = inner or logging.Formatter(PLAIN_FORMAT)

    def format(self, record: logging.LogRecord) -> str:
        priority = next(
            (p for level, p in sorted(_SYSLOG_PRIORITY.items()) if record.levelno <= level), 2
        )
        # A traceback's lines carry the priority too, or journald files them as notices.
        return "\n".join(f"<{priority}>{line}" for line in self._inner.format(record).splitlines())


def json_formatter(*, timestamp: bool = True) -> logging.Formatter:
    """One JSON object per line: level, logger, message (a traceback in ``exc_info``) and,
    unless journald adds its own, the time."""
    from pythonjsonlogger.json import JsonFormatter

    return JsonFormatter(
        ["levelname", "name", "message"],
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp="time" if timestamp else False,
    )


def configure_logging(cfg: LoggingConfig, environ: Mapping[str, str] = os.environ) -> None:
    """Log lines on stderr, plain or JSON (``[logging] format``): with syslog priorities under
    journald (``JOURNAL_STREAM`` set), else timestamped."""
    handler = logging.StreamHandler()
    journald = bool(environ.get("JOURNAL_STREAM"))
    formatter: logging.Formatter
    if cfg.format == "json":
        formatter = json_formatter(timestamp=not journald)
    else:
        formatter = logging.Formatter(PLAIN_FORMAT if journald else f"%(asctime)s {PLAIN_FORMAT}")
    handler.setFormatter(JournalFormatter(formatter) if journald else formatter)
    logging.basicConfig(level=cfg.level, handlers=[handler], force=True)
    # Third-party chatter (HTTP request lines) stays out unless debugging.
    # SQL logging at DEBUG would write statement parameters (run records hold player text).
    for noisy in ("httpx", "httpx2", "openai", "aiosqlite", "sqlalchemy", "alembic"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(cfg.level)))


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
    from storyteller_daemon.alerts.crash_loop import check_crash_loop
    from storyteller_daemon.app import build_alerts, build_runtime, start_history
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
        await runtime.close()
    log.info("stopped cleanly")
