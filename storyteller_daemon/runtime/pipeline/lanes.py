"""The lanes: each storyteller's in-memory view of its backlog, shared by the stages.

`Lane` is one storyteller's view: what intake told it, what its attention passes and its turn
task are doing. Every field changes through one of its methods, named for the step that changes
it, so a reader finds every writer of a field beside it. `Lanes` is the one object the stages
share: the table of lanes, the durable backlog behind them, the stop flag and the progress
condition that `Pipeline.drain` and `Pipeline.wait_idle` wait on. Once the pipeline runs it
holds the task group, and a lane made then starts its stages' tasks at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any

from storyteller_daemon.clock import Clock
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.attention_rules import RuleBook
from storyteller_daemon.domain.repeats import RepeatMemory
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.pipeline.pacing import Allowance, Scenes
from storyteller_daemon.runtime.pipeline.plan_waits import PlanWaits
from storyteller_daemon.runtime.pipeline.ports import Backlog
from storyteller_daemon.runtime.pipeline.settled import MemoryLane

log = logging.getLogger(__package__)
"""The pipeline's one logger, named after the package: every stage logs under that name."""

LaneWorker = Callable[[int, "Lane"], Coroutine[Any, Any, None]]
"""A stage's task over one lane (the attention loop, the turn loop)."""


