"""The event pipeline over each storyteller's durable backlog.

Intake runs the synchronous stages (shutdown, pause, API key, prefilter: own-prog echoes,
subscriptions, watched rooms) and writes every accepted trigger to the backlog (`domain.work`)
before anything else happens; a trigger is then never lost, whatever happens to the process.

Each storyteller has two tasks over its backlog:

* **attention**: waits for a burst window (no new event for ``quiet_seconds``, or the oldest
  waiting ``max_wait_seconds``; urgent kinds and a full batch go at once), then takes the oldest
  pending events, up to ``max_batch_events``, settles repeats from memory (`domain.repeats`),
  and asks the model about the rest in one request. Each event gets a recorded decision. A
  failed request leaves its events pending and waits (doubling, up to a minute) before the next
  pass; events still unjudged after ``max_age_seconds`` are expired, counted and alerted. When
  the model is slower than the world the backlog grows in the database, not in memory.
* **turns**: claims the oldest interested event and every other interested event of the same
  kind of turn (up to ``max_turn_events``) and runs one turn for them all; events that become
  interesting while a turn runs go to the next one together.

On start, work a previous run left behind resumes: pending events are judged, interested ones
get turns, and a turn that was running is run again under its own turn key (prog calls are
idempotent by that key), once. Stop is quick: intake closes, a judging pass or turn in flight
gets the drain deadline, and everything else stays in the backlog for the next start.

Speech is also written to the rooms' speech history, once per event whoever hears it, by one
background writer behind a bounded buffer (overflow is counted as the ``speech_history`` drop).
A batch holding speech waits for the writer to catch up before it is judged.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Protocol

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction, RuleBook
from storyteller_daemon.domain.repeats import (
    HEARD_ELSEWHERE,
    REPEATED_IN_ROOM,
    Judged,
    RepeatMemory,
    repeat_key,
)
from storyteller_daemon.domain.settings import Heartbeat, Storyteller
from storyteller_daemon.domain.work import (
    Decision,
    NewWork,
    TurnClaim,
    WorkItem,
    WorkState,
)
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import decode_trigger, encode_trigger
from storyteller_daemon.runtime.routing import SUBSCRIPTION_FOR, Router
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.events import Crime, RoomEcho, Speech, WorldEvent

log = logging.getLogger(__name__)

SPEECH_BUFFER = 256
"""Speech events waiting to be written to the history before new ones are dropped."""
RETRY_CAP_SECONDS = 60.0
EXPIRY_EVERY_SECONDS = 60.0
"""How often a storyteller's backlog is checked for events past the maximum age."""
FAILED_OUTCOMES = frozenset({"model_transient_error", "model_fatal_error", "crashed"})


class Verdict(Protocol):
    """What the attention gate says about one trigger."""

    @property
    def interested(self) -> bool:
        """True when the trigger matters to the storyteller."""
        ...

    @property
    def reason(self) -> str:
        """Why (shown in the turn's prompt when interested)."""
        ...

    @property
    def violation(self) -> str | None:
        """Set when the model broke the verdict contract."""
        ...


class TurnOutcome(Protocol):
    """The parts of a finished turn the pipeline reports."""

    @property
    def outcome(self) -> str:
        """How the turn ended."""
        ...


class TurnRunner(Protocol):
    """The agent side of the pipeline, as the runtime sees it."""

    async def judge(
        self, storyteller: Storyteller, triggers: Sequence[Trigger]
    ) -> Sequence[Verdict]:
        """One verdict per trigger, in order, from one batch request (and at most one re-ask)."""
        ...

    async def run_turn(self, storyteller: Storyteller, trigger: Trigger, key: str) -> TurnOutcome:
        """Build the prompt, run the tool loop under turn key `key`, persist the result."""
        ...

    async def interrupted(
        self, storyteller: Storyteller, trigger: Trigger, key: str, attempt: int
    ) -> None:
        """Record that attempt ``attempt - 1`` of the turn `key` was cut off by a stop or crash."""
        ...


