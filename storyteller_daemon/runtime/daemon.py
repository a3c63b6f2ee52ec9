"""The daemon's lifecycle: load settings, follow the world, run heartbeats, shut down cleanly.

Changes made with the CLI while the daemon runs take effect without a restart: every storyteller
row carries a revision that grows on each change, and the daemon compares revisions (and the
world's zone membership) every ``reload_seconds``; on a difference it reloads the settings,
re-routes, re-syncs heartbeats and, if the set of watched rooms changed, resubscribes to the
world from its last cursor.

Direct invocation (`Daemon.invoke`, FutureMUD's ``InvokeStorytellerAttention``) names a
storyteller by id or case-insensitive name in the current routing table and answers whether the
turn was queued, and if not, why.

With an event inbox (a bridged game), every batch of events is stored and the stream cursor
advanced in one transaction before the events are dispatched, and marked afterwards; on start the
daemon resumes from the stored cursor and first dispatches what was stored but never dispatched.
A game that refuses the daemon (bad token, protocol version) stops it with that error.

Every event a storyteller hears becomes work in its durable backlog (see `pipeline`).
Shutdown (SIGINT/SIGTERM): intake stops, heartbeats stop, a judging pass or turn in flight gets
``drain_seconds`` to finish, then is cancelled; everything else stays in the backlog for the next
start. No task outlives `run()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.settings import Heartbeat, Storyteller
from storyteller_daemon.errors import StorageError
from storyteller_daemon.runtime.heartbeats import HeartbeatScheduler
from storyteller_daemon.runtime.intake_watch import Change, IntakeWatch
from storyteller_daemon.runtime.pipeline import Pipeline
from world_adapter.bridge.batches import EventBatches
from world_adapter.bridge.errors import StreamGap
from world_adapter.errors import CursorExpired, FatalStreamError, WorldAdapterError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)


class SettingsSource(Protocol):
    """Where storyteller settings come from (the storyteller repository)."""

    async def list(self) -> list[Storyteller]:
        """Every storyteller."""
        ...

    async def revisions(self) -> dict[int, int]:
        """Id → revision, cheap to poll."""
        ...


class EventInbox(Protocol):
    """Durable intake of world events (the inbox repository)."""

    async def store_events(
        self, world: str, events: Sequence[WorldEvent]
    ) -> Sequence[tuple[int, WorldEvent]]:
        """Store new events and advance the cursor in one transaction; return the new ones."""
        ...

    async def cursor(self, world: str) -> Cursor | None:
        """The stored cursor."""
        ...

    async def pending(self, world: str) -> Sequence[tuple[int, WorldEvent]]:
        """Stored events not yet dispatched, oldest first."""
        ...

    async def mark_dispatched(self, ids: Sequence[int]) -> None:
        """Mark stored events as dispatched."""
        ...

    async def prune(self, world: str, *, keep: int) -> int:
        """Delete dispatched events except the newest `keep`."""
        ...


INBOX_BATCH = 500
"""Events stored per transaction at most."""


@dataclass(frozen=True)
class InvocationResult:
    """The answer to a direct invocation.

    Attributes:
        accepted: True once the turn is queued (it runs later; the result does not wait).
        reason: why it was refused, or ``queued``.
        storyteller_id: the storyteller the reference named, when it named one.
    """

    accepted: bool
    reason: str
    storyteller_id: int | None = None


class Daemon:
    """Owns the tasks that make up a running storyteller service."""

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
    ) -> None:
        self._settings = settings
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
        self.cursor: Cursor | None = None
        self._revisions: dict[int, int] | None = None
        self._zones: Mapping[int, frozenset[int]] | None = None
        self._cells: frozenset[int] = frozenset()
        self._resubscribe = asyncio.Event()
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

    async def _fire_heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> None:
        await self.pipeline.heartbeat(storyteller_id, heartbeat)

    # ------------------------------------------------------------------ settings

    async def reload(self, *, force: bool = False) -> bool:
        """Pick up changed settings or zones; True when something changed."""
        revisions = await self._settings.revisions()
        zones = await self._world.zones()
        if not force and revisions == self._revisions and zones == self._zones:
            return False
        storytellers = await self._settings.list()
        known = {s.id for s in self.pipeline.router.storytellers}
        self.pipeline.router.update(storytellers, zones)
        for gone in known - {s.id for s in storytellers}:
            if gone is not None:
                self.pipeline.forget(gone)
        self.heartbeats.sync(storytellers)
        self._revisions, self._zones = revisions, zones
        cells = self.pipeline.router.watched_cells()
        if cells != self._cells:
            self._cells = cells
            self._resubscribe.set()
        if not force:
            log.info(
                "settings reloaded: %d storytellers, %d watched rooms",
                len(storytellers),
                len(cells),
            )
        return True

    def find_storyteller(self, ref: str | int) -> Storyteller | None:
        """A storyteller by id, or by name ignoring case (a text of digits is an id)."""
        if isinstance(ref, bool):  # a bool is an int to Python, but never an id
            return None
        text = str(ref).strip()
        if isinstance(ref, int) or text.isdigit():
            return self.pipeline.router.storyteller(int(text))
        wanted = text.casefold()
        return next(
            (s for s in self.pipeline.router.storytellers if s.name.casefold() == wanted), None
        )

    async def invoke(self, storyteller_ref: str | int, text: str) -> InvocationResult:
        """Store a direct-invocation turn for a storyteller, with the game's text.

        Args:
            storyteller_ref: the storyteller's id, or its name in any case.
            text: what the game wants the storyteller to attend to (trimmed).

        Returns:
            Accepted once the turn is queued. Refused, with the reason, when the daemon is not
            running, the storyteller is unknown or paused, the text is blank, no model is
            configured, or the storyteller's queue is full.
        """
        if not self.ready.is_set():
            return InvocationResult(False, "the daemon is not running")
        storyteller = self.find_storyteller(storyteller_ref)
        if storyteller is None:
            return InvocationResult(False, f"no storyteller '{storyteller_ref}'")
        refusal = await self.pipeline.submit_direct(storyteller, text)
        return InvocationResult(refusal is None, refusal or "queued", storyteller.id)

    async def _watch_settings(self) -> None:
        while True:
            await self._clock.sleep(self._reload_seconds)
            try:
                await self.reload()
            except FatalStreamError as exc:
                self._refused(exc)
                return
            except Exception:  # a failed poll is retried at the next interval
                log.exception("could not reload settings")
            async with self._polled:
                self.polls += 1
                self._polled.notify_all()

    async def wait_polls(self, count: int) -> None:
        """Return once `count` settings polls have completed."""
        async with self._polled:
            await self._polled.wait_for(lambda: self.polls >= count)

    # ------------------------------------------------------------------ world stream

    async def _consume(self, cells: frozenset[int]) -> None:
        if not self._restored:
            await self._restore()
        self.world_status = "stalled" if self.intake and self.intake.stalled else "subscribed"
        self._progressed()
        stream = self._world.subscribe(cells, self.cursor)
        async with EventBatches(stream, INBOX_BATCH) as batches:
            while (batch := await batches.next()) is not None:
                await complete_even_if_cancelled(self._store_and_dispatch(batch))

    async def _restore(self) -> None:
        """Resume from the stored cursor; dispatch what was stored but never dispatched."""
        assert self._inbox is not None
        self.cursor = await self._inbox.cursor(self._world_key)
        pending = await self._inbox.pending(self._world_key)
        if pending:
            log.info("dispatching %d stored world events from before the restart", len(pending))
        await self._dispatch(pending)
        self._restored = True

    async def _store_and_dispatch(self, events: Sequence[WorldEvent]) -> None:
        if self._inbox is None:  # a world that cannot replay: its events go straight in
            self.cursor = events[-1].cursor
            if self._intake_open:
                await self.pipeline.accept(events)
        else:
            stored = await self._inbox.store_events(self._world_key, events)
            self.cursor = events[-1].cursor
            await self._dispatch(stored)
        self._progressed()
        async with self._took:
            self._took.notify_all()

    def _progressed(self) -> None:
        """Tell the watchdog where intake stands; a stall it had seen is over once events move."""
        if self.intake is None:
            return
        if self.intake.progress(self.cursor, self._clock.monotonic()) is Change.RESUMED:
            if self.world_status == "stalled":
                self.world_status = "subscribed"
            log.warning("world intake moves again: events are stored from %s on", self.cursor)

    async def _watch_intake(self) -> None:
        """Look for a stalled intake four times per `stall_seconds`, while running."""
        assert self.intake is not None
        while True:
            await self._clock.sleep(self.intake.stall_seconds / 4)
            if self.world_status != "subscribed":
                continue  # reconnecting, refused: said elsewhere
            if self.intake.look(self._clock.monotonic()) is Change.STALLED:
                self._report_stall()

    def _report_stall(self) -> None:
        assert self.intake is not None and self.intake.stalled is not None
        stall = self.intake.stalled
        self.world_status = "stalled"
        after = f"after {stall.cursor}" if stall.cursor else "since the daemon started"
        detail = (
            f"The game sent {stall.activity} frame(s) or reconnect(s) in {stall.seconds:.0f} s, "
            f"but no event was stored {after}: the stream is stuck, most likely on one frame "
            "the daemon cannot take that the game sends again after every reconnect. Look at the "
            "daemon's warnings about bad or oversize frames and at the game's bridge log; the "
            "game must cut or skip that event (docs/bridge-protocol.md, frame limits)."
        )
        log.error("world intake stalled: %s", detail, extra={"alert": False})
        if self._alerts is not None:
            self._alerts.alert(
                "intake_stalled",
                "World events are not being stored although the game is sending",
                detail,
                severity="error",
                key="intake_stalled",
            )

    async def wait_cursor(self, cursor: Cursor) -> None:
        """Return once the events up to `cursor` (of its epoch) are stored (benchmarks, tests)."""

        def reached() -> bool:
            mine = self.cursor
            return mine is not None and mine.epoch == cursor.epoch and mine.seq >= cursor.seq

        async with self._took:
            await self._took.wait_for(reached)

    async def _dispatch(self, stored: Sequence[tuple[int, WorldEvent]]) -> None:
        # Once intake has closed, stored events stay pending: the next start dispatches them.
        if not stored or not self._intake_open or self._inbox is None:
            return
        # The backlog stores the storytellers' work before the inbox marks the events, so a crash
        # in between dispatches them again, and the backlog skips what it already holds.
        await self.pipeline.accept([event for _, event in stored])
        await self._inbox.mark_dispatched([row_id for row_id, _ in stored])
        self._stored_since_prune += len(stored)
        if self._stored_since_prune >= self._inbox_keep // 10:
            self._stored_since_prune = 0
            await self._inbox.prune(self._world_key, keep=self._inbox_keep)

    async def _pump(self) -> None:
        """Follow the world's events, resubscribing when the watched rooms change."""
        while True:
            self._resubscribe.clear()
            consumer = asyncio.create_task(self._consume(self._cells))
            changed = asyncio.create_task(self._resubscribe.wait())
            try:
                await asyncio.wait({consumer, changed}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (consumer, changed):
                    task.cancel()
                await asyncio.gather(consumer, changed, return_exceptions=True)
            if consumer.cancelled() or not consumer.done():
                continue  # resubscribe with the new cells from the same cursor
            error = consumer.exception()
            if isinstance(error, CursorExpired):
                # A bridged game says where its stream goes on; the sim world only has "now".
                resume = error.resume_after if isinstance(error, StreamGap) else None
                log.warning(
                    "world cannot replay from %s; continuing from %s",
                    self.cursor,
                    resume or "live events",
                )
                self._report_gap()
                self.cursor = resume
            elif isinstance(error, FatalStreamError):
                self._refused(error)
                return
            elif isinstance(error, StorageError):
                self.world_status = "reconnecting"
                log.error(
                    "could not store world events (%s); retrying in %ss", error, self._retry_seconds
                )
                await self._clock.sleep(self._retry_seconds)
            elif isinstance(error, WorldAdapterError):
                self.world_status = "reconnecting"
                log.warning("world stream failed (%s); retrying in %ss", error, self._retry_seconds)
                await self._clock.sleep(self._retry_seconds)
            elif error is not None:
                raise error

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

    def _report_gap(self) -> None:
        self.stream_gaps += 1
        if self._alerts is not None:
            self._alerts.alert(
                "stream_gap",
                "World events were lost: the game could not replay from the daemon's cursor",
                f"The game no longer holds events after {self.cursor}, so the daemon carried on "
                "from live events; storytellers never saw what happened in between. Frequent "
                "gaps mean the game keeps too little history or the daemon was down too long.",
                severity="warning",
                key="stream_gap",
            )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set, then drain and return.

        Raises:
            FatalStreamError: After draining, if the world refused the daemon.
        """
        self._stop = stop
        if self._inbox is None:
            # Work from a previous run of a world that cannot replay (the embedded sim world
            # starts over at the same cursors) cannot be matched to this run's events.
            await self.pipeline.discard_unreplayable()
        try:
            await self.reload(force=True)
        except FatalStreamError as exc:
            self._refused(exc)
            raise
        except WorldAdapterError as exc:  # a game that is down: the settings poll retries
            log.warning("the world did not answer at start (%s); retrying while running", exc)
        try:
            async with asyncio.TaskGroup() as group:
                pipeline = group.create_task(self.pipeline.run(), name="pipeline")
                background = [
                    group.create_task(self._pump(), name="world-pump"),
                    group.create_task(self._watch_settings(), name="settings-watch"),
                    group.create_task(self.heartbeats.run(), name="heartbeats"),
                ]
                if self.intake is not None:
                    background.append(group.create_task(self._watch_intake(), name="intake"))
                self.ready.set()
                log.info(
                    "ready: %d storytellers, %d watched rooms; SIGTERM or SIGINT stops",
                    len(self.pipeline.router.storytellers),
                    len(self._cells),
                )
                await stop.wait()
                log.info("stopping: no new events; draining queued turns")
                self._intake_open = False
                self.pipeline.stop_intake()
                for task in background:
                    task.cancel()
                try:
                    async with asyncio.timeout(self._drain_seconds):
                        await self.pipeline.drain()
                except TimeoutError:
                    log.warning(
                        "drain deadline of %ss passed; cancelling what is left", self._drain_seconds
                    )
                pipeline.cancel()
            if self.failure is not None:
                raise self.failure
        finally:
            self.ready.clear()


async def complete_even_if_cancelled(work: Awaitable[None]) -> None:
    """Await `work`; if cancelled meanwhile, let it finish first, then pass the cancellation on.

    A database write cut off mid-transaction leaves its connection in a half-cancelled state
    that later fails on a closed event loop; finishing it first keeps shutdown clean. A batch of
    events, for one, is then either dispatched or still pending for the next start.
    """
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await asyncio.gather(task, return_exceptions=True)
        raise


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
