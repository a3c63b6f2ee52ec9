"""The world pump: the world's event stream into the pipeline, durably.

`WorldPump` subscribes to the watched rooms from the daemon's cursor and resubscribes when they
change. With an event inbox each batch is stored with the cursor in one transaction before it is
dispatched, and what was stored but never dispatched goes first after a restart (in a cluster,
`dispatch_stale` takes what a daemon left undispatched for a sweep span). A world that
cannot replay from the cursor is a gap (counted and alerted), a failed stream or store is retried,
and a refusal stops the daemon. The intake watchdog turns health red when a bridged game keeps
sending while nothing is stored.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import timedelta

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock, uncancelled
from storyteller_daemon.errors import StorageError
from storyteller_daemon.runtime.daemon.intake_watch import Change, IntakeWatch
from storyteller_daemon.runtime.daemon.ports import EventInbox
from storyteller_daemon.runtime.daemon.settings_watch import SettingsWatch
from storyteller_daemon.runtime.daemon.state import WorldStatus, log
from storyteller_daemon.runtime.pipeline import Pipeline
from world_adapter.bridge.batches import EventBatches
from world_adapter.bridge.errors import StreamGap
from world_adapter.errors import CursorExpired, FatalStreamError, WorldAdapterError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.protocol import WorldClient

INBOX_BATCH = 500
"""Events stored per transaction at most."""


class WorldPump:
    """Follows the world's events into the pipeline and watches that intake moves.

    Args:
        world: the world whose events are followed.
        pipeline: where the events go.
        watch: the settings watch (its watched rooms are the stream's filter).
        status: the world link's status, set as the stream goes.
        clock: for retry delays and the intake watchdog.
        retry_seconds: the delay before a failed stream or store is retried.
        alerts: where gaps and stalls are alerted (None: only logged).
        inbox: the durable event inbox of a world that can replay (None: none).
        world_key: the world's name in the inbox.
        cursor_key: the name this daemon's cursor is kept under (default `world_key`; each
            daemon of a cluster has its own, and stores the events it has first).
        inbox_keep: dispatched events the inbox keeps.
        intake: the intake watchdog (None for a world without stream counters).
    """

    def __init__(
        self,
        *,
        world: WorldClient,
        pipeline: Pipeline,
        watch: SettingsWatch,
        status: WorldStatus,
        clock: Clock,
        retry_seconds: float,
        alerts: AlertSink | None,
        inbox: EventInbox | None,
        world_key: str,
        inbox_keep: int,
        intake: IntakeWatch | None,
        cursor_key: str | None = None,
    ) -> None:
        self._world = world
        self._pipeline = pipeline
        self._watch = watch
        self._status = status
        self._clock = clock
        self._retry_seconds = retry_seconds
        self._alerts = alerts
        self._inbox = inbox
        self._world_key = world_key
        self._cursor_key = cursor_key or world_key
        self._clustered = self._cursor_key != world_key
        self._inbox_keep = inbox_keep
        self.intake = intake
        """The intake watchdog (None for a world without stream counters, like the sim)."""
        self._restored = inbox is None
        self._stored_since_prune = 0
        self._intake_open = True
        self.cursor: Cursor | None = None
        self.stream_gaps = 0
        """Times the world could not replay from our cursor, so events were lost."""
        self._took = asyncio.Condition()

    def close_intake(self) -> None:
        """Dispatch nothing more (shutdown): stored events stay pending for the next start."""
        self._intake_open = False

    async def _consume(self, cells: frozenset[int]) -> None:
        if not self._restored:
            await self._restore()
        self._status.set("stalled" if self.intake and self.intake.stalled else "subscribed")
        self._progressed()
        stream = self._world.subscribe(cells, self.cursor)
        async with EventBatches(stream, INBOX_BATCH) as batches:
            while (batch := await batches.next()) is not None:
                await uncancelled(self._store_and_dispatch(batch))

    async def _restore(self) -> None:
        """Resume from the stored cursor (a daemon new to a cluster: from where the others
        are); dispatch what was stored but never dispatched (in a cluster the others may be
        dispatching theirs right now: `dispatch_stale` takes what they left)."""
        assert self._inbox is not None
        self.cursor = await self._inbox.cursor(self._cursor_key)
        if self.cursor is None and self._clustered:
            self.cursor = await self._inbox.latest_cursor(self._world_key)
        if not self._clustered:
            pending = await self._inbox.pending(self._world_key)
            if pending:
                log.info("dispatching %d stored world events from before the restart", len(pending))
            await self._dispatch(pending)
        self._restored = True

    async def _store_and_dispatch(self, events: Sequence[WorldEvent]) -> None:
        if self._inbox is None:  # a world that cannot replay: its events go straight in
            self.cursor = events[-1].cursor
            if self._intake_open:
                await self._pipeline.accept(events)
        else:
            stored = await self._inbox.store_events(
                self._world_key, events, cursor_key=self._cursor_key
            )
            self.cursor = events[-1].cursor
            if self._clustered and len(stored) < len(events):
                mine = {event.cursor for _, event in stored}
                self._pipeline.seen([e for e in events if e.cursor not in mine])
            await self._dispatch(stored)
        self._progressed()
        async with self._took:
            self._took.notify_all()

    async def dispatch_stale(self, seconds: float) -> int:
        """Dispatch the events stored more than `seconds` ago and never dispatched (in a
        cluster: by a daemon that died in between); return how many."""
        if self._inbox is None or not self._intake_open:
            return 0
        before = self._clock.now() - timedelta(seconds=seconds)
        stale = await self._inbox.pending(self._world_key, received_before=before)
        if stale:
            log.info("dispatching %d world events another daemon stored and left", len(stale))
            await self._dispatch(stale)
        return len(stale)

    def _progressed(self) -> None:
        """Tell the watchdog where intake stands; a stall it had seen is over once events move."""
        if self.intake is None:
            return
        if self.intake.progress(self.cursor, self._clock.monotonic()) is Change.RESUMED:
            if self._status.state == "stalled":
                self._status.set("subscribed")
            log.warning("world intake moves again: events are stored from %s on", self.cursor)

    async def watch_intake(self) -> None:
        """Look for a stalled intake four times per `stall_seconds`, while running."""
        assert self.intake is not None
        while True:
            await self._clock.sleep(self.intake.stall_seconds / 4)
            if self._status.state != "subscribed":
                continue  # reconnecting, refused: said elsewhere
            if self.intake.look(self._clock.monotonic()) is Change.STALLED:
                self._report_stall()

    def _report_stall(self) -> None:
        assert self.intake is not None and self.intake.stalled is not None
        stall = self.intake.stalled
        self._status.set("stalled")
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
        await self._pipeline.accept([event for _, event in stored])
        await self._inbox.mark_dispatched([row_id for row_id, _ in stored])
        self._stored_since_prune += len(stored)
        if self._stored_since_prune >= self._inbox_keep // 10:
            self._stored_since_prune = 0
            await self._inbox.prune(self._world_key, keep=self._inbox_keep)

    async def run(self) -> None:
        """Follow the world's events, resubscribing when the watched rooms change."""
        while True:
            cells = self._watch.cells
            consumer = asyncio.create_task(self._consume(cells))
            changed = asyncio.create_task(self._watch.wait_cells_changed(cells))
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
                self._status.refused(error)
                return
            elif isinstance(error, StorageError):
                # Events stored but not dispatched (the database failed) are read again from
                # the inbox (in a cluster, by the sweep).
                self._restored = self._inbox is None
                self._status.set("reconnecting")
                log.error(
                    "could not store world events (%s); retrying in %ss", error, self._retry_seconds
                )
                await self._clock.sleep(self._retry_seconds)
            elif isinstance(error, WorldAdapterError):
                self._status.set("reconnecting")
                log.warning("world stream failed (%s); retrying in %ss", error, self._retry_seconds)
                await self._clock.sleep(self._retry_seconds)
            elif error is not None:
                raise error

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
