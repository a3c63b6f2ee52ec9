"""De-duplication and rate limiting per alert key.

The first alert for a key goes out at once and opens a quiet period (10 minutes by default; an
hour for a model that refuses requests). Repeats inside the period are only counted. When the
period ends with repeats pending, one summary goes out, "… (×37 in the last 10 min)", and a new
period opens; a period that ends quietly is forgotten. An error storm therefore costs one alert
per period, however long it lasts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from storyteller_daemon.alerts.sink import Alert
from storyteller_daemon.clock import Clock

DEFAULT_PERIOD_SECONDS = 600.0
PERIODS_BY_KIND: Mapping[str, float] = {
    # Every turn of a storyteller whose model is refused fails the same way; once an hour is
    # enough to keep the problem visible until someone fixes the key or the model name.
    "model_fatal": 3600.0,
}


@dataclass
class _Period:
    opened: float
    length: float
    pending: int
    last: Alert


class Throttle:
    """Decides which alerts to send now and which to fold into a later summary.

    Args:
        clock: the clock quiet periods are measured on.
        period_seconds: the quiet period of kinds not listed in `periods`.
        periods: quiet period by alert kind.
    """

    def __init__(
        self,
        clock: Clock,
        period_seconds: float = DEFAULT_PERIOD_SECONDS,
        periods: Mapping[str, float] = PERIODS_BY_KIND,
    ) -> None:
        if not period_seconds > 0:
            raise ValueError(f"period_seconds must be positive, got {period_seconds!r}")
        self._clock = clock
        self._default = period_seconds
        self._periods = dict(periods)
        self._open: dict[str, _Period] = {}
        self.suppressed = 0
        """Occurrences folded into a summary instead of being sent on their own."""

    def period_for(self, kind: str) -> float:
        """The quiet period of an alert kind, in seconds."""
        return self._periods.get(kind, self._default)

    def admit(self, alert: Alert) -> Alert | None:
        """The alert to send now, or None when it falls in its key's quiet period."""
        now = self._clock.monotonic()
        period = self._open.get(alert.key)
        if period is not None and now - period.opened < period.length:
            period.pending += 1
            period.last = alert
            self.suppressed += 1
            return None
        pending = period.pending if period is not None else 0
        length = self.period_for(alert.kind)
        self._open[alert.key] = _Period(opened=now, length=length, pending=0, last=alert)
        if pending:
            return replace(alert, count=pending + 1, period_seconds=length)
        return alert

    def flush(self, *, force: bool = False) -> list[Alert]:
        """Summaries of the periods that ended with repeats pending; quiet periods are dropped.

        With `force` (at shutdown), every period with repeats pending is summarised now.
        """
        now = self._clock.monotonic()
        due: list[Alert] = []
        for key, period in list(self._open.items()):
            elapsed = now - period.opened
            if elapsed < period.length and not (force and period.pending):
                continue
            if period.pending:
                covered = min(elapsed, period.length)
                due.append(replace(period.last, count=period.pending, period_seconds=covered))
                period.opened, period.pending = now, 0
            else:
                del self._open[key]
        return due

    @property
    def tracked_keys(self) -> int:
        """Keys with an open quiet period."""
        return len(self._open)
