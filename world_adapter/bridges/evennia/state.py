"""The bridge's process-wide state: one event log per Server process, created on first use.

The Server process is the unit of an epoch: ``evennia reload`` and ``evennia start`` begin a new
one. Room taps append here whether or not a daemon is connected.
"""

from __future__ import annotations

from django.conf import settings

from .eventlog import EventLog

DEFAULT_REPLAY_EVENTS = 10_000

_log: EventLog | None = None


def event_log() -> EventLog:
    """The Server process's event log (``STORYTELLER_BRIDGE_REPLAY_EVENTS`` events kept)."""
    global _log
    if _log is None:
        capacity = int(getattr(settings, "STORYTELLER_BRIDGE_REPLAY_EVENTS", DEFAULT_REPLAY_EVENTS))
        _log = EventLog(capacity)
    return _log