@dataclass
class Lane:
    """One storyteller's in-memory view of its backlog, and its tasks."""

    repeats: RepeatMemory
    rules: RuleBook = field(default_factory=RuleBook)
    plan_waits: PlanWaits = field(default_factory=PlanWaits)
    memory: MemoryLane = field(default_factory=MemoryLane)
    scenes: Scenes = field(default_factory=Scenes)
    allowance: Allowance = field(default_factory=Allowance)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    turn_wake: asyncio.Event = field(default_factory=asyncio.Event)
    pending: int = 0
    """Pending items known to be in the backlog (a hint for the window; the backlog decides)."""
    first_at: float | None = None
    last_at: float | None = None
    urgent: bool = False
    routine: bool = True
    """Every event of the window so far is of a routine kind (`[attention] routine_kinds`)."""
    more: bool = False
    """The last pass took a full batch: judge again at once."""
    scene: bool = False
    """An arrival made a burst in a room (`Scenes.arrived`): look at once."""
    overflow: bool = False
    """A pass in flight left lively events for the next pass (more than a batch): once it
    ends, look again at once."""
    scene_due: float | None = None
    """An event in a scene came: close the window by then (monotonic; `pacing`)."""
    calm_due: float | None = None
    """Calm events a pass left pending must be asked about by then (monotonic; `pacing`)."""
    passes: int = 0
    """Attention passes started and not yet finished (claiming, asking or recording)."""
    in_flight: set[int] = field(default_factory=set)
    """Ids of the pending items that passes in flight are judging."""
    retry_at: float | None = None
    """After a failed request, no new pass starts before this (monotonic)."""
    turn_active: bool = False
    """The turn task is claiming or running turns."""
    running_turn: bool = False
    failures: int = 0
    expired_at: float | None = None
    """When the maximum-age policy last ran (monotonic): it runs at most once a minute."""
    active_at: float | None = None
    """When work last arrived, or a pass or turn last ended (monotonic): quiet time counts
    from here (see `Pipeline.quiet_for`)."""
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def busy_judging(self) -> bool:
        """Whether an attention pass is in flight."""
        return self.passes > 0

    @property
    def working(self) -> bool:
        """Whether an attention pass or the turn task is under way (what a stop lets finish
        before the storyteller is let go)."""
        return self.busy_judging or self.turn_active or self.running_turn

    @property
    def busy(self) -> bool:
        """Whether it has work: events waiting or being judged, a turn waiting or running."""
        return (
            self.pending > 0
            or self.more
            or self.calm_due is not None
            or self.busy_judging
            or self.turn_active
            or self.running_turn
            or self.turn_wake.is_set()
        )

    # ------------------------------------------------------------------ intake and resume

    def arrived(
        self,
        now: float,
        *,
        urgent: bool,
        routine: bool = False,
        burst: bool = False,
        scene_due: float | None = None,
    ) -> None:
        """A pending event was stored for the storyteller at `now`; `burst`: it made a burst
        in its room (`Scenes.arrived`); `scene_due`: it came in a scene, judge it by then."""
        if scene_due is not None:
            self.scene_due = scene_due if self.scene_due is None else min(self.scene_due, scene_due)
        self.pending += 1
        self.first_at = now if self.first_at is None else self.first_at
        self.last_at = now
        self.urgent |= urgent
        self.routine &= routine
        self.scene |= burst
        self.wake.set()

    def found_pending(self, count: int) -> None:
        """The backlog holds `count` pending events the lane has not seen: judge them."""
        self.pending += count
        self.look_again()

    def look_again(self) -> None:
        """Look at the backlog at once, whatever the window says (resume, `wait_idle`)."""
        self.more = True
        self.wake.set()

    def wake_turns(self) -> None:
        """Interested work may be waiting: let the turn task look."""
        self.turn_wake.set()

    def wake_all(self) -> None:
        """Wake both tasks (a stop, or a look at the backlog)."""
        self.wake.set()
        self.turn_wake.set()

    def touch(self, now: float) -> None:
        """Note activity at `now` (quiet time starts over)."""
        self.active_at = now

    def plans_changed(self) -> None:
        """Reload the plan waits before the next pass (a turn or a reload may have changed
        them)."""
        self.plan_waits.mark_stale()

    # ------------------------------------------------------------------ attention

    def take_window(self) -> None:
        """A pass takes what is waiting; events arriving from here on count towards the next
        window."""
        self.first_at = self.last_at = None
        self.urgent = False
        self.routine = True
        self.pending = 0
        self.more = False
        self.scene = False
        self.scene_due = None
        self.calm_due = None

    def look_after_pass(self) -> None:
        """A pass left events for the next pass (more than a batch): look again once it
        ends."""
        self.overflow = True

    def calm_until(self, due: float) -> None:
        """A pass left calm events pending: look again by `due` at the latest."""
        self.calm_due = due if self.calm_due is None else min(self.calm_due, due)

    def batch_was_full(self, full: bool) -> None:
        """Whether the last claim took a full batch (then the next pass starts at once)."""
        self.more = full

    def pass_started(self) -> None:
        """An attention pass begins (claiming, asking or recording)."""
        self.passes += 1

    def pass_ended(self, claimed: set[int] | None = None) -> None:
        """An attention pass ended; the items it `claimed` may be judged again."""
        if claimed:
            self.in_flight -= claimed
        self.passes -= 1
        if self.overflow:
            self.overflow = False
            self.look_again()

    def judging_now(self, claimed: set[int]) -> None:
        """A pass claimed these pending items."""
        self.in_flight |= claimed

    def request_failed(self) -> None:
        """A model request failed: its events stay pending and are looked at again."""
        self.more = True

    def judged_ok(self) -> None:
        """A pass recorded its decisions: failures in a row are over."""
        self.failures = 0
        self.retry_at = None

    def back_off(self, now: float, first_delay: float, cap: float) -> None:
        """Start no pass before a delay that doubles with each failure in a row.

        Requests in flight together that fail in the same outage count once: a failure while
        the lane is already waiting out a delay does not lengthen it.
        """
        if self.retry_at is not None and self.retry_at > now:
            return
        self.failures += 1
        self.retry_at = now + min(cap, first_delay * 2 ** (self.failures - 1))

    def expiry_due(self, now: float, every: float) -> bool:
        """Whether the maximum-age policy runs now (at most once per `every` seconds)."""
        if self.expired_at is not None and now - self.expired_at < every:
            return False
        self.expired_at = now
        return True

    # ------------------------------------------------------------------ turns

    def begin_turns(self) -> None:
        """The turn task takes the wake-up and starts claiming."""
        self.turn_wake.clear()
        self.turn_active = True

    def end_turns(self) -> None:
        """The turn task has claimed and run what there was (or failed to)."""
        self.turn_active = False

    def turn_started(self) -> None:
        """A turn starts running."""
        self.running_turn = True

    def turn_ended(self) -> None:
        """The running turn has ended (its end is stored, or it was cut off)."""
        self.running_turn = False

    # ------------------------------------------------------------------ tasks

    def own(self, task: asyncio.Task[None], *, until_done: bool = False) -> None:
        """Keep `task` as one of the lane's (cancelled when the storyteller is forgotten);
        `until_done`: let it go once it ends (a pass)."""
        self.tasks.append(task)
        if until_done:
            task.add_done_callback(self.tasks.remove)

    def cancel_tasks(self) -> None:
        """Cancel the lane's tasks (the storyteller is gone)."""
        for task in self.tasks:
            task.cancel()


