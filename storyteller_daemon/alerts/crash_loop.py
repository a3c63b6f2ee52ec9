"""Crash-loop detection: the daemon records each start and alerts when starts come too fast.

systemd restarts a failed service after ``RestartSec``, so a daemon that dies during start-up or
soon after keeps coming back without anyone noticing. Each start appends its time to a small
JSON file (under systemd's ``StateDirectory``); three starts within five minutes raise an alert
at start-up. Problems with the file are logged and otherwise ignored: detection is best effort.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from storyteller_daemon.alerts.sink import AlertSink

log = logging.getLogger(__name__)

CRASH_LOOP_STARTS = 3
CRASH_LOOP_WINDOW = timedelta(minutes=5)
_KEPT = 20  # starts kept in the file; enough for the window, small enough to rewrite each time


@dataclass(frozen=True)
class StartHistory:
    """Start times recorded in one file."""

    path: Path

    def read(self) -> list[datetime]:
        """Recorded start times, oldest first; unreadable entries are skipped."""
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("cannot read the start history %s (%s); starting afresh", self.path, exc)
            return []
        starts = []
        for value in raw if isinstance(raw, list) else []:
            try:
                stamp = datetime.fromisoformat(value)
            except (TypeError, ValueError):
                continue
            if stamp.tzinfo is not None:
                starts.append(stamp)
        return sorted(starts)

    def record(self, now: datetime) -> list[datetime]:
        """Append `now` and return the history including it (rewritten atomically)."""
        starts = [s for s in self.read() if s <= now][-(_KEPT - 1) :] + [now]
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_text(json.dumps([s.isoformat() for s in starts]), encoding="utf-8")
            os.replace(temporary, self.path)
        except OSError as exc:
            log.warning("cannot write the start history %s (%s)", self.path, exc)
        return starts


def recent_starts(starts: list[datetime], now: datetime, window: timedelta) -> int:
    """How many of `starts` fall within `window` before `now` (inclusive)."""
    return sum(1 for s in starts if now - window <= s <= now)


def check_crash_loop(
    history: StartHistory,
    now: datetime,
    sink: AlertSink,
    *,
    starts: int = CRASH_LOOP_STARTS,
    window: timedelta = CRASH_LOOP_WINDOW,
) -> bool:
    """Record this start; alert and return True when it makes `starts` within `window`."""
    count = recent_starts(history.record(now), now, window)
    if count < starts:
        return False
    minutes = round(window.total_seconds() / 60)
    sink.alert(
        "crash_loop",
        f"The storyteller daemon has started {count} times in the last {minutes} min",
        "It keeps failing and being restarted by systemd. Read the errors before each start with "
        "`journalctl -u storyteller --since '-15 min'`, fix the cause, then "
        "`systemctl reset-failed storyteller` if systemd has given up.",
        severity="critical",
        key="crash_loop",
    )
    return True
