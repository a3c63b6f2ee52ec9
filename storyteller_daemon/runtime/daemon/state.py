"""The state the daemon's parts share, and the one step they all may take.

`DaemonState` is the base of the settings watch, the world pump and `Daemon`: it holds the
collaborators, the routing and stream position, the status shown by ``/healthz`` and the
conditions tests and benchmarks wait on, and reacts to a world that refuses the daemon, which
the settings poll, the stream and the start may each be the first to hear.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.settings import Heartbeat
from storyteller_daemon.runtime.daemon.intake_watch import IntakeWatch
from storyteller_daemon.runtime.daemon.ports import (
    EventInbox,
    IdleWork,
    SettingsListener,
    SettingsSource,
    TurnRuns,
)
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.scheduling.heartbeats import HeartbeatScheduler
from world_adapter.errors import FatalStreamError, WorldAdapterError
from world_adapter.events import Cursor
from world_adapter.invocations import InvocationChannel
from world_adapter.protocol import WorldClient

log = logging.getLogger(__package__)
"""The daemon's one logger, named after the package: every part logs under that name."""


@dataclass(frozen=True)
class OpenInvocation:
    """A game's accepted invocation whose outcome the game has not been sent yet."""

    request_id: str
    storyteller_id: int
    source: str


class DaemonState:
    """The collaborators, routing, stream position and status the daemon's parts work on."""

    def __init__(
        self,
        *,
        settings: SettingsSource,
        world: WorldClient,
        pipeline: Pipeline,
        clock: Clock,
        reload_seconds: float = 5.0,
        drain_seconds: float = 30.0,
        retry_seconds: float = 5.0,
        alerts: AlertSink | None = None,
        inbox: EventInbox | None = None,
        world_key: str = "world",
        inbox_keep: int = 10_000,
        intake_activity: Callable[[], int] | None = None,
        stall_seconds: float = 120.0,
        idle_work: IdleWork | None = None,
        settings_listeners: Sequence[SettingsListener] = (),
        invocations: InvocationChannel | None = None,
        turn_runs: TurnRuns | None = None,
    ) -> None:
        self._settings = settings
        self._settings_listeners = tuple(settings_listeners)
        self._inbox = inbox
        self._world_key = world_key
        self._inbox_keep = inbox_keep
        self._restored = inbox is None
        self._stored_since_prune = 0
        self._intake_open = True
        self._stop: asyncio.Event | None = None
        self.failure: WorldAdapterError | None = None
        """Why the world refused the daemon, if it did (`run` raises it after draining)."""
        self._alerts = alerts
        self._world = world
        self.pipeline = pipeline
        self._clock = clock
        self._reload_seconds = reload_seconds
        self._drain_seconds = drain_seconds
        self._retry_seconds = retry_seconds
        self.heartbeats = HeartbeatScheduler(self._fire_heartbeat, clock)
        self.idle_work = idle_work
        """Reflection while idle, run as one of the daemon's tasks (None: none)."""
        self.cursor: Cursor | None = None
        self._revisions: dict[int, int] | None = None
        self._zones: Mapping[int, frozenset[int]] | None = None
        self._cells: frozenset[int] = frozenset()
        self._resubscribe = asyncio.Event()
        self._reloading = asyncio.Lock()
        """One settings reload at a time: the poll's and one asked for after an admin change."""
        self.ready = asyncio.Event()
        self.world_status = "starting"
        """``starting``, ``subscribed``, ``reconnecting``, ``stalled`` (the game sends but
        nothing is stored; see `IntakeWatch`) or ``refused`` (shown by /healthz)."""
        self.intake = IntakeWatch(intake_activity, stall_seconds) if intake_activity else None
        """The intake watchdog (None for a world without stream counters, like the sim)."""
        self.stream_gaps = 0
        """Times the world could not replay from our cursor, so events were lost."""
        self.polls = 0
        """Completed settings polls (tests wait on this instead of sleeping)."""
        self._polled = asyncio.Condition()
        self._took = asyncio.Condition()
        self._invocation_channel = invocations
        """The world's channel for the game's invocations (None: the world sends none)."""
        self._turn_runs = turn_runs
        self._open_invocations: dict[str, OpenInvocation] = {}
        """Turn key → an accepted invocation waiting for its outcome to be sent."""
        self._ended_turns: asyncio.Queue[str] = asyncio.Queue()
        """Turn keys of open invocations whose turns ended (one per invocation at most)."""

    async def _fire_heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> None:
        await self.pipeline.heartbeat(storyteller_id, heartbeat)

    def _refused(self, error: FatalStreamError) -> None:
        """The world refused the daemon (token, protocol version): stop, and say why."""
        if self.failure is None:
            self.world_status = "refused"
            self.failure = error
            # Alerted directly below with the fix; the log line is not forwarded a second time.
            log.error(
                "the world refused the daemon, which stops: %s", error, extra={"alert": False}
            )
            if self._alerts is not None:
                self._alerts.alert(
                    "world_refused",
                    "The game refused the storyteller daemon, which has stopped",
                    f"{error}. Check that the bridge token (world.token_env) matches the game's "
                    "and that both sides speak the same protocol version; the daemon does not "
                    "retry a refusal.",
                    severity="error",
                    key="world_refused",
                )
        if self._stop is not None:
            self._stop.set()
