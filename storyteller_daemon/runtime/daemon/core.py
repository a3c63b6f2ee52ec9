"""`Daemon`: the settings watch, the world pump and the invocations, with the lifecycle.

`Daemon.run` (in a cluster, once it has taken its first leases) loads the settings, starts the
pipeline, the world pump, the settings watch, the
heartbeats, the intake watchdog and reflection while idle in one task group, and on stop closes
intake, gives work in flight the drain deadline, cancels the rest, so no task outlives it. A
cluster daemon hands its storytellers over as it stops: those with no work in flight at once,
each of the others as its pass or turn ends, what is left at the hand-over deadline (cut off:
the next holder resumes it).
`stop_on_signals` turns SIGINT and SIGTERM into that stop."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterator, Sequence

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.storytellers import Heartbeat
from storyteller_daemon.runtime.daemon.intake_watch import IntakeWatch
from storyteller_daemon.runtime.daemon.invocations import Invocations
from storyteller_daemon.runtime.daemon.ports import (
    EventInbox,
    Forward,
    IdleWork,
    Leases,
    SettingsListener,
    SettingsSource,
    TurnRuns,
    WorkNotices,
)
from storyteller_daemon.runtime.daemon.settings_watch import SettingsWatch
from storyteller_daemon.runtime.daemon.shared_work import SharedWork
from storyteller_daemon.runtime.daemon.state import WorldStatus, log
from storyteller_daemon.runtime.daemon.world_pump import WorldPump
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.scheduling.heartbeats import HeartbeatScheduler
from world_adapter.errors import FatalStreamError, WorldAdapterError
from world_adapter.events import Cursor
from world_adapter.invocations import InvocationChannel
from world_adapter.protocol import WorldClient


class Daemon:
    """Owns the tasks that make up a running storyteller service.

    It builds its collaborators, the settings watch, the world pump and the invocations, from
    what it is given, runs them with the pipeline, the heartbeats and reflection while idle,
    and answers for them (readiness, the world's status, invocations).

    Args:
        settings: where the storytellers are read.
        world: the world followed.
        pipeline: where the world's events and invocations go.
        clock: the runtime's clock.
        reload_seconds: how often the settings are polled.
        drain_seconds: how long work in flight gets on stop.
        handover_seconds: a cluster daemon's deadline for work in flight on stop, when
            shorter than `drain_seconds` (None: `drain_seconds`): what it cuts off, the next
            holder of its storyteller resumes.
        retry_seconds: the delay before a failed stream or store is retried.
        alerts: where trouble is alerted.
        inbox: the durable event inbox of a world that can replay (None: none).
        world_key: the world's name in the inbox.
        inbox_keep: dispatched events the inbox keeps.
        intake_activity: the world stream's activity count, for the intake watchdog.
        stall_seconds: activity without stored events for this long is a stall.
        idle_work: reflection while idle (None: none).
        settings_listeners: told every storyteller on each settings (re)load.
        invocations: the world's channel for the game's invocations (None: none).
        turn_runs: where an invocation's run record is read for its outcome.
        leases: a cluster daemon's leases (None: alone, every storyteller is run here); on
            stop each is released once its storyteller has no work in flight, the rest at the
            drain deadline.
        followed: every storyteller of the game beyond those in `settings` (a cluster
            daemon follows all their rooms and routes the events it stores to each of them).
        cursor_key: the name the daemon's stream cursor is kept under (default `world_key`;
            each daemon of a cluster has its own).
        work_notices: word of work other daemons of a cluster stored for storytellers held
            here (None: alone).
        sweep_seconds: a cluster daemon looks this often for events stored and left by a
            daemon that died, and for work whose notice it missed.
        forwarder: a cluster daemon's forwarding of the game's invocations to the daemon
            running their storyteller, and answering of those forwarded here (None: alone).
    """

    def __init__(
        self,
        *,
        settings: SettingsSource,
        world: WorldClient,
        pipeline: Pipeline,
        clock: Clock,
        reload_seconds: float = 5.0,
        drain_seconds: float = 30.0,
        handover_seconds: float | None = None,
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
        leases: Leases | None = None,
        followed: SettingsSource | None = None,
        forwarder: Forward | None = None,
        cursor_key: str | None = None,
        work_notices: WorkNotices | None = None,
        sweep_seconds: float = 10.0,
    ) -> None:
        self.pipeline = pipeline
        self.leases = leases
        self._inbox = inbox
        self._drain_seconds = drain_seconds
        self._handover_seconds = handover_seconds
        self.idle_work = idle_work
        """Reflection while idle, run as one of the daemon's tasks (None: none)."""
        self.ready = asyncio.Event()
        self.status = WorldStatus(alerts)
        self.heartbeats = HeartbeatScheduler(self._fire_heartbeat, clock)
        self.watch = SettingsWatch(
            settings=settings,
            world=world,
            pipeline=pipeline,
            heartbeats=self.heartbeats,
            listeners=settings_listeners,
            clock=clock,
            reload_seconds=reload_seconds,
            status=self.status,
            followed=followed,
        )
        self.pump = WorldPump(
            world=world,
            pipeline=pipeline,
            watch=self.watch,
            status=self.status,
            clock=clock,
            retry_seconds=retry_seconds,
            alerts=alerts,
            inbox=inbox,
            world_key=world_key,
            inbox_keep=inbox_keep,
            intake=IntakeWatch(intake_activity, stall_seconds) if intake_activity else None,
            cursor_key=cursor_key,
        )
        self.shared_work = (
            SharedWork(work_notices, self.pump, pipeline, clock, sweep_seconds)
            if work_notices is not None
            else None
        )
        self.invocations = Invocations(
            pipeline=pipeline,
            ready=self.ready,
            channel=invocations,
            turn_runs=turn_runs,
            forwarder=forwarder,
        )
        self.forwarder = forwarder
        self.reload = self.watch.reload
        self.wait_polls = self.watch.wait_polls
        self.wait_cursor = self.pump.wait_cursor
        self.invoke = self.invocations.invoke
        self.find_storyteller = self.invocations.find_storyteller
        self.answer_invocation = self.invocations.answer_invocation

    async def _fire_heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> None:
        await self.pipeline.heartbeat(storyteller_id, heartbeat)

    @property
    def world_status(self) -> str:
        """How the daemon stands with the world (see `WorldStatus.state`)."""
        return self.status.state

    @property
    def failure(self) -> WorldAdapterError | None:
        """Why the world refused the daemon, if it did (`run` raises it after draining)."""
        return self.status.failure

    @property
    def cursor(self) -> Cursor | None:
        """The cursor of the last world event stored or dispatched."""
        return self.pump.cursor

    @property
    def stream_gaps(self) -> int:
        """Times the world could not replay from the daemon's cursor, so events were lost."""
        return self.pump.stream_gaps

    @property
    def polls(self) -> int:
        """Completed settings polls."""
        return self.watch.polls

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set, then drain and return.

        Raises:
            FatalStreamError: After draining, if the world refused the daemon.
        """
        self.status.stops(stop)
        invoked = self.invocations.serve()
        if self._inbox is None:
            # Work from a previous run of a world that cannot replay (the embedded sim world
            # starts over at the same cursors) cannot be matched to this run's events.
            await self.pipeline.discard_unreplayable()
        if self.leases is not None:
            await self.leases.start()
        try:
            await self._run(stop, invoked=invoked)
        finally:
            if self.leases is not None:
                await self.leases.stop()

    async def _run(self, stop: asyncio.Event, *, invoked: bool) -> None:
        try:
            await self.reload(force=True)
        except FatalStreamError as exc:
            self.status.refused(exc)
            raise
        except WorldAdapterError as exc:  # a game that is down: the settings poll retries
            log.warning("the world did not answer at start (%s); retrying while running", exc)
        try:
            async with asyncio.TaskGroup() as group:
                pipeline = group.create_task(self.pipeline.run(), name="pipeline")
                keeper = (
                    group.create_task(self.leases.run(), name="leases")
                    if self.leases is not None
                    else None
                )
                background = [
                    group.create_task(self.pump.run(), name="world-pump"),
                    group.create_task(self.watch.run(), name="settings-watch"),
                    group.create_task(self.heartbeats.run(), name="heartbeats"),
                ]
                if self.pump.intake is not None:
                    background.append(group.create_task(self.pump.watch_intake(), name="intake"))
                if self.idle_work is not None:
                    background.append(group.create_task(self.idle_work.run(), name="reflection"))
                if self.shared_work is not None:
                    background.append(group.create_task(self.shared_work.run(), name="work"))
                if invoked:
                    background.append(
                        group.create_task(self.invocations.send_outcomes(), name="outcomes")
                    )
                if invoked and self.forwarder is not None:
                    forwarded = self.invocations.serve_forwarded()
                    background.append(group.create_task(forwarded, name="forwarded"))
                self.ready.set()
                log.info(
                    "ready: %d storytellers, %d watched rooms; SIGTERM or SIGINT stops",
                    len(self.pipeline.router.storytellers),
                    len(self.watch.cells),
                )
                await stop.wait()
                log.info("stopping: no new events; draining queued turns")
                self.pump.close_intake()
                self.pipeline.stop_intake()
                for task in background:
                    task.cancel()
                deadline, what = self._stop_deadline()
                try:
                    async with asyncio.timeout(deadline):
                        await self.pipeline.drain(
                            self.leases.hand_over if self.leases is not None else None
                        )
                except TimeoutError:
                    log.warning(
                        "%s deadline of %ss passed; cutting off the passes and turns of %d "
                        "storytellers%s",
                        what,
                        f"{deadline:g}",
                        len(self.pipeline.working()),
                        " (their next holders resume them)" if self.leases is not None else "",
                    )
                pipeline.cancel()
                if keeper is not None:
                    keeper.cancel()
            if self.failure is not None:
                raise self.failure
        finally:
            self.ready.clear()

    def _stop_deadline(self) -> tuple[float, str]:
        """How long work in flight gets on stop, and the deadline's name: a cluster daemon's
        hand-over deadline, when shorter than the drain's."""
        handover = self._handover_seconds
        if self.leases is not None and handover is not None and handover < self._drain_seconds:
            return handover, "hand-over"
        return self._drain_seconds, "drain"


@contextlib.contextmanager
def stop_on_signals(stop: asyncio.Event) -> Iterator[asyncio.Event]:
    """Set `stop` on SIGINT or SIGTERM while inside the block."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)
    for sig in signals:
        loop.add_signal_handler(sig, stop.set)
    try:
        yield stop
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
