"""Errors the daemon logs become alerts, so every ``log.error``/``log.exception`` reaches admins.

The handler sits on the root logger at ERROR. It forwards the formatted message and, for an
exception, only the exception's type: tracebacks and exception messages stay in the log. Records
that already describe an alert (from ``storyteller_daemon.alerts``) are not forwarded, and a call
can opt out with ``extra={"alert": False}``.

Occurrences of one log call share a key (logger name and message template), so a storm of the
same error is folded into one alert with a count.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Iterator

from storyteller_daemon.alerts.sanitise import exception_summary
from storyteller_daemon.alerts.sink import AlertSink

_ALERTS_LOGGER = "storyteller_daemon.alerts"
MAX_TITLE_CHARS = 200


class AlertingLogHandler(logging.Handler):
    """Forwards ERROR and CRITICAL log records to an `AlertSink`.

    Args:
        sink: where the alerts go.
        loop: the event loop the sink belongs to; records logged by other threads (database
            drivers, executors) are handed to it, because the sink's queue is not thread-safe.
    """

    def __init__(
        self,
        sink: AlertSink,
        level: int = logging.ERROR,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(level)
        self._sink = sink
        self._loop = loop
        self._loop_thread = threading.get_ident()
        self._busy = threading.local()

    def emit(self, record: logging.LogRecord) -> None:
        """Turn the record into an alert; never raises."""
        if record.name == _ALERTS_LOGGER or record.name.startswith(_ALERTS_LOGGER + "."):
            return
        if getattr(record, "alert", True) is False:
            return
        if self._loop is not None and threading.get_ident() != self._loop_thread:
            try:
                self._loop.call_soon_threadsafe(self._forward, record)
            except RuntimeError:  # the loop has closed; the record is in the log anyway
                pass
            return
        self._forward(record)

    def _forward(self, record: logging.LogRecord) -> None:
        if getattr(self._busy, "active", False):
            return
        self._busy.active = True  # a sink that logs an error must not loop back here
        try:
            message = _message_without_exception_text(record)
            title, _, rest = message.strip().partition("\n")
            if len(title) > MAX_TITLE_CHARS:
                title = title[: MAX_TITLE_CHARS - 1] + "…"
            detail = rest.strip()
            if record.exc_info and record.exc_info[0] is not None:
                detail = f"{detail}\n\n{exception_summary(record.exc_info[0])}".strip()
            template = record.msg if isinstance(record.msg, str) else message
            self._sink.alert(
                "log_error",
                title or f"error logged by {record.name}",
                detail,
                severity="critical" if record.levelno >= logging.CRITICAL else "error",
                key=f"log:{record.name}:{template}",
            )
        except Exception:  # the alert is best effort; the record itself is already logged
            return
        finally:
            self._busy.active = False


def _message_without_exception_text(record: logging.LogRecord) -> str:
    """The log message with any exception argument shown by its type only.

    Exception texts can carry connection strings, player text or model output; Discord gets the
    type, the log keeps the details.
    """
    args = record.args
    if isinstance(args, tuple) and any(isinstance(a, BaseException) for a in args):
        shown = tuple(type(a).__name__ if isinstance(a, BaseException) else a for a in args)
        try:
            return str(record.msg) % shown
        except (TypeError, ValueError):
            return str(record.msg)
    return record.getMessage()


@contextlib.contextmanager
def forwarding_errors(
    sink: AlertSink, logger: logging.Logger | None = None
) -> Iterator[AlertingLogHandler]:
    """Forward errors logged inside the block (by default on the root logger) to `sink`.

    Called inside a running event loop, records from other threads are passed to that loop.
    """
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    target = logger or logging.getLogger()
    handler = AlertingLogHandler(sink, loop=loop)
    target.addHandler(handler)
    try:
        yield handler
    finally:
        target.removeHandler(handler)
