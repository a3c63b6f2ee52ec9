"""The daemon's lifecycle: load settings, follow the world, run heartbeats, shut down cleanly.

Changes made with the CLI while the daemon runs take effect without a restart: every storyteller
row carries a revision that grows on each change, and the daemon compares revisions (and the
world's zone membership) every ``reload_seconds``; on a difference it reloads the settings,
re-routes, re-syncs heartbeats and, if the set of watched rooms changed, resubscribes to the
world from its last cursor.

Shutdown (SIGINT/SIGTERM): intake stops, heartbeats stop, queued and running turns get
``drain_seconds`` to finish, then everything left is cancelled. No task outlives `run()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator, Mapping
from typing import Protocol

from storyteller_daemon.domain.settings import Heartbeat, Storyteller
from storyteller_daemon.runtime.clock import Clock
from storyteller_daemon.runtime.heartbeats import HeartbeatScheduler
from storyteller_daemon.runtime.pipeline import Pipeline
from world_adapter.errors import CursorExpired, WorldAdapterError
from world_adapter.events import Cursor
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
    ) -> None:
        self._settings = settings
        self._world = world
        self.pipeline = pipeline
        self._clock = clock
        self._reload_seconds = reload_seconds
        self._drain_seconds = drain_seconds
        self._retry_seconds = retry_seconds
        self.heartbeats = HeartbeatScheduler(self._fire_heartbeat)
        self.cursor: Cursor | None = None
        self._revisions: dict[int, int] | None = None
        self._zones: Mapping[int, frozenset[int]] | None = None
        self._cells: frozenset[int] = frozenset()
        self._resubscribe = asyncio.Event()
        self.ready = asyncio.Event()
        self.polls = 0
        """Completed settings polls (tests wait on this instead of sleeping)."""
        self._polled = asyncio.Condition()

    async def _fire_heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> None:
        self.pipeline.heartbeat(storyteller_id, heartbeat)

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

    async def _watch_settings(self) -> None:
        while True:
            await self._clock.sleep(self._reload_seconds)
            try:
                await self.reload()
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
        async for event in self._world.subscribe(cells, self.cursor):
            self.cursor = event.cursor
            self.pipeline.ingest(event)

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
                log.warning("world cannot replay from %s; continuing from live events", self.cursor)
                self.cursor = None
            elif isinstance(error, WorldAdapterError):
                log.warning("world stream failed (%s); retrying in %ss", error, self._retry_seconds)
                await self._clock.sleep(self._retry_seconds)
            elif error is not None:
                raise error

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set, then drain and return."""
        await self.reload(force=True)
        self.heartbeats.start()
        try:
            async with asyncio.TaskGroup() as group:
                pipeline = group.create_task(self.pipeline.run(), name="pipeline")
                background = [
                    group.create_task(self._pump(), name="world-pump"),
                    group.create_task(self._watch_settings(), name="settings-watch"),
                ]
                self.ready.set()
                log.info(
                    "ready: %d storytellers, %d watched rooms; SIGTERM or SIGINT stops",
                    len(self.pipeline.router.storytellers),
                    len(self._cells),
                )
                await stop.wait()
                log.info("stopping: no new events; draining queued turns")
                self.pipeline.stop_intake()
                self.heartbeats.shutdown()
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
        finally:
            self.heartbeats.shutdown()
            self.ready.clear()


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
