"""The event pipeline: pause → API key → prefilter → attention → queue → tool loop → persist.

Each stage is a small method that either passes a trigger on or drops it with a reason, so each
can be tested alone. Intake never blocks: the first three stages are in-memory checks, and the
attention and turn stages run in per-storyteller tasks behind bounded buffers whose overflow is
counted and reported. Before the attention and turn stages call a model, an optional
`Admission` may still drop a trigger (a spent budget, a heartbeat with no player around), and a
heartbeat that fires while a turn of its storyteller is running is dropped as ``busy``.

Speech is also written to the rooms' speech history, once per event whoever hears it and
whether or not anyone is paused, by one background writer behind a bounded buffer (overflow is
counted as the ``speech_history`` drop). A batch holding speech waits for the writer to catch
up before it is judged, so a speech prompt's recent-speech context has every earlier line.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.settings import Heartbeat, Storyteller
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runtime.clock import Clock
from storyteller_daemon.runtime.routing import SUBSCRIPTION_FOR, Router
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.work_queue import WorkQueue
from world_adapter.events import Speech, WorldEvent

log = logging.getLogger(__name__)

ATTENTION_BATCH = 8
SPEECH_BUFFER = 256
"""Speech events waiting to be written to the history before new ones are dropped."""


class Verdict(Protocol):
    """What the attention gate says about one trigger."""

    @property
    def interested(self) -> bool:
        """True when the trigger matters to the storyteller."""
        ...

    @property
    def reason(self) -> str:
        """Why (appended to the main prompt when interested)."""
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
        """One verdict per trigger, in order."""
        ...

    async def run_turn(self, storyteller: Storyteller, trigger: Trigger) -> TurnOutcome:
        """Build the prompt, run the tool loop, persist the result."""
        ...


class SpeechRecorder(Protocol):
    """Where speech heard in watched rooms is kept (the speech history repository)."""

    async def record(self, event: Speech) -> object:
        """Store one speech."""
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


@dataclass
class _Lanes:
    attention: asyncio.Queue[Trigger]
    turns: WorkQueue[Trigger]
    tasks: list[asyncio.Task[None]]


class Pipeline:
    """Routes triggers through the stages for every storyteller."""

    def __init__(
        self,
        *,
        router: Router,
        runner: TurnRunner,
        clock: Clock,
        stats: RuntimeStats,
        observer: Observer,
        queue_size: int,
        model_available: bool,
        speech: SpeechRecorder | None = None,
        speech_buffer: int = SPEECH_BUFFER,
        admission: Admission | None = None,
    ) -> None:
        self.router = router
        self._runner = runner
        self._clock = clock
        self.stats = stats
        self._observer = observer
        self._queue_size = queue_size
        self.model_available = model_available
        self._lanes: dict[int, _Lanes] = {}
        self._group: asyncio.TaskGroup | None = None
        self._accepting = True
        self._speech = speech
        self._unrecorded: asyncio.Queue[Speech] = asyncio.Queue(maxsize=speech_buffer)
        self._speech_taken = 0
        self._speech_done = 0
        self._speech_progress = asyncio.Condition()
        self._admission = admission
        self._running: set[int] = set()
        """Storytellers with a turn in progress."""

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        """Own the per-storyteller tasks until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                if self._speech is not None:
                    group.create_task(self._speech_writer(self._speech), name="speech-history")
                for st in self.router.storytellers:
                    self._ensure_lanes(st)
                await asyncio.Event().wait()  # lanes run in the group; this waits for cancel
        finally:
            self._group = None
            self._lanes.clear()

    def stop_intake(self) -> None:
        """Refuse new triggers (shutdown has begun); running turns continue."""
        self._accepting = False

    async def drain(self) -> None:
        """Wait until the speech buffer, every attention buffer and turn queue are empty."""
        await self._unrecorded.join()
        for lanes in list(self._lanes.values()):
            await lanes.attention.join()
        for lanes in list(self._lanes.values()):
            await lanes.turns.wait_idle()

    def forget(self, storyteller_id: int) -> None:
        """Stop and drop the lanes of a storyteller that no longer exists."""
        lanes = self._lanes.pop(storyteller_id, None)
        if lanes is not None:
            for task in lanes.tasks:
                task.cancel()

    def queue_depth(self, storyteller_id: int) -> int:
        """Pending plus running turns of a storyteller."""
        lanes = self._lanes.get(storyteller_id)
        return lanes.turns.outstanding if lanes else 0

    def _ensure_lanes(self, storyteller: Storyteller) -> _Lanes:
        assert storyteller.id is not None
        sid = storyteller.id
        lanes = self._lanes.get(sid)
        if lanes is None:
            lanes = _Lanes(
                attention=asyncio.Queue(maxsize=self._queue_size * 2),
                turns=WorkQueue(
                    f"storyteller {sid}",
                    self._queue_size,
                    lambda trigger: self._turn_stage(sid, trigger),
                ),
                tasks=[],
            )
            self._lanes[sid] = lanes
        # Lanes made before `run` started get their tasks once the group exists.
        if self._group is not None and not lanes.tasks:
            lanes.tasks.append(self._group.create_task(self._attention_lane(sid, lanes)))
            lanes.tasks.append(self._group.create_task(lanes.turns.run()))
        return lanes

    # ------------------------------------------------------------------ intake

    def ingest(self, event: WorldEvent) -> None:
        """Offer a world event to every storyteller whose rooms and subscriptions cover it."""
        self.stats.events_in += 1
        if isinstance(event, Speech):
            self._remember_speech(event)
        for st in self.router.audience(event):
            self.offer(st, Trigger.from_event(event))

    def heartbeat(self, storyteller_id: int, heartbeat: Heartbeat) -> bool:
        """A heartbeat fired for a storyteller."""
        st = self.router.storyteller(storyteller_id)
        if st is None or heartbeat not in st.heartbeats:
            return False
        trigger = Trigger(TriggerKind.HEARTBEAT, occurred_at=self._clock.now(), heartbeat=heartbeat)
        if storyteller_id in self._running:  # a heartbeat must not pile onto work in progress
            self._drop(st, trigger, "busy", "a turn of this storyteller is running")
            return False
        return self.offer(st, trigger)

    def direct(self, storyteller: Storyteller, text: str) -> bool:
        """A direct invocation: True only if the turn was actually queued (FutureMUD §9.15)."""
        return self.submit_direct(storyteller, text) is None

    def submit_direct(self, storyteller: Storyteller, text: str) -> str | None:
        """A direct invocation: None when the turn was queued, else why it was refused."""
        if not text.strip():
            return "blank text"
        trigger = Trigger(TriggerKind.DIRECT, occurred_at=self._clock.now(), text=text.strip())
        return self._admit(storyteller, trigger)

    def offer(self, storyteller: Storyteller, trigger: Trigger) -> bool:
        """Run the synchronous stages; True when the trigger was accepted for the next stage."""
        return self._admit(storyteller, trigger) is None

    def _admit(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        """Run the synchronous stages; None when accepted, else the reason it was dropped."""
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
        lanes = self._ensure_lanes(storyteller)
        if trigger.needs_attention:
            try:
                lanes.attention.put_nowait(trigger)
            except asyncio.QueueFull:
                return self._overflow(storyteller, trigger, "attention buffer full")
            return None
        return self._queue_stage(storyteller, trigger)

    # ------------------------------------------------------------------ stages

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

    async def _attention_lane(self, storyteller_id: int, lanes: _Lanes) -> None:
        while True:
            batch = [await lanes.attention.get()]
            while len(batch) < ATTENTION_BATCH and not lanes.attention.empty():
                batch.append(lanes.attention.get_nowait())
            try:
                await self._attention_stage(storyteller_id, batch)
            except Exception:  # a failing gate call must not stop the lane
                log.exception("attention stage failed for storyteller %s", storyteller_id)
            finally:
                for _ in batch:
                    lanes.attention.task_done()

    async def _attention_stage(self, storyteller_id: int, batch: list[Trigger]) -> None:
        st = self.router.storyteller(storyteller_id)
        if st is None:
            return
        live = []
        for trigger in batch:  # settings may have changed while the trigger waited
            reason = self._pause_stage(st, trigger) or self._api_key_stage(st, trigger)
            if reason is None:
                live.append(trigger)
            else:
                self._drop(st, trigger, "pause" if st.paused else "api_key", reason)
        live = [t for t in live if await self._admitted(st, t)]
        if not live:
            return
        if any(t.kind is TriggerKind.SPEECH for t in live):
            await self._speech_caught_up()
        self.stats.attention_calls += 1
        try:
            verdicts = await self._runner.judge(st, live)
        except BudgetExceeded as exc:  # the cap was reached during this batch
            for trigger in live:
                self._drop(st, trigger, "budget", str(exc))
            return
        for trigger, verdict in zip(live, verdicts, strict=True):
            self._observer.judged(st, trigger, verdict)
            if verdict.violation:
                self.stats.verdicts["violation"] += 1
                self._drop(st, trigger, "attention", f"contract violation: {verdict.violation}")
            elif not verdict.interested:
                self.stats.verdicts["ignore"] += 1
                self._drop(st, trigger, "attention", f"ignored: {verdict.reason}")
            else:
                self.stats.verdicts["interested"] += 1
                self._queue_stage(st, replace(trigger, attention_reason=verdict.reason))

    def _queue_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        if self._ensure_lanes(storyteller).turns.submit(trigger):
            return None
        return self._overflow(
            storyteller, trigger, f"queue full ({self._queue_size} pending or running)"
        )

    async def _turn_stage(self, storyteller_id: int, trigger: Trigger) -> None:
        st = self.router.storyteller(storyteller_id)
        if st is None:
            return
        if st.paused:  # pause is a master switch: queued work does not run either
            self._drop(st, trigger, "pause", "storyteller was paused while the turn waited")
            return
        if not await self._admitted(st, trigger):
            return
        self._observer.turn_started(st, trigger)
        outcome: TurnOutcome | None = None
        self._running.add(storyteller_id)
        try:
            outcome = await self._runner.run_turn(st, trigger)
            self.stats.turns[outcome.outcome] += 1
        except Exception:
            self.stats.turns["crashed"] += 1
            raise
        finally:
            self._running.discard(storyteller_id)
            self._observer.turn_finished(st, trigger, outcome)

    async def _admitted(self, storyteller: Storyteller, trigger: Trigger) -> bool:
        """Whether `Admission` lets the trigger reach a model; a refusal is a drop."""
        if self._admission is None or storyteller.id is None:
            return True
        watched = self.router.cells_of(storyteller.id)
        refusal = await self._admission.admit(storyteller, trigger, watched)
        if refusal is not None:
            self._drop(storyteller, trigger, *refusal)
        return refusal is None

    # ------------------------------------------------------------------ bookkeeping

    def _drop(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        self.stats.drop(stage)
        self._observer.dropped(storyteller, trigger, stage, reason)

    def _overflow(self, storyteller: Storyteller, trigger: Trigger, reason: str) -> str:
        self.stats.queue_overflow[storyteller.name] += 1
        self._drop(storyteller, trigger, "queue", reason)
        return reason

    # ------------------------------------------------------------------ speech history

    def _remember_speech(self, event: Speech) -> None:
        if self._speech is None:
            return
        try:
            self._unrecorded.put_nowait(event)
        except asyncio.QueueFull:
            self.stats.drop("speech_history")
            log.warning("speech history buffer full; a speech in room #%s is lost", event.cell_id)
            return
        self._speech_taken += 1

    async def _speech_caught_up(self) -> None:
        """Return once every speech taken in so far has been written (or has failed to be)."""
        target = self._speech_taken
        async with self._speech_progress:
            await self._speech_progress.wait_for(lambda: self._speech_done >= target)

    async def _speech_writer(self, recorder: SpeechRecorder) -> None:
        while True:
            event = await self._unrecorded.get()
            try:
                await recorder.record(event)
            except Exception:  # a failed write loses one line, never the pipeline
                log.exception("could not record a speech in room #%s", event.cell_id)
            finally:
                self._unrecorded.task_done()
                self._speech_done += 1
                async with self._speech_progress:
                    self._speech_progress.notify_all()