class Lanes:
    """The storytellers' lanes, the durable backlog behind them and the progress signal.

    Args:
        backlog: the durable backlog (the stages read and write work items through it).
        clock: for activity times.
        attention: for each new lane's repeat memory.
    """

    def __init__(self, backlog: Backlog, clock: Clock, attention: AttentionConfig) -> None:
        self.backlog = backlog
        self._clock = clock
        self._cfg = attention
        self._table: dict[int, Lane] = {}
        self._progress = asyncio.Condition()
        self._group: asyncio.TaskGroup | None = None
        self._workers: tuple[LaneWorker, ...] = ()
        self._stopping = False

    def get(self, storyteller_id: int) -> Lane | None:
        """The storyteller's lane, if it has one."""
        return self._table.get(storyteller_id)

    def __iter__(self) -> Iterator[Lane]:
        return iter(list(self._table.values()))

    def which(self, test: Callable[[Lane], bool]) -> frozenset[int]:
        """The storytellers whose lanes pass `test`."""
        return frozenset(sid for sid, lane in self._table.items() if test(lane))

    def ensure(self, storyteller: Storyteller) -> Lane:
        """The storyteller's lane, created if new; its tasks start once the pipeline runs."""
        assert storyteller.id is not None
        sid = storyteller.id
        lane = self._table.get(sid)
        if lane is None:
            if self._cfg.one_call_per_event:
                lane = Lane(RepeatMemory(0, 0))
            else:
                lane = Lane(RepeatMemory(self._cfg.repeat_seconds, self._cfg.room_repeat_seconds))
            self._table[sid] = lane
        if self._group is not None and not lane.tasks:
            for worker in self._workers:
                lane.own(self._group.create_task(worker(sid, lane)))
        return lane

    def forget(self, storyteller_id: int) -> None:
        """Stop the tasks of a storyteller that no longer exists (its backlog stays)."""
        lane = self._table.pop(storyteller_id, None)
        if lane is not None:
            lane.cancel_tasks()

    # ------------------------------------------------------------------ running

    def open(self, group: asyncio.TaskGroup, workers: tuple[LaneWorker, ...]) -> None:
        """Run each lane's `workers` in `group` from now on (the pipeline started)."""
        self._group = group
        self._workers = workers

    def close(self) -> None:
        """The pipeline stopped running: forget the group and the lanes."""
        self._group = None
        self._table.clear()

    def spawn(self, lane: Lane, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` (one attention pass) in the group as the lane's until it ends."""
        assert self._group is not None  # lanes run only inside the pipeline's task group
        lane.own(self._group.create_task(work), until_done=True)

    def stop(self) -> None:
        """Start no new passes or turns; wake every lane so its tasks see it."""
        self._stopping = True
        for lane in self._table.values():
            lane.wake_all()

    def stopping(self) -> bool:
        """Whether a clean stop has begun."""
        return self._stopping

    def touch(self, lane: Lane) -> None:
        """Note activity on a lane now."""
        lane.touch(self._clock.monotonic())

    def any(self, test: Callable[[Lane], bool]) -> bool:
        """Whether any lane passes `test`."""
        return any(test(lane) for lane in self._table.values())

    # ------------------------------------------------------------------ progress

    async def changed(self) -> None:
        """Tell the waiters that a lane moved on."""
        async with self._progress:
            self._progress.notify_all()

    async def wait_for(self, done: Callable[[], bool]) -> None:
        """Return once `done()` holds, looking again whenever a lane moves on."""
        async with self._progress:
            await self._progress.wait_for(done)
