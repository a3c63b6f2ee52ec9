"""Each storyteller's lane, and the state the pipeline's stages share.

`_Lane` is one storyteller's in-memory view of its backlog and of its two tasks.
`PipelineState` is the base of the stage classes (intake, attention, turns, speech history):
it holds the collaborators, lanes, counters and conditions they all work on and the helpers
more than one of them calls (dropping a trigger, the pause and API-key stages, admission,
telling waiters of progress), and declares the steps one stage takes from another, which
`Pipeline` brings together.
"""

from __future__ import annotations

import abc
import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.turn_runner import TurnRunner
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.attention_rules import RuleBook
from storyteller_daemon.domain.repeats import RepeatMemory
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.runtime.pipeline.plan_waits import PlanWaits
from storyteller_daemon.runtime.pipeline.ports import (
    Admission,
    Backlog,
    Observer,
    PlanReader,
    SpeechRecorder,
    VerdictMemory,
)
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.runtime.pipeline.settled import MemoryLane, SettledVerdicts
from storyteller_daemon.runtime.stats import RuntimeStats
from world_adapter.events import Speech, WorldEvent

log = logging.getLogger(__package__)
"""The pipeline's one logger, named after the package: every stage logs under that name."""

SPEECH_BUFFER = 256
"""Speech events waiting to be written to the history before new ones are dropped."""


@dataclass
class _Lane:
    """One storyteller's in-memory view of its backlog, and its two tasks."""

    repeats: RepeatMemory
    rules: RuleBook = field(default_factory=RuleBook)
    plan_waits: PlanWaits = field(default_factory=PlanWaits)
    memory: MemoryLane = field(default_factory=MemoryLane)
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
    active_at: float | None = None
    """When work last arrived, or a pass or turn last ended (monotonic): quiet time counts
    from here (see `Pipeline.quiet_for`)."""
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @property
    def busy_judging(self) -> bool:
        """Whether an attention pass is in flight."""
        return self.passes > 0

    @property
    def busy(self) -> bool:
        """Whether it has work: events waiting or being judged, a turn waiting or running."""
        return (
            self.pending > 0
            or self.more
            or self.busy_judging
            or self.turn_active
            or self.running_turn
            or self.turn_wake.is_set()
        )


class PipelineState(abc.ABC):
    """The collaborators, lanes and progress signals every stage of the pipeline works on."""

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
        self._plans = plans
        """Where the waits of planning storytellers' plans are read (`PlanWaits`)."""
        hours = 0.0 if self._cfg.one_call_per_event else self._cfg.verdict_memory_hours
        self._settled = SettledVerdicts(verdict_memory, hours)
        """Ignore verdicts kept to settle repeats without a model call (never in the reference
        design, which judges every event)."""
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
        self._started_at: float | None = None
        """When `Pipeline.run` began (monotonic); None while it does not run."""
        self.turn_listeners: list[Callable[[str], None]] = []
        """Told the key of each turn once its end is stored (ran, failed, or refused by a last
        check); they must not block or raise (the daemon's invocation outcomes)."""

    def _turn_ended(self, turn_key: str) -> None:
        for listener in self.turn_listeners:
            listener(turn_key)

    def stopping(self) -> bool:
        """Whether a clean stop has begun (`stop_intake`)."""
        return self._stopping

    def _touch(self, lane: _Lane) -> None:
        """Note activity on a lane (quiet time starts over)."""
        lane.active_at = self._clock.monotonic()

    async def _changed(self) -> None:
        async with self._progress:
            self._progress.notify_all()

    def _drop(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        self.stats.drop(stage)
        self._observer.dropped(storyteller, trigger, stage, reason)

    @staticmethod
    def _pause_stage(storyteller: Storyteller, trigger: Trigger) -> str | None:
        return "storyteller is paused" if storyteller.paused else None

    def _api_key_stage(self, storyteller: Storyteller, trigger: Trigger) -> str | None:
        return None if self.model_available else "no model API key configured"

    async def _admitted(self, storyteller: Storyteller, trigger: Trigger) -> tuple[str, str] | None:
        """None when `Admission` lets the trigger reach a model, else the stage and reason."""
        if self._admission is None or storyteller.id is None:
            return None
        watched = self.router.cells_of(storyteller.id)
        return await self._admission.admit(storyteller, trigger, watched)

    @abc.abstractmethod
    def _ensure_lane(self, storyteller: Storyteller) -> _Lane:
        """The storyteller's lane, created if new; its tasks start once the pipeline runs."""

    @abc.abstractmethod
    def _remember_speech(self, event: Speech) -> None:
        """Hand one speech to the speech-history writer."""

    @abc.abstractmethod
    async def _speech_caught_up(self) -> None:
        """Return once every speech taken in so far has been written (or has failed to be)."""