class Backlog(Protocol):
    """The durable backlog (the backlog repository)."""

    async def add(self, items: Sequence[NewWork]) -> list[WorkItem]:
        """Store the new items; return those stored (known sources are skipped)."""
        ...

    async def pending(
        self, storyteller_id: int, limit: int, exclude: Collection[int] = ()
    ) -> list[WorkItem]:
        """The oldest pending items, except those being judged."""
        ...

    async def decide(self, decisions: Sequence[Decision]) -> int:
        """Move pending items to their decided states."""
        ...

    async def count_attempt(self, ids: Sequence[int]) -> None:
        """Count a failed attention request against pending items."""
        ...

    async def claim_turn(
        self, storyteller_id: int, make_key: Callable[[Sequence[WorkItem]], str], limit: int
    ) -> TurnClaim | None:
        """Interrupted work first, else the oldest interested items of one turn class."""
        ...

    async def finish_turn(
        self, turn_key: str, state: WorkState, reason: str | None, rule: str | None = None
    ) -> int:
        """Record how a turn ended."""
        ...

    async def expire(
        self, storyteller_id: int, *, received_before: datetime, reason: str
    ) -> list[WorkItem]:
        """Expire pending items received before a time."""
        ...

    async def depth(self) -> Mapping[tuple[int, str], int]:
        """(storyteller id, state) → open items."""
        ...

    async def close_source(self, prefix: str, *, reason: str) -> int:
        """Expire every open item whose source starts with `prefix`."""
        ...

    async def prune(self, *, updated_before: datetime) -> int:
        """Delete finished items last moved before a time."""
        ...


class SpeechRecorder(Protocol):
    """Where speech heard in watched rooms is kept (the speech history repository)."""

    async def record(self, event: Speech) -> object:
        """Store one speech."""
        ...

    async def record_many(self, events: Sequence[Speech]) -> object:
        """Store several speeches in one go."""
        ...


class Admission(Protocol):
    """Last checks before a model is called for a trigger (budgets, idle heartbeats)."""

    async def admit(
        self, storyteller: Storyteller, trigger: Trigger, watched: frozenset[int]
    ) -> tuple[str, str] | None:
        """None to go on, or the stage and reason to drop the trigger with."""
        ...


class Observer(Protocol):
    """Gets told about every step (logging, the demo's live account, tests)."""

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        """A trigger stopped at `stage`."""
        ...

    def judged(self, storyteller: Storyteller, trigger: Trigger, verdict: Verdict) -> None:
        """The attention gate decided."""
        ...

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        """A turn begins."""
        ...

    def turn_finished(
        self, storyteller: Storyteller, trigger: Trigger, outcome: TurnOutcome | None
    ) -> None:
        """A turn ended (outcome None when it crashed; the error is logged)."""
        ...


@dataclass(frozen=True)
class _Inherited:
    """A verdict taken from an earlier judgement of the same text."""

    interested: bool
    reason: str
    violation: str | None = None


@dataclass
class _Lane:
    """One storyteller's in-memory view of its backlog, and its two tasks."""

    repeats: RepeatMemory
    rules: RuleBook = field(default_factory=RuleBook)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    turn_wake: asyncio.Event = field(default_factory=asyncio.Event)
    pending: int = 0
    """Pending items known to be in the backlog (a hint for the window; the backlog decides)."""
    first_at: float | None = None
    last_at: float | None = None
    urgent: bool = False
    more: bool = False
    """The last pass took a full batch: judge again at once."""
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
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def busy_judging(self) -> bool:
        """Whether an attention pass is in flight."""
        return self.passes > 0


