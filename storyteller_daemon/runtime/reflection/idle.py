"""The daemon's reflection task: a pass for each storyteller that has been quiet long enough.

Every ``check_seconds`` on the daemon's clock it looks at each storyteller of the routing
table. One is due a pass when all of these hold:

* it is not paused;
* it is **quiet**: its lane has had no work for ``quiet_seconds`` (no event waiting for the
  window or being judged, no turn waiting or running; counted from the last event stored for
  it, the end of its last attention pass or turn, or the pipeline's start) and its durable
  backlog holds no open item (pending, interested or running);
* its last pass is at least ``interval_seconds`` ago (a pass that changed nothing counts).

Passes run one storyteller after another, so reflection never has more than one model request
in flight. A pass that fails is logged and counted, and the others go on; the task itself is
one of the daemon's TaskGroup and stops with it (a pass in flight is cancelled, its database
writes finishing first).
"""

from __future__ import annotations

import asyncio
import logging

from storyteller_daemon.clock import Clock
from storyteller_daemon.config import ReflectionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.reflection.reflect import Reflection

log = logging.getLogger(__name__)


class ReflectionScheduler:
    """Runs reflection passes for quiet storytellers, until cancelled.

    Args:
        reflection: what a pass does.
        pipeline: tells which storytellers there are and how long each has been quiet.
        clock: the daemon's clock; `run` sleeps on it.
        cfg: the ``[reflection]`` section.
    """

    def __init__(
        self, reflection: Reflection, pipeline: Pipeline, clock: Clock, cfg: ReflectionConfig
    ) -> None:
        self._reflection = reflection
        self._pipeline = pipeline
        self._clock = clock
        self._cfg = cfg
        self._last: dict[int, float] = {}
        self.running = False
        """Whether `run` is looking for quiet storytellers."""
        self.looks = 0
        """Completed looks (tests wait on this instead of sleeping)."""
        self._looked = asyncio.Condition()

    async def run(self) -> None:
        """Look for quiet storytellers every ``check_seconds`` and reflect, until cancelled."""
        self.running = True
        try:
            while True:
                await self._clock.sleep(self._cfg.check_seconds)
                try:
                    await self.look()
                except Exception:  # the backlog could not be read: the next look tries again
                    log.exception("reflection could not look for quiet storytellers")
                async with self._looked:
                    self.looks += 1
                    self._looked.notify_all()
        finally:
            self.running = False

    async def wait_looks(self, count: int) -> None:
        """Return once `count` looks have been completed."""
        async with self._looked:
            await self._looked.wait_for(lambda: self.looks >= count)

    async def look(self) -> list[int]:
        """Run a pass for every storyteller due one; the ids of those that had one."""
        reflected = []
        for storyteller in list(self._pipeline.router.storytellers):
            if not await self._due(storyteller):
                continue
            assert storyteller.id is not None
            self._last[storyteller.id] = self._clock.monotonic()
            reflected.append(storyteller.id)
            try:
                await self._reflection.reflect(storyteller)
            except Exception:
                self._reflection.stats.reflections["failed"] += 1
                log.exception(
                    "reflection of storyteller %s failed; the others go on", storyteller.name
                )
        return reflected

    async def _due(self, storyteller: Storyteller) -> bool:
        sid = storyteller.id
        if sid is None or storyteller.paused:
            return False
        quiet = self._pipeline.quiet_for(sid)
        if quiet is None or quiet < self._cfg.quiet_seconds:
            return False
        last = self._last.get(sid)
        if last is not None and self._clock.monotonic() - last < self._cfg.interval_seconds:
            return False
        depth = await self._pipeline.backlog_depth()
        return not any(count for (owner, _), count in depth.items() if owner == sid)
