"""The alert seam: what the daemon tells its admins, and the sinks that carry it.

Any part of the daemon can raise an alert through an `AlertSink`::

    sink.alert(
        "budget",
        "Harbour Watch spent 80% of its daily budget",
        "USD 4.00 of 5.00 since 00:00 UTC.",
        severity="warning",
        key="budget:3:day",
    )

`alert` never blocks and never raises: a broken alert channel must not hurt the daemon. Call it
from the event loop's thread (errors logged by other threads are handed over by the log
forwarder). Alerts
with the same `key` are one problem happening again; sinks that post somewhere (Discord) use the
key to de-duplicate and rate-limit, and the log sink writes every occurrence.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

Severity = Literal["info", "warning", "error", "critical"]

LOG_LEVELS: dict[Severity, int] = {
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}

log = logging.getLogger(__name__)


def describe_period(seconds: float) -> str:
    """``10 min``, ``1 h``, ``45 s``: a period as an alert shows it."""
    if seconds >= 3600:
        return f"{round(seconds / 3600, 1):g} h"
    if seconds >= 60:
        return f"{round(seconds / 60)} min"
    return f"{max(1, round(seconds))} s"


@dataclass(frozen=True)
class Alert:
    """One alert, possibly standing for several occurrences of the same problem.

    Attributes:
        kind: what sort of problem (``log_error``, ``model_fatal``, ``queue_overflow``...).
        title: one line saying what happened.
        detail: what it means and what to do; may be empty.
        severity: how urgent.
        key: occurrences with the same key are the same problem.
        count: how many occurrences this alert reports.
        period_seconds: the period the occurrences fell in (0 for a single one).
    """

    kind: str
    title: str
    detail: str
    severity: Severity
    key: str
    count: int = 1
    period_seconds: float = 0.0

    @property
    def headline(self) -> str:
        """The title, with the repeat count when there was more than one occurrence."""
        if self.count <= 1:
            return self.title
        return f"{self.title} (×{self.count} in the last {describe_period(self.period_seconds)})"


class AlertSink(Protocol):
    """Somewhere alerts go. Implementations return at once and never raise."""

    def alert(
        self,
        kind: str,
        title: str,
        detail: str = "",
        *,
        severity: Severity = "error",
        key: str | None = None,
    ) -> None:
        """Report a problem; `key` defaults to `kind`."""
        ...


class LogAlertSink:
    """Writes every alert to the log at the level of its severity."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger("storyteller_daemon.alerts.log")

    def alert(
        self,
        kind: str,
        title: str,
        detail: str = "",
        *,
        severity: Severity = "error",
        key: str | None = None,
    ) -> None:
        """Log ``alert [kind]: title — detail``."""
        try:
            suffix = f" — {detail}" if detail else ""
            self._log.log(
                LOG_LEVELS.get(severity, logging.ERROR), "alert [%s]: %s%s", kind, title, suffix
            )
        except Exception:  # logging failures must not reach the caller either
            return


class FanOutSink:
    """Hands each alert to several sinks; one failing sink does not stop the others."""

    def __init__(self, sinks: Iterable[AlertSink]) -> None:
        self.sinks = tuple(sinks)

    def alert(
        self,
        kind: str,
        title: str,
        detail: str = "",
        *,
        severity: Severity = "error",
        key: str | None = None,
    ) -> None:
        """Pass the alert to every sink."""
        for sink in self.sinks:
            try:
                sink.alert(kind, title, detail, severity=severity, key=key)
            except Exception:  # a sink broke its promise; keep going, say so quietly
                log.warning("alert sink %s raised", type(sink).__name__, exc_info=True)