class Pipeline:
    """Routes triggers into the backlog and runs every storyteller's attention and turns."""

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
    ) -> None:
        self.router = router
        self._runner = runner
        self._clock = clock
        self.stats = stats
        self._observer = observer
        self._backlog = backlog
        self._cfg = attention or AttentionConfig()
        self._parallel = 1 if self._cfg.one_call_per_event else self._cfg.parallel_requests
        self._queue_size = queue_size
        self.model_available = model_available
        self._speech = speech
        self._admission = admission
        self._alerts = alerts
        self._source = source
        self._observe = observe
        """Told of every event taken in (the look-up cache invalidates from it)."""
        self._lanes: dict[int, _Lane] = {}
        self._group: asyncio.TaskGroup | None = None
        self._accepting = True
        self._stopping = False
        self._unrecorded: asyncio.Queue[Speech] = asyncio.Queue(maxsize=speech_buffer)
        self._speech_taken = 0
        self._speech_done = 0
        self._speech_progress = asyncio.Condition()
        self._progress = asyncio.Condition()
        self._restored = False
        self._intake_busy = 0
        """`accept` calls under way (their work may not be in the backlog yet)."""

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Resume left-over work, then own the per-storyteller tasks until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                if self._speech is not None:
                    group.create_task(self._speech_writer(self._speech), name="speech-history")
                group.create_task(self._prune_hourly(), name="backlog-prune")
                for st in self.router.storytellers:
                    self._ensure_lane(st)
                await self._resume()
                await asyncio.Event().wait()  # lanes run in the group; this waits for cancel
        finally:
            self._group = None
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
        """Delete finished work older than ``retention_hours``, now and then every hour."""
        while True:
            cutoff = self._clock.now() - timedelta(hours=self._cfg.retention_hours)
            try:
                pruned = await self._backlog.prune(updated_before=cutoff)
            except Exception as exc:  # the next hour tries again
                log.warning("finished work items could not be pruned: %s", type(exc).__name__)
            else:
                if pruned:
                    log.info("pruned %d finished work items", pruned)
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

    async def _changed(self) -> None:
        async with self._progress:
            self._progress.notify_all()

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

    # ------------------------------------------------------------------ intake

    async def accept(self, events: Sequence[WorldEvent]) -> int:
        """Offer world events to every storyteller that hears them; return work items stored."""
        new: list[NewWork] = []
        for event in events:
            self.stats.events_in += 1
            if self._observe is not None:
                self._observe(event)
            if isinstance(event, Speech):
                self._remember_speech(event)
            for st in self.router.audience(event):
                trigger = Trigger.from_event(event)
                if self._refused(st, trigger) is None:
                    self.stats.heard[st.name] += 1
                    new.append(self._work(st, trigger, f"{self._source}:{event.cursor}"))
        return await self._store(new)

    async def ingest(self, event: WorldEvent) -> int:
        """`accept` for one event."""
        return await self.accept([event])

    async def heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> bool:
        """A heartbeat fired for a storyteller; True when its turn was queued."""
        st = self.router.storyteller(storyteller_id)
        if st is None or heartbeat not in st.heartbeats:
            return False
        trigger = Trigger(TriggerKind.HEARTBEAT, occurred_at=self._clock.now(), heartbeat=heartbeat)
        lane = self._lanes.get(storyteller_id)
        if lane is not None and lane.running_turn:  # must not pile onto work in progress
            self._drop(st, trigger, "busy", "a turn of this storyteller is running")
            return False
        if self._refused(st, trigger) is not None:
            return False
        source = f"heartbeat:{heartbeat.value}:{trigger.occurred_at.isoformat()}"
        return await self._store([self._work(st, trigger, source)]) == 1

    async def direct(self, storyteller: Storyteller, text: str) -> bool:
        """A direct invocation: True only if the turn was actually queued (FutureMUD §9.15)."""
        return await self.submit_direct(storyteller, text) is None

    async def submit_direct(self, storyteller: Storyteller, text: str) -> str | None:
        """A direct invocation: None when its turn is stored, else why it was refused."""
        if not text.strip():
            return "blank text"
        trigger = Trigger(TriggerKind.DIRECT, occurred_at=self._clock.now(), text=text.strip())
        refusal = self._refused(storyteller, trigger)
        if refusal is not None:
            return refusal
        depth = await self._backlog.depth()
        waiting = sum(
            n
            for (sid, state), n in depth.items()
            if sid == storyteller.id and state != WorkState.PENDING.value
        )
        if waiting >= self._queue_size:
            reason = f"queue full ({self._queue_size} turns waiting or running)"
            self.stats.queue_overflow[storyteller.name] += 1
            self._drop(storyteller, trigger, "queue", reason)
            return reason
        await self._store([self._work(storyteller, trigger, f"direct:{uuid.uuid4().hex}")])
        return None

    def _refused(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        """Run the synchronous stages; None when accepted, else why it was dropped."""
        for stage, check in (
            ("intake", self._intake_stage),
            ("pause", self._pause_stage),
            ("api_key", self._api_key_stage),
            ("prefilter", self._prefilter_stage),
        ):
            reason = check(storyteller, trigger)
            if reason is not None:
                self._drop(storyteller, trigger, stage, reason)
                return reason
        return None

    def _work(self, storyteller: Storyteller, trigger: Trigger, source: str) -> NewWork:
        assert storyteller.id is not None
        gated = trigger.needs_attention
        return NewWork(
            storyteller_id=storyteller.id,
            source=source,
            kind=trigger.kind.value,
            turn_class=self._turn_class(trigger, source),
            room_id=trigger.room_id,
            payload=json.dumps(encode_trigger(trigger), ensure_ascii=False),
            state=WorkState.PENDING if gated else WorkState.INTERESTED,
        )

    def _turn_class(self, trigger: Trigger, source: str) -> str:
        """Triggers of one class may share a turn: they are offered the same tools."""
        if self._cfg.one_call_per_event or trigger.kind in (
            TriggerKind.HEARTBEAT,
            TriggerKind.DIRECT,
        ):
            return source  # a turn of its own
        if trigger.kind in (TriggerKind.ROOM_ECHO, TriggerKind.SPEECH):
            return "echo"
        return trigger.kind.value

    async def _store(self, new: Sequence[NewWork]) -> int:
        if not new:
            return 0
        self._intake_busy += 1
        try:
            stored = await self._backlog.add(new)
        finally:
            self._intake_busy -= 1
        now = self._clock.monotonic()
        for item in stored:
            st = self.router.storyteller(item.storyteller_id)
            if st is None:
                continue
            lane = self._ensure_lane(st)
            if item.state is WorkState.PENDING:
                lane.pending += 1
                lane.first_at = now if lane.first_at is None else lane.first_at
                lane.last_at = now
                lane.urgent |= item.kind in self._cfg.urgent_kinds
                lane.wake.set()
            else:
                lane.turn_wake.set()
        await self._changed()
        return len(stored)

    # ------------------------------------------------------------------ synchronous stages

    def _intake_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        return None if self._accepting else "shutting down"

    @staticmethod
    def _pause_stage(storyteller: Storyteller, trigger: Trigger) -> str | None:
        return "storyteller is paused" if storyteller.paused else None

    def _api_key_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        return None if self.model_available else "no model API key configured"

    def _prefilter_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        event = trigger.event
        if event is None:
            return None
        if event.origin != "world":
            return "caused by a storyteller's own prog"
        if SUBSCRIPTION_FOR[event.kind] not in storyteller.subscriptions:
            return f"not subscribed to {event.kind.value} events"
        if storyteller.id is None or event.cell_id not in self.router.cells_of(storyteller.id):
            return f"room #{event.cell_id} is not watched"
        return None

    # ------------------------------------------------------------------ attention

    async def _attention_loop(self, storyteller_id: int, lane: _Lane) -> None:
        while True:
            await self._window(lane)
            if self._stopping:
                return
            if lane.passes >= self._parallel:  # wait for an answer before asking again
                lane.wake.clear()
                await lane.wake.wait()
                continue
            lane.passes += 1
            try:
                started = await self._start_pass(storyteller_id, lane)
            except Exception:  # a bug in one pass must not stop the lane; its events stay
                log.exception("attention pass failed for storyteller %s", storyteller_id)
                started = False
                self._back_off(lane)
            if not started:
                lane.passes -= 1
                await self._changed()

    async def _window(self, lane: _Lane) -> None:
        """Return when the storyteller's waiting events should be judged."""
        while not self._stopping:
            now = self._clock.monotonic()
            if lane.retry_at is not None and now < lane.retry_at:
                lane.wake.clear()
                await self._wait_or_wake(lane.wake, lane.retry_at - now)
                continue
            if lane.pending <= 0 and not lane.more:
                lane.wake.clear()
                await lane.wake.wait()
                continue
            if lane.more or lane.urgent or self._cfg.one_call_per_event:
                return
            if lane.pending >= self._cfg.max_batch_events:
                return
            first = lane.first_at if lane.first_at is not None else now
            last = lane.last_at if lane.last_at is not None else now
            due = min(last + self._cfg.quiet_seconds, first + self._cfg.max_wait_seconds)
            if now >= due:
                return
            lane.wake.clear()
            await self._wait_or_wake(lane.wake, due - now)

    async def _wait_or_wake(self, wake: asyncio.Event, seconds: float) -> None:
        sleeper = asyncio.ensure_future(self._clock.sleep(seconds))
        waker = asyncio.ensure_future(wake.wait())
        try:
            await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waker):
                task.cancel()
            await asyncio.gather(sleeper, waker, return_exceptions=True)

    async def _start_pass(self, storyteller_id: int, lane: _Lane) -> bool:
        """Claim the oldest pending events not already being judged, up to a batch, and judge
        them in a task of their own; False when there was nothing to judge."""
        limit = 1 if self._cfg.one_call_per_event else self._cfg.max_batch_events
        # This pass takes what is waiting (up to `limit`); events arriving from here on count
        # towards the next window.
        lane.first_at = lane.last_at = None
        lane.urgent = False
        lane.pending = 0
        lane.more = False
        st = self.router.storyteller(storyteller_id)
        if st is None:
            return False
        await self._expire(st, lane)
        items = await self._backlog.pending(storyteller_id, limit, exclude=lane.in_flight)
        lane.more = len(items) >= limit
        if not items:
            return False
        claimed = {item.id for item in items}
        lane.in_flight |= claimed
        assert self._group is not None  # lanes run only inside the pipeline's task group
        task = self._group.create_task(self._finish_pass(st, lane, items, claimed))
        lane.tasks.append(task)
        task.add_done_callback(lane.tasks.remove)
        return True

    async def _finish_pass(
        self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem], claimed: set[int]
    ) -> None:
        """Judge one claimed batch and record the decisions."""
        try:
            await self._judge_pass(st, lane, items)
        except Exception:  # a bug in one pass must not stop the lane; its events stay
            log.exception("attention pass failed for storyteller %s", st.name)
            self._back_off(lane)
        finally:
            lane.in_flight -= claimed
            lane.passes -= 1
            lane.wake.set()
            await self._changed()

    async def _judge_pass(self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem]) -> None:
        """Judge a batch of pending events of one storyteller in one request."""
        triggers = [decode_trigger(json.loads(item.payload)) for item in items]
        decisions = self._unjudgeable(st, items, triggers)
        if decisions is None:
            decisions = await self._judge(st, lane, items, triggers)
            if decisions is None:  # the request failed: the events stay pending
                return
        lane.failures = 0
        lane.retry_at = None
        await self._backlog.decide(decisions)
        now = self._clock.now()
        for item in items:
            self.stats.verdict_latency.observe((now - item.received_at).total_seconds())
        if any(d.state is WorkState.INTERESTED for d in decisions):
            lane.turn_wake.set()

    def _unjudgeable(
        self, st: Storyteller, items: Sequence[WorkItem], triggers: Sequence[Trigger]
    ) -> list[Decision] | None:
        """Decisions for a batch that must not reach the model now (pause, no key), or None."""
        reason = self._pause_stage(st, triggers[0]) or self._api_key_stage(st, triggers[0])
        if reason is None:
            return None
        stage = "pause" if st.paused else "api_key"
        for trigger in triggers:
            self._drop(st, trigger, stage, reason)
        return [Decision(i.id, WorkState.FILTERED, reason, stage) for i in items]

    async def _judge(
        self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem], triggers: Sequence[Trigger]
    ) -> list[Decision] | None:
        """Repeats from memory, the rest from one model request; None if the request failed."""
        now = self._clock.monotonic()
        keys = [_repeat_key(t) for t in triggers]
        inherited: dict[int, tuple[str, int]] = {}  # index → (rule, index or -item id of first)
        ask: list[int] = []
        first_in_batch: dict[str, int] = {}
        remembered: dict[int, Judged] = {}
        ruled: dict[int, AttentionRule] = {}
        for index, (item, key) in enumerate(zip(items, keys, strict=True)):
            by_rule = lane.rules.decide(
                st.attention_rules, item.kind, item.room_id, _rule_text(triggers[index]), now
            )
            match = lane.repeats.match(key, item.room_id, now) if by_rule is None else None
            if by_rule is not None:
                ruled[index] = by_rule
            elif match is not None:
                repeat, judged = match
                inherited[index] = (repeat.rule, -1)
                remembered[index] = judged
            elif key is not None and key in first_in_batch:
                first = first_in_batch[key]
                same_room = items[first].room_id == item.room_id
                window = self._cfg.room_repeat_seconds if same_room else self._cfg.repeat_seconds
                if window > 0:
                    inherited[index] = (REPEATED_IN_ROOM if same_room else HEARD_ELSEWHERE, first)
                else:
                    ask.append(index)
            else:
                if key is not None:
                    first_in_batch.setdefault(key, index)
                ask.append(index)
        verdicts: dict[int, Verdict] = {}
        if ask:
            asked = [triggers[i] for i in ask]
            refusal = await self._admitted(st, asked[0])
            if refusal is not None:
                for i in range(len(items)):
                    self._drop(st, triggers[i], *refusal)
                return [Decision(i.id, WorkState.FILTERED, refusal[1], refusal[0]) for i in items]
            if any(t.kind is TriggerKind.SPEECH for t in asked):
                await self._speech_caught_up()
            self.stats.batch_sizes.observe(len(asked))
            try:
                answers = await self._runner.judge(st, asked)
            except BudgetExceeded as exc:  # the cap was reached during this batch
                for i in range(len(items)):
                    self._drop(st, triggers[i], "budget", str(exc))
                return [Decision(i.id, WorkState.FILTERED, str(exc), "budget") for i in items]
            except Exception as exc:
                await self._attention_failed(st, lane, items, exc)
                return None
            verdicts.update(zip(ask, answers, strict=True))
        decisions: list[Decision] = []
        for index, item in enumerate(items):
            trigger = triggers[index]
            rule: str | None = None
            if index in ruled:
                by = ruled[index]
                self.stats.filtered[f"rule:{by.name}"] += 1
                attend = by.action is RuleAction.ATTEND
                verdict: Verdict = _Inherited(attend, f"attention rule {by.name}")
                decisions.append(self._decision(st, item, trigger, verdict, f"rule:{by.name}"))
                continue
            if index in inherited:
                rule, first = inherited[index]
                if first >= 0:
                    base = verdicts[first]
                    verdict = _Inherited(base.interested, base.reason, base.violation)
                    source = items[first].id
                else:
                    judged = remembered[index]
                    verdict = _Inherited(judged.interested, judged.reason)
                    source = judged.item_id
                self.stats.filtered[rule] += 1
                reason = f"same text as work item {source}"
                verdict = _Inherited(
                    verdict.interested, verdict.reason or reason, verdict.violation
                )
            else:
                verdict = verdicts[index]
                if verdict.violation is None:
                    lane.repeats.remember(
                        keys[index],
                        Judged(item.id, item.room_id, now, verdict.interested, verdict.reason),
                    )
            decisions.append(self._decision(st, item, trigger, verdict, rule))
        return decisions

    def _decision(
        self, st: Storyteller, item: WorkItem, trigger: Trigger, verdict: Verdict, rule: str | None
    ) -> Decision:
        self._observer.judged(st, trigger, verdict)
        self.stats.events_judged += 1
        if verdict.violation:
            self.stats.verdicts["violation"] += 1
            self._drop(st, trigger, "attention", f"contract violation: {verdict.violation}")
            return Decision(item.id, WorkState.VIOLATION, verdict.violation, rule)
        if not verdict.interested:
            self.stats.verdicts["ignore"] += 1
            self._drop(
                st,
                trigger,
                "attention",
                f"ignored: {verdict.reason}" if verdict.reason else "ignored",
            )
            return Decision(item.id, WorkState.IGNORED, verdict.reason or None, rule)
        self.stats.verdicts["interested"] += 1
        return Decision(item.id, WorkState.INTERESTED, verdict.reason, rule)

    async def _attention_failed(
        self, st: Storyteller, lane: _Lane, items: Sequence[WorkItem], exc: Exception
    ) -> None:
        """A failed request: its events stay pending; wait before the next pass."""
        await self._backlog.count_attempt([i.id for i in items])
        self.stats.attention_failures += 1
        lane.more = True
        log.warning(
            "attention request of storyteller %s failed (%s: %s); its %d events stay pending",
            st.name,
            type(exc).__name__,
            exc,
            len(items),
        )
        if self._alerts is not None:
            self._alerts.alert(
                "attention_failed",
                f"{st.name}: attention requests are failing",
                f"{type(exc).__name__}: {exc}\n\nThe events stay in the storyteller's backlog "
                "and are judged once requests succeed again; events older than "
                "[attention] max_age_seconds are expired. Check the model endpoint and "
                "`storyteller doctor`.",
                severity="warning",
                key=f"attention_failed:{st.id}",
            )
        self._back_off(lane)

    def _back_off(self, lane: _Lane) -> None:
        """Start no pass before a delay that doubles with each failure in a row.

        Requests in flight together that fail in the same outage count once: a failure while
        the lane is already waiting out a delay does not lengthen it.
        """
        if lane.retry_at is not None and lane.retry_at > self._clock.monotonic():
            return
        lane.failures += 1
        delay = min(RETRY_CAP_SECONDS, self._cfg.retry_seconds * 2 ** (lane.failures - 1))
        lane.retry_at = self._clock.monotonic() + delay

    async def _expire(self, st: Storyteller, lane: _Lane) -> None:
        """The maximum-age policy: expire what waited too long, count it and alert."""
        if self._cfg.max_age_seconds <= 0 or st.id is None:
            return
        now = self._clock.monotonic()
        if lane.expired_at is not None and now - lane.expired_at < EXPIRY_EVERY_SECONDS:
            return
        lane.expired_at = now
        cutoff = self._clock.now() - timedelta(seconds=self._cfg.max_age_seconds)
        reason = f"not judged within {self._cfg.max_age_seconds:g} s of arrival"
        expired = await self._backlog.expire(st.id, received_before=cutoff, reason=reason)
        if not expired:
            return
        self.stats.drop("expired", len(expired))
        log.warning(
            "storyteller %s: %d events expired unjudged (%s)", st.name, len(expired), reason
        )
        if self._alerts is not None:
            self._alerts.alert(
                "work_expired",
                f"{st.name}: {len(expired)} events expired before they were judged",
                "The attention model could not keep up, or kept failing, for longer than "
                "[attention] max_age_seconds. What helps: fix a failing endpoint (`storyteller "
                "doctor`), use a faster attention model, raise max_batch_events, or narrow the "
                "storyteller's surveillance and subscriptions.",
                severity="warning",
                key=f"work_expired:{st.id}",
            )

    # ------------------------------------------------------------------ turns

    async def _turn_loop(self, storyteller_id: int, lane: _Lane) -> None:
        while True:
            await lane.turn_wake.wait()
            if self._stopping:
                return
            lane.turn_wake.clear()
            lane.turn_active = True
            try:
                while await self._next_turn(storyteller_id, lane):
                    pass
            except Exception:  # a failing claim or a bug: the work stays in the backlog
                log.exception("turn stage failed for storyteller %s", storyteller_id)
                lane.turn_wake.set()
                await self._clock.sleep(self._cfg.retry_seconds)
            finally:
                lane.turn_active = False
                await self._changed()

    async def _next_turn(self, storyteller_id: int, lane: _Lane) -> bool:
        """Run the next turn of a storyteller; False when there is none (or shutdown began)."""
        st = self.router.storyteller(storyteller_id)
        if st is None or self._stopping:
            return False
        limit = 1 if self._cfg.one_call_per_event else self._cfg.max_turn_events
        claim = await self._backlog.claim_turn(storyteller_id, turn_key_of(st), limit)
        if claim is None:
            return False
        trigger = _claimed_trigger(claim)
        if claim.attempt > 1:
            log.warning(
                "storyteller %s: re-running turn %s, interrupted by a stop or crash",
                st.name,
                claim.turn_key,
            )
            await self._runner.interrupted(st, trigger, claim.turn_key, claim.attempt)
        if st.paused:  # pause is a master switch: waiting work does not run either
            await self._end_turn(claim, st, trigger, "pause", "storyteller was paused")
            return True
        refusal = await self._admitted(st, trigger)
        if refusal is not None:
            await self._end_turn(claim, st, trigger, *refusal)
            return True
        now = self._clock.now()
        for item in claim.items:
            self.stats.turn_latency.observe((now - item.received_at).total_seconds())
        lane.running_turn = True
        self._observer.turn_started(st, trigger)
        outcome: TurnOutcome | None = None
        state, reason = WorkState.FAILED, "crashed"
        cut_off = False
        try:
            outcome = await self._runner.run_turn(st, trigger, claim.turn_key)
            self.stats.turns[outcome.outcome] += 1
            failed = outcome.outcome in FAILED_OUTCOMES
            state = WorkState.FAILED if failed else WorkState.DONE
            reason = outcome.outcome
            if outcome.outcome == "model_transient_error":
                self._alert_transient(st)
        except asyncio.CancelledError:
            cut_off = True
            raise  # left running: the next start runs the turn again under the same key
        except Exception:
            self.stats.turns["crashed"] += 1
            log.exception("turn %s of storyteller %s crashed", claim.turn_key, st.name)
        finally:
            lane.running_turn = False
            if cut_off:
                log.warning(
                    "storyteller %s: turn %s cut off by the stop; the next start runs it again",
                    st.name,
                    claim.turn_key,
                )
            else:
                self._observer.turn_finished(st, trigger, outcome)
            await self._changed()
        await self._backlog.finish_turn(claim.turn_key, state, reason)
        return True

    async def _end_turn(
        self, claim: TurnClaim, st: Storyteller, trigger: Trigger, stage: str, reason: str
    ) -> None:
        for each in trigger.all:
            self._drop(st, each, stage, reason)
        # Refused before any model call (paused, over budget, idle): filtered, not failed.
        await self._backlog.finish_turn(claim.turn_key, WorkState.FILTERED, reason, rule=stage)

    def _alert_transient(self, st: Storyteller) -> None:
        if self._alerts is None:
            return
        self._alerts.alert(
            "turn_transient",
            f"{st.name}: a turn failed on a temporary model error",
            "The endpoint kept failing (rate limit, server error or timeout) after retries, so "
            "the turn ended early; its events are marked failed. Repeats of this alert mean "
            "the endpoint is struggling: check its status and the [model] timeouts.",
            severity="warning",
            key=f"turn_transient:{st.id}",
        )

    async def _admitted(self, storyteller: Storyteller, trigger: Trigger) -> tuple[str, str] | None:
        """None when `Admission` lets the trigger reach a model, else the stage and reason."""
        if self._admission is None or storyteller.id is None:
            return None
        watched = self.router.cells_of(storyteller.id)
        return await self._admission.admit(storyteller, trigger, watched)

    # ------------------------------------------------------------------ bookkeeping

    def _drop(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        self.stats.drop(stage)
        self._observer.dropped(storyteller, trigger, stage, reason)

    # ------------------------------------------------------------------ speech history

    def _remember_speech(self, event: Speech) -> None:
        if self._speech is None:
            return
        try:
            self._unrecorded.put_nowait(event)
        except asyncio.QueueFull:
            self.stats.drop("speech_history")
            lost = self.stats.dropped["speech_history"]
            if lost & (lost - 1) == 0:  # 1st, 2nd, 4th, 8th...: a flood stays a few lines
                log.warning(
                    "speech history buffer full; %d speeches lost so far (room #%s last)",
                    lost,
                    event.cell_id,
                )
            return
        self._speech_taken += 1

    async def _speech_caught_up(self) -> None:
        """Return once every speech taken in so far has been written (or has failed to be)."""
        target = self._speech_taken
        async with self._speech_progress:
            await self._speech_progress.wait_for(lambda: self._speech_done >= target)

    async def _speech_writer(self, recorder: SpeechRecorder) -> None:
        while True:
            events = [await self._unrecorded.get()]
            while not self._unrecorded.empty():  # what piled up goes in one transaction
                events.append(self._unrecorded.get_nowait())
            try:
                await self._record_speech(recorder, events)
            finally:
                for _ in events:
                    self._unrecorded.task_done()
                self._speech_done += len(events)
                async with self._speech_progress:
                    self._speech_progress.notify_all()

    @staticmethod
    async def _record_speech(recorder: SpeechRecorder, events: list[Speech]) -> None:
        if len(events) > 1:
            try:
                await recorder.record_many(events)
                return
            except Exception:  # one bad line must not lose the others: write them one by one
                log.warning("could not record %d speeches at once; one by one", len(events))
        for event in events:
            try:
                await recorder.record(event)
            except Exception:  # a failed write loses one line, never the pipeline
                log.exception("could not record a speech in room #%s", event.cell_id)


def _rule_text(trigger: Trigger) -> str:
    """What an attention rule's pattern is searched in: the text, or a crime's type."""
    event = trigger.event
    if isinstance(event, RoomEcho | Speech):
        return event.text
    if isinstance(event, Crime):
        return event.crime_type
    return trigger.text


def _repeat_key(trigger: Trigger) -> str | None:
    """Echoes and speech can be repeats; crimes and the rest are always judged."""
    event = trigger.event
    if isinstance(event, RoomEcho):
        return repeat_key("echo", event.text)
    if isinstance(event, Speech):
        return repeat_key(f"speech:{event.speaker_id}", event.text)
    if isinstance(event, Crime):
        return None
    return None


def turn_key_of(st: Storyteller) -> Callable[[Sequence[WorkItem]], str]:
    """How a claimed set of items is named: the same set always gets the same key.

    One event gets ``st<id>:event:<cursor>`` (what `turns.turn_key` gives it); a burst adds
    ``+<n>`` for the n further events, as the attention run of the same burst does.
    """

    def make(items: Sequence[WorkItem]) -> str:
        first = items[0].source
        if first.startswith(("direct:", "heartbeat:")):
            return f"st{st.id}:{first}"
        cursor = first.split(":", 1)[1]  # the source is "<world>:<epoch>:<seq>"
        extra = f"+{len(items) - 1}" if len(items) > 1 else ""
        return f"st{st.id}:event:{cursor}{extra}"

    return make


def _claimed_trigger(claim: TurnClaim) -> Trigger:
    """The trigger of a claimed turn: the oldest item, the rest coalesced into it."""
    triggers = []
    for item in claim.items:
        trigger = decode_trigger(json.loads(item.payload))
        if item.kind in ("room_echo", "speech", "crime"):
            trigger = replace(trigger, attention_reason=item.reason or "")
        triggers.append(trigger)
    return replace(triggers[0], coalesced=tuple(triggers[1:]))
