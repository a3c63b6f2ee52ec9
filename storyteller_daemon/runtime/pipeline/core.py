"""The `Pipeline`: the stages put together, with their lifecycle and queries.

`Pipeline` combines the intake, attention, turn and speech-history stages over their shared
state. While it runs it owns every storyteller's tasks in one task group; it resumes the work
an earlier run left in the backlog, prunes finished work every hour, closes intake and drains
what is in flight on stop, and tells the daemon and the health checks how each lane stands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import timedelta

from storyteller_daemon.domain.repeats import RepeatMemory
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.domain.work import WorkItem, WorkState
from storyteller_daemon.runtime.pipeline.attention import AttentionStage
from storyteller_daemon.runtime.pipeline.intake import IntakeStage
from storyteller_daemon.runtime.pipeline.speech import SpeechWriter
from storyteller_daemon.runtime.pipeline.state import _Lane, log
from storyteller_daemon.runtime.pipeline.turn_loop import TurnStage


class Pipeline(IntakeStage, AttentionStage, TurnStage, SpeechWriter):
    """Routes triggers into the backlog and runs every storyteller's attention and turns."""

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Resume left-over work, then own the per-storyteller tasks until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                self._started_at = self._clock.monotonic()
                if self._speech is not None:
                    group.create_task(self._speech_writer(self._speech), name="speech-history")
                group.create_task(self._prune_hourly(), name="backlog-prune")
                for st in self.router.storytellers:
                    self._ensure_lane(st)
                await self._resume()
                await asyncio.Event().wait()  # lanes run in the group; this waits for cancel
        finally:
            self._group = None
            self._started_at = None
            self._lanes.clear()

    async def _resume(self) -> None:
        """Pick up what the backlog holds from before this start."""
        depth = await self._backlog.depth()
        resumed = 0
        for (sid, state), count in depth.items():
            st = self.router.storyteller(sid)
            if st is None:
                continue
            lane = self._ensure_lane(st)
            resumed += count
            if state == WorkState.PENDING.value:
                lane.pending += count
                lane.more = True
                lane.wake.set()
            else:
                lane.turn_wake.set()
        if resumed:
            log.info("resuming %d work items left from before the start", resumed)
        self._restored = True
        await self._changed()

    async def discard_unreplayable(self) -> int:
        """Expire open work of this world from an earlier run (for a world that cannot replay)."""
        count = await self._backlog.close_source(
            f"{self._source}:", reason="the world restarted; its earlier events cannot be replayed"
        )
        if count:
            self.stats.drop("world_restarted", count)
            log.warning("expired %d work items of the previous run of the world", count)
        return count

    async def _prune_hourly(self) -> None:
        """Delete finished work older than ``retention_hours``, and settled verdicts past
        their horizon, now and then every hour."""
        while True:
            cutoff = self._clock.now() - timedelta(hours=self._cfg.retention_hours)
            try:
                pruned = await self._backlog.prune(updated_before=cutoff)
            except Exception as exc:  # the next hour tries again
                log.warning("finished work items could not be pruned: %s", type(exc).__name__)
            else:
                if pruned:
                    log.info("pruned %d finished work items", pruned)
            try:
                await self._settled.prune(self._clock.now())
            except Exception as exc:  # the next hour tries again
                log.warning("settled verdicts could not be pruned: %s", type(exc).__name__)
            await self._clock.sleep(3600)

    def stop_intake(self) -> None:
        """Refuse new triggers and start no new passes or turns (shutdown has begun)."""
        self._accepting = False
        self._stopping = True
        for lane in self._lanes.values():
            lane.wake.set()
            lane.turn_wake.set()

    async def drain(self) -> None:
        """Wait for the speech writer, and for passes and turns in flight to end."""
        await self._unrecorded.join()
        async with self._progress:
            await self._progress.wait_for(
                lambda: (
                    not any(lane.busy_judging or lane.running_turn for lane in self._lanes.values())
                )
            )

    async def wait_idle(self) -> None:
        """Return once nothing is pending, judging, waiting for a turn or running (tests)."""
        await self._unrecorded.join()
        while True:
            async with self._progress:
                await self._progress.wait_for(self._quiet)
            depth = await self._backlog.depth()
            live = {sid for sid, _ in depth if self.router.storyteller(sid) is not None}
            if not live:
                return
            for sid in live:  # the backlog holds work the lanes have not seen: show it them
                lane = self._lanes.get(sid)
                if lane is not None:
                    lane.more = True
                    lane.wake.set()
                    lane.turn_wake.set()
            await asyncio.sleep(0)

    def _quiet(self) -> bool:
        return (
            self._restored
            and not self._intake_busy
            and not any(
                lane.busy_judging or lane.turn_active or lane.pending > 0 or lane.turn_wake.is_set()
                for lane in self._lanes.values()
            )
        )

    def quiet_for(self, storyteller_id: int) -> float | None:
        """Seconds the storyteller has had no work in its lane (no event waiting or being
        judged, no turn waiting or running), counted from its last activity or the start;
        None while it has some, or while the pipeline is not running or still resuming.

        The lane is the in-memory view; `backlog_depth` is the durable truth to check too.
        """
        if self._started_at is None or not self._restored or self._intake_busy:
            return None
        lane = self._lanes.get(storyteller_id)
        if lane is not None and lane.busy:
            return None
        since = lane.active_at if lane is not None else None
        return self._clock.monotonic() - (since if since is not None else self._started_at)

    def storytellers_reloaded(self) -> None:
        """Reload every lane's plan waits before its next pass (settings may have changed),
        and look for turns queued again meanwhile (`storyteller runs retry`)."""
        for lane in self._lanes.values():
            lane.plan_waits.stale = True
            lane.turn_wake.set()

    def forget(self, storyteller_id: int) -> None:
        """Stop the tasks of a storyteller that no longer exists (its backlog stays)."""
        lane = self._lanes.pop(storyteller_id, None)
        if lane is not None:
            for task in lane.tasks:
                task.cancel()

    def queue_depth(self, storyteller_id: int) -> int:
        """Pending events known to the lane, plus a running turn."""
        lane = self._lanes.get(storyteller_id)
        return (lane.pending + int(lane.running_turn)) if lane else 0

    async def stored_work(self, storyteller_id: int, source: str) -> WorkItem | None:
        """The storyteller's work item stored from `source` (a game's invocation), if any."""
        return await self._backlog.by_source(storyteller_id, source)

    async def backlog_depth(self) -> Mapping[tuple[int, str], int]:
        """(storyteller id, state) → open work items in the durable backlog."""
        return await self._backlog.depth()

    def turn_running(self, storyteller_id: int) -> bool:
        """Whether a turn of the storyteller is running now."""
        lane = self._lanes.get(storyteller_id)
        return lane is not None and lane.running_turn

    def judging(self, storyteller_id: int) -> bool:
        """Whether an attention pass of the storyteller is in flight now."""
        lane = self._lanes.get(storyteller_id)
        return lane is not None and lane.busy_judging

    def _ensure_lane(self, storyteller: Storyteller) -> _Lane:
        assert storyteller.id is not None
        sid = storyteller.id
        lane = self._lanes.get(sid)
        if lane is None:
            lane = _Lane(RepeatMemory(self._cfg.repeat_seconds, self._cfg.room_repeat_seconds))
            if self._cfg.one_call_per_event:
                lane.repeats = RepeatMemory(0, 0)
            self._lanes[sid] = lane
        if self._group is not None and not lane.tasks:
            lane.tasks.append(self._group.create_task(self._attention_loop(sid, lane)))
            lane.tasks.append(self._group.create_task(self._turn_loop(sid, lane)))
        return lane
