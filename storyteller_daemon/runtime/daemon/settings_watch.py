"""Settings changes while the daemon runs.

`SettingsWatch` polls the storytellers' revisions and the world's zone membership every
``reload_seconds`` (or at once when asked, `poll_now`: a cluster's leases changed); on a
difference it reloads the settings, re-routes, forgets storytellers that are gone, has the
pipeline pick up the backlog of storytellers that are new to it, re-syncs heartbeats, tells
the settings listeners (the budget keeper) and lets the world pump know when the watched
rooms changed (`wait_cells_changed`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from storyteller_daemon.clock import Clock, sleep_or_wake
from storyteller_daemon.runtime.daemon.ports import SettingsListener, SettingsSource
from storyteller_daemon.runtime.daemon.state import WorldStatus, log
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.scheduling.heartbeats import HeartbeatScheduler
from world_adapter.errors import FatalStreamError
from world_adapter.protocol import WorldClient


class SettingsWatch:
    """Keeps routing and heartbeats in step with the stored settings.

    Args:
        settings: where the storytellers are read.
        world: asked for its zones.
        pipeline: re-routed on each change.
        heartbeats: re-synced on each change.
        listeners: told every storyteller on each (re)load.
        clock: for the poll interval.
        reload_seconds: the poll interval.
        status: told when the world refuses the daemon.
        followed: every storyteller of the game, beyond those run here (a cluster daemon
            follows all their rooms and routes the events it stores to all of them: the
            pipeline's `everyone`).
    """

    def __init__(
        self,
        *,
        settings: SettingsSource,
        world: WorldClient,
        pipeline: Pipeline,
        heartbeats: HeartbeatScheduler,
        listeners: Sequence[SettingsListener],
        clock: Clock,
        reload_seconds: float,
        status: WorldStatus,
        followed: SettingsSource | None = None,
    ) -> None:
        if followed is not None and pipeline.everyone is pipeline.router:
            raise ValueError(
                "a daemon that follows every storyteller needs a pipeline that routes to them "
                "all: build it with Pipeline(everyone=Router())"
            )
        self._settings = settings
        self._followed = followed
        self._followed_revisions: dict[int, int] | None = None
        self._world = world
        self._pipeline = pipeline
        self._heartbeats = heartbeats
        self._listeners = tuple(listeners)
        self._clock = clock
        self._reload_seconds = reload_seconds
        self._status = status
        self._revisions: dict[int, int] | None = None
        self._zones: Mapping[int, frozenset[int]] | None = None
        self._cells: frozenset[int] = frozenset()
        self._cells_changed = asyncio.Condition()
        self._reloading = asyncio.Lock()
        """One settings reload at a time: the poll's and one asked for after an admin change."""
        self.polls = 0
        """Completed settings polls (tests wait on this instead of sleeping)."""
        self._polled = asyncio.Condition()
        self._wake = asyncio.Event()

    @property
    def cells(self) -> frozenset[int]:
        """The rooms any subscribing storyteller watches (the world stream's filter)."""
        return self._cells

    async def reload(self, *, force: bool = False) -> bool:
        """Pick up changed settings or zones; True when something changed."""
        async with self._reloading:
            return await self._reload(force=force)

    async def _reload(self, *, force: bool) -> bool:
        revisions = await self._settings.revisions()
        followed = await self._followed.revisions() if self._followed is not None else None
        zones = await self._world.zones()
        if (
            not force
            and revisions == self._revisions
            and followed == self._followed_revisions
            and zones == self._zones
        ):
            return False
        storytellers = await self._settings.list()
        router = self._pipeline.router
        known = {s.id for s in router.storytellers}
        router.update(storytellers, zones)
        self._pipeline.storytellers_reloaded()
        loaded = {s.id for s in storytellers if s.id is not None}
        for gone in known - loaded:
            if gone is not None:
                self._pipeline.forget(gone)
        if not force and loaded - known:
            await self._pipeline.adopt(loaded - known)
        self._heartbeats.sync(storytellers)
        for listener in self._listeners:
            listener(storytellers)
        self._revisions, self._zones = revisions, zones
        self._followed_revisions = followed
        cells = router.watched_cells()
        if self._followed is not None:
            everyone = self._pipeline.everyone
            everyone.update(await self._followed.list(), zones)
            cells |= everyone.watched_cells()
        if cells != self._cells:
            self._cells = cells
            async with self._cells_changed:
                self._cells_changed.notify_all()
        if not force:
            log.info(
                "settings reloaded: %d storytellers, %d watched rooms",
                len(storytellers),
                len(cells),
            )
        return True

    async def wait_cells_changed(self, cells: frozenset[int]) -> None:
        """Return once the watched rooms differ from `cells`."""
        async with self._cells_changed:
            await self._cells_changed.wait_for(lambda: self._cells != cells)

    def poll_now(self) -> None:
        """Poll at once instead of at the next interval (the storytellers held changed)."""
        self._wake.set()

    async def run(self) -> None:
        """Poll every ``reload_seconds`` until cancelled (or the world refuses the daemon)."""
        while True:
            await sleep_or_wake(self._clock, self._wake, self._reload_seconds)
            self._wake.clear()
            try:
                await self.reload()
            except FatalStreamError as exc:
                self._status.refused(exc)
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
