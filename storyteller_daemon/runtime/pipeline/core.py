"""The `Pipeline`: the supervisor of the stages, with their lifecycle and queries.

`Pipeline` builds the intake, routing, attention, turn and speech-history stages over one
`Lanes` they share. While it runs it owns every storyteller's tasks in one task group; it
resumes the work an earlier run left in the backlog, prunes finished work every hour, closes
intake and drains what is in flight on stop, and tells the daemon and the health checks how
each lane stands.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import timedelta

from storyteller_daemon.agent.turn_runner import TurnRunner
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.work import WorkItem, WorkState
from storyteller_daemon.runtime.pipeline.attention import Attention
from storyteller_daemon.runtime.pipeline.intake import Intake
from storyteller_daemon.runtime.pipeline.judging import BatchJudge
from storyteller_daemon.runtime.pipeline.lanes import Lanes, log
from storyteller_daemon.runtime.pipeline.ports import (
    Admission,
    Backlog,
    Observer,
    PlanReader,
    SpeechRecorder,
    VerdictMemory,
    WorkElsewhere,
)
from storyteller_daemon.runtime.pipeline.routing import Router, Routing
from storyteller_daemon.runtime.pipeline.settled import SettledVerdicts
from storyteller_daemon.runtime.pipeline.speech import SPEECH_BUFFER, SpeechHistory
from storyteller_daemon.runtime.pipeline.turn_loop import Turns
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.events import WorldEvent


class Pipeline:
    """Routes triggers into the backlog and runs every storyteller's attention and turns.

    It builds the stages over one `Lanes`, runs them in its task group while `run` runs, and
    answers how each lane stands. Intake's entry points (`accept`, `ingest`, `heartbeat`,
    `direct`, `submit_direct`) are the intake stage's.

    Args:
        router: who hears what (the daemon keeps it in step with the settings).
        runner: judges events and runs turns.
        clock: the runtime's clock.
        stats: the daemon's counters.
        observer: told of every step.
        backlog: the durable backlog.
        attention: the attention settings (default: the defaults).
        queue_size: turns a storyteller may have waiting or running before a direct
            invocation is refused.
        model_available: False when no model is configured.
        speech: where speech heard is kept (None: nowhere).
        speech_buffer: speeches waiting to be written before new ones are dropped.
        admission: the last checks before a model call.
        alerts: where failures are alerted.
        source: the world's name (the prefix of its events' work item sources).
        observe: told of every event taken in.
        plans: where the waits of planning storytellers' plans are read.
        verdict_memory: where ignore verdicts are kept to settle repeats.
        everyone: who hears what of every storyteller of the game, run here or not (a daemon
            of a cluster routes the world events it stores to all of them; default: `router`).
        elsewhere: told of work stored for storytellers run elsewhere (a cluster's daemons).
    """

    def __init__(
        self,
        *,
        router: Router,
        runner: TurnRunner,
        clock: Clock,
        stats: RuntimeStats,
        observer: Observer,
        backlog: Backlog,
        attention: AttentionConfig | None = None,
        queue_size: int = 25,
        model_available: bool = True,
        speech: SpeechRecorder | None = None,
        speech_buffer: int = SPEECH_BUFFER,
        admission: Admission | None = None,
        alerts: AlertSink | None = None,
        source: str = "world",
        observe: Callable[[WorldEvent], None] | None = None,
        plans: PlanReader | None = None,
        verdict_memory: VerdictMemory | None = None,
        everyone: Router | None = None,
        elsewhere: WorkElsewhere | None = None,
    ) -> None:
        cfg = attention or AttentionConfig()
        self.router = router
        self.stats = stats
        self._clock = clock
        self._cfg = cfg
        self._source = source
        self._lanes = Lanes(backlog, clock, cfg)
        self._routing = Routing(
            router,
            self._lanes,
            stats,
            observer,
            admission,
            model_available=model_available,
            everyone=everyone,
        )
        self.everyone = self._routing.everyone
        self._speech = SpeechHistory(speech, stats, speech_buffer)
        hours = 0.0 if cfg.one_call_per_event else cfg.verdict_memory_hours
        # Ignore verdicts kept to settle repeats without a model call (never in the reference
        # design, which judges every event).
        self._settled = SettledVerdicts(verdict_memory, hours)
        self._intake = Intake(
            lanes=self._lanes,
            routing=self._routing,
            speech=self._speech,
            clock=clock,
            stats=stats,
            attention=cfg,
            queue_size=queue_size,
            source=source,
            observe=observe,
            elsewhere=elsewhere,
        )
        judge = BatchJudge(
            routing=self._routing,
            runner=runner,
            clock=clock,
            stats=stats,
            observer=observer,
            attention=cfg,
            settled=self._settled,
            speech=self._speech,
        )
        self._attention = Attention(
            lanes=self._lanes,
            routing=self._routing,
            judge=judge,
            clock=clock,
            stats=stats,
            attention=cfg,
            alerts=alerts,
            plans=plans,
        )
        self._turns = Turns(
            lanes=self._lanes,
            routing=self._routing,
            runner=runner,
            clock=clock,
            stats=stats,
            observer=observer,
            attention=cfg,
            alerts=alerts,
        )
        self.accept = self._intake.accept
        self.ingest = self._intake.ingest
        self.heartbeat = self._intake.heartbeat
        self.direct = self._intake.direct
        self.submit_direct = self._intake.submit_direct
        self.seen = self._intake.seen
        self.arrived = self._intake.arrived
        self._restored = False
        self._started_at: float | None = None
        """When `run` began (monotonic); None while it does not run."""

    @property
    def model_available(self) -> bool:
        """Whether a model is configured (without one every trigger is dropped)."""
        return self._routing.model_available

    @model_available.setter
    def model_available(self, available: bool) -> None:
        self._routing.set_model_available(available)

    @property
    def turn_listeners(self) -> list[Callable[[str], None]]:
        """Told the key of each turn once its end is stored (see `Turns.listeners`)."""
        return self._turns.listeners

    @property
    def restored(self) -> bool:
        """Whether the work left from before this start has been picked up."""
        return self._restored

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Resume left-over work, then own the per-storyteller tasks until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                self._lanes.open(group, (self._attention.run, self._turns.run))
                self._started_at = self._clock.monotonic()
                if self._speech.recorder is not None:
                    group.create_task(self._speech.run(), name="speech-history")
                group.create_task(self._prune_hourly(), name="backlog-prune")
                for st in self.router.storytellers:
                    self._lanes.ensure(st)
                await self._resume()
                await asyncio.Event().wait()  # lanes run in the group; this waits for cancel
        finally:
            self._started_at = None
            self._lanes.close()

    async def adopt(self, storyteller_ids: Collection[int]) -> None:
        """Pick up the backlog of storytellers new to this pipeline while it runs (created,
        or their lease taken from another daemon of a cluster); before, the start does."""
        if storyteller_ids and self._restored:
            await self._resume(frozenset(storyteller_ids))

    async def _resume(self, only: frozenset[int] | None = None) -> None:
        """Pick up what the backlog holds from before this start (of `only` these)."""
        depth = await self._lanes.backlog.depth()
        resumed = 0
        for (sid, state), count in depth.items():
            st = self.router.storyteller(sid)
            if st is None or (only is not None and sid not in only):
                continue
            lane = self._lanes.ensure(st)
            resumed += count
            if state == WorkState.PENDING.value:
                lane.found_pending(count)
            else:
                lane.wake_turns()
        if resumed:
            log.info(
                "resuming %d work items left from %s",
                resumed,
                "before the start" if only is None else "another daemon or an earlier run",
            )
        self._restored = True
        await self._lanes.changed()

    async def look_at_backlog(self) -> int:
        """Show each lane the work the backlog holds that it has not seen (a cluster's daemon,
        every lease span: work another daemon stored whose notice did not arrive); return the
        storytellers woken."""
        depth = await self._lanes.backlog.depth()
        woken: set[int] = set()
        for (sid, state), count in depth.items():
            st = self.router.storyteller(sid)
            if st is None:
                continue
            lane = self._lanes.ensure(st)
            if state == WorkState.PENDING.value:
                if lane.pending == 0 and not lane.busy_judging:
                    lane.found_pending(count)
                    woken.add(sid)
            elif state == WorkState.INTERESTED.value and not lane.turn_active:
                lane.wake_turns()
                woken.add(sid)
        if woken:
            await self._lanes.changed()
        return len(woken)

    async def discard_unreplayable(self) -> int:
        """Expire open work of this world from an earlier run (for a world that cannot replay)."""
        count = await self._lanes.backlog.close_source(
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
                pruned = await self._lanes.backlog.prune(updated_before=cutoff)
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
        self._lanes.stop()

    async def drain(
        self, working: Callable[[frozenset[int]], Awaitable[None]] | None = None
    ) -> None:
        """Wait for the speech writer, and for passes and turns in flight to end (after
        `stop_intake`, so none starts).

        `working` hears at once the storytellers with a pass or their turn task under way,
        and again, with fewer, as each lane's work ends (until none is left): a cluster
        daemon lets every other storyteller go (its pending backlog stays in the database).
        """
        left = self.working()
        if working is not None:
            await working(left)
        await self._speech.written()
        while left:
            await self._lanes.wait_for(functools.partial(self._some_ended, left))
            left &= self.working()
            if working is not None:
                await working(left)
        await self._lanes.wait_for(
            lambda: not self._lanes.any(lambda lane: lane.busy_judging or lane.running_turn)
        )

    def _some_ended(self, working: frozenset[int]) -> bool:
        return not working <= self.working()

    def working(self) -> frozenset[int]:
        """The storytellers with an attention pass or their turn task under way."""
        return self._lanes.which(lambda lane: lane.working)

    async def wait_idle(self) -> None:
        """Return once nothing is pending, judging, waiting for a turn or running (tests)."""
        await self._speech.written()
        while True:
            await self._lanes.wait_for(self._quiet)
            depth = await self._lanes.backlog.depth()
            live = {sid for sid, _ in depth if self.router.storyteller(sid) is not None}
            if not live:
                return
            for sid in live:  # the backlog holds work the lanes have not seen: show it them
                lane = self._lanes.get(sid)
                if lane is not None:
                    lane.look_again()
                    lane.wake_turns()
            await asyncio.sleep(0)

    def _quiet(self) -> bool:
        return (
            self._restored
            and not self._intake.busy
            and not self._lanes.any(
                lambda lane: (
                    lane.busy_judging
                    or lane.turn_active
                    or lane.pending > 0
                    or lane.turn_wake.is_set()
                )
            )
        )

    def quiet_for(self, storyteller_id: int) -> float | None:
        """Seconds the storyteller has had no work in its lane (no event waiting or being
        judged, no turn waiting or running), counted from its last activity or the start;
        None while it has some, or while the pipeline is not running or still resuming.

        The lane is the in-memory view; `backlog_depth` is the durable truth to check too.
        """
        if self._started_at is None or not self._restored or self._intake.busy:
            return None
        lane = self._lanes.get(storyteller_id)
        if lane is not None and lane.busy:
            return None
        since = lane.active_at if lane is not None else None
        return self._clock.monotonic() - (since if since is not None else self._started_at)

    def storytellers_reloaded(self) -> None:
        """Reload every lane's plan waits before its next pass (settings may have changed),
        and look for turns queued again meanwhile (`storyteller runs retry`)."""
        for lane in self._lanes:
            lane.plans_changed()
            lane.wake_turns()

    def forget(self, storyteller_id: int) -> None:
        """Stop the tasks of a storyteller that no longer exists (its backlog stays)."""
        self._lanes.forget(storyteller_id)

    def queue_depth(self, storyteller_id: int) -> int:
        """Pending events known to the lane, plus a running turn."""
        lane = self._lanes.get(storyteller_id)
        return (lane.pending + int(lane.running_turn)) if lane else 0

    async def stored_work(self, storyteller_id: int, source: str) -> WorkItem | None:
        """The storyteller's work item stored from `source` (a game's invocation), if any."""
        return await self._lanes.backlog.by_source(storyteller_id, source)

    async def backlog_depth(self) -> Mapping[tuple[int, str], int]:
        """(storyteller id, state) → open work items in the durable backlog."""
        return await self._lanes.backlog.depth()

    def turn_running(self, storyteller_id: int) -> bool:
        """Whether a turn of the storyteller is running now."""
        lane = self._lanes.get(storyteller_id)
        return lane is not None and lane.running_turn

    def judging(self, storyteller_id: int) -> bool:
        """Whether an attention pass of the storyteller is in flight now."""
        lane = self._lanes.get(storyteller_id)
        return lane is not None and lane.busy_judging
