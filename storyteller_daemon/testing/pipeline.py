"""A ready-wired pipeline over a real store: a fake clock and a scripted runner unless given.

`wired_pipeline` builds the `Pipeline` the daemon would get, over the backlog of the store the
test passes in (SQLite or the suite's PostgreSQL: the database is never faked), with a
`FakeClock`, a `ScriptedTurnRunner` and an attention window that judges at once. Anything the
test cares about is a keyword; the rest is the production default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from storyteller_daemon.agent.turn_runner import TurnRunner
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.pipeline import (
    SPEECH_BUFFER,
    Admission,
    Backlog,
    Observer,
    Pipeline,
    SpeechRecorder,
)
from storyteller_daemon.runtime.pipeline.observers import LoggingObserver
from storyteller_daemon.runtime.pipeline.ports import PlanReader, VerdictMemory, WorkElsewhere
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.events import WorldEvent

AT_ONCE = AttentionConfig(quiet_seconds=0, max_wait_seconds=0)
"""Attention without a burst window: every event is judged as soon as it is stored."""


@dataclass
class WiredPipeline:
    """A pipeline and the parts a test looks at."""

    pipeline: Pipeline
    runner: TurnRunner
    """The runner (a `ScriptedTurnRunner` unless the test gave its own)."""
    clock: FakeClock
    backlog: BacklogRepository
    stats: RuntimeStats
    observer: Observer
    router: Router = field(repr=False)


def wired_pipeline(
    store: Store,
    *,
    runner: TurnRunner | None = None,
    clock: FakeClock | None = None,
    storytellers: Sequence[Storyteller] = (),
    zones: Mapping[int, Iterable[int]] | None = None,
    router: Router | None = None,
    attention: AttentionConfig = AT_ONCE,
    observer: Observer | None = None,
    stats: RuntimeStats | None = None,
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
    wrap_backlog: Callable[[BacklogRepository], Backlog] | None = None,
    everyone: Router | None = None,
    elsewhere: WorkElsewhere | None = None,
) -> WiredPipeline:
    """A pipeline over `store`'s backlog, not yet running (`pipeline.run()` runs it).

    Args:
        store: the real store whose backlog holds the work.
        runner: the turn runner (default: a `ScriptedTurnRunner` that attends to everything).
        clock: the clock (default: a new `FakeClock`).
        storytellers: routed at once, with `zones`; none by default (a daemon routes them).
        zones: zone → its cells, for the storytellers' surveillance.
        router: the routing table to use (default: a new one).
        attention: the attention settings (default: judge at once).
        observer: told of every step (default: a `LoggingObserver` on the clock).
        stats: the counters (default: new ones).
        queue_size, model_available, speech, speech_buffer, admission, alerts, source,
            observe, plans, verdict_memory, everyone, elsewhere: as `Pipeline` takes them.
        wrap_backlog: what the pipeline uses of the backlog repository (a test that holds or
            counts its calls); `WiredPipeline.backlog` stays the repository itself.
    """
    clock = clock or FakeClock()
    stats = stats or RuntimeStats()
    router = router or Router()
    if storytellers:
        router.update(storytellers, zones or {})
    chosen = runner if runner is not None else ScriptedTurnRunner()
    observer = observer or LoggingObserver(clock=clock, stats=stats)
    backlog = store.stamped_by(clock).backlog
    pipeline = Pipeline(
        router=router,
        runner=chosen,
        clock=clock,
        stats=stats,
        observer=observer,
        backlog=wrap_backlog(backlog) if wrap_backlog is not None else backlog,
        attention=attention,
        queue_size=queue_size,
        model_available=model_available,
        speech=speech,
        speech_buffer=speech_buffer,
        admission=admission,
        alerts=alerts,
        source=source,
        observe=observe,
        plans=plans,
        verdict_memory=verdict_memory,
        everyone=everyone,
        elsewhere=elsewhere,
    )
    return WiredPipeline(pipeline, chosen, clock, backlog, stats, observer, router)
