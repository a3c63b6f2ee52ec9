"""The bridge's process-wide state: the event log and the prog outcomes, created on first use.

Both are kept on disk in ``STORYTELLER_BRIDGE_STATE_DIR`` (default ``server/storyteller`` in the
game directory), so ``evennia reload`` and restarts continue the same epoch with the same held
events and remember the idempotency keys of recent prog runs (see `journal`). Room taps append
here whether or not a daemon is connected.
"""

from __future__ import annotations

import os

from django.conf import settings

from .eventlog import EventLog
from .journal import EventJournal, KeyJournal
from .registry import ResultStore

DEFAULT_REPLAY_EVENTS = 10_000
DEFAULT_OUTCOME_SECONDS = 3600.0

_log: EventLog | None = None
_outcomes: ResultStore | None = None


def state_dir() -> str:
    """Where the journals live."""
    default = os.path.join(settings.GAME_DIR, "server", "storyteller")
    return str(getattr(settings, "STORYTELLER_BRIDGE_STATE_DIR", default))


def event_log() -> EventLog:
    """The event log (``STORYTELLER_BRIDGE_REPLAY_EVENTS`` events kept), continuing the stream
    stored by the Server before this one when there is one."""
    global _log
    if _log is None:
        capacity = int(getattr(settings, "STORYTELLER_BRIDGE_REPLAY_EVENTS", DEFAULT_REPLAY_EVENTS))
        sync = bool(getattr(settings, "STORYTELLER_BRIDGE_SYNC_EVENTS", True))
        _log = EventLog.kept_in(EventJournal(state_dir(), capacity, sync=sync), capacity)
    return _log


def prog_outcomes() -> ResultStore:
    """Outcomes of successful prog runs by idempotency key, kept at least
    ``STORYTELLER_BRIDGE_OUTCOME_SECONDS`` (an hour) across reloads and restarts."""
    global _outcomes
    if _outcomes is None:
        seconds = float(
            getattr(settings, "STORYTELLER_BRIDGE_OUTCOME_SECONDS", DEFAULT_OUTCOME_SECONDS)
        )
        _outcomes = ResultStore(keep_seconds=seconds, journal=KeyJournal(state_dir()))
    return _outcomes
