"""`RecordedAlerts`: an `AlertSink` that keeps every alert it is told, for assertions."""

from __future__ import annotations

import threading

from storyteller_daemon.alerts.sink import Alert, Severity


class RecordedAlerts:
    """Keeps each alert as an `Alert` (its key defaulting to its kind), in order, and the
    thread each was told on (`threads`, the same order)."""

    def __init__(self) -> None:
        self.alerts: list[Alert] = []
        self.threads: list[int] = []

    def alert(
        self,
        kind: str,
        title: str,
        detail: str = "",
        *,
        severity: Severity = "error",
        key: str | None = None,
    ) -> None:
        """Record one alert."""
        self.alerts.append(Alert(kind, title, detail, severity, key or kind))
        self.threads.append(threading.get_ident())

    @property
    def kinds(self) -> list[str]:
        """The alerts' kinds, in order."""
        return [a.kind for a in self.alerts]

    @property
    def keys(self) -> list[str]:
        """The alerts' keys, in order."""
        return [a.key for a in self.alerts]
