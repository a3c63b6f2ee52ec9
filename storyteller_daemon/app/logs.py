"""The daemon's log lines on stderr: plain or JSON, with syslog priorities under journald."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
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
