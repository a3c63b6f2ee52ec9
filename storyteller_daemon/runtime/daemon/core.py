"""`Daemon`: the settings watch and the world pump put together, with the lifecycle.

`Daemon.run` loads the settings, starts the pipeline, the world pump, the settings watch, the
heartbeats, the intake watchdog and reflection while idle in one task group, and on stop closes
intake, gives work in flight the drain deadline and cancels the rest, so no task outlives it.
`stop_on_signals` turns SIGINT and SIGTERM into that stop."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterator

from storyteller_daemon.runtime.daemon.invocations import GameInvocations
from storyteller_daemon.runtime.daemon.state import log
from storyteller_daemon.runtime.daemon.world_pump import WorldPump
from world_adapter.errors import FatalStreamError, WorldAdapterError


class Daemon(GameInvocations, WorldPump):
    """Owns the tasks that make up a running storyteller service."""

    async def run(self, stop: asyncio.Event) -> None:
        """Run until `stop` is set, then drain and return.

        Raises:
            FatalStreamError: After draining, if the world refused the daemon.
        """
        self._stop = stop
        invoked = self._serve_invocations()
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
                if self.idle_work is not None:
                    background.append(group.create_task(self.idle_work.run(), name="reflection"))
                if invoked:
                    background.append(group.create_task(self._send_outcomes(), name="outcomes"))
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
