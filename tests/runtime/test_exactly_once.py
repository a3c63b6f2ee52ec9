"""Every turn exactly once: stops and crashes at each step of a turn, through the real runner.

The pipeline runs the real agent turn runner (prompt, tool loop, built-in tools, the run
recorder with its unit of work and the turn journal) on a real SQLite database, with a scripted
model. A stop (SIGTERM: intake closed, then the drain deadline cancels what is left) or a crash
(the tasks cancelled where they stand, nothing marked) is made to land at a chosen step by
holding that step on an event; the next start must then neither run a completed turn again nor
write anything twice, and must ask the model nothing it was answered before.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.storage.turn_journal import TurnJournalRepository
from storyteller_daemon.testing import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock, eventually
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.turns import store_services, turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
USAGE = Usage(100, 0, 10, 0)
MAREN = 1001
SITUATION = {
    "Title": "Crates on the quay",
    "Description": "Maren waits for a night shipment.",
    "CharacterId": None,
    "RoomId": 101,
}
MEMORY = {"Id": MAREN, "Title": "Night crates", "Details": "Expects crates.", "Importance": None}


def acting() -> ScriptedModel:
    """Round 1 writes a situation and a memory; round 2 closes the turn with Noop."""
    return ScriptedModel(
        calls(("CreateSituation", SITUATION), ("CreateMemory", MEMORY), usage=USAGE),
        calls(("Noop", {}), usage=USAGE),
    )


class Held:
    """A step held on an event: `reached` is set when a task gets there, `release` lets it on."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.release = asyncio.Event()

    async def hold(self) -> None:
        self.reached.set()
        await self.release.wait()


class Wrapped:
    """Forwards every attribute to `inner`, with `method` held before or after it runs."""

    def __init__(
        self, inner: Any, method: str, held: Held, *, after: bool, when: Callable[..., bool]
    ) -> None:
        self._inner, self._method, self._held, self._after = inner, method, held, after
        self._when = when

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if name != self._method:
            return value

        async def wrapped(*args: Any, **kwargs: Any) -> Any:
            held = self._when(*args, **kwargs)
            if held and not self._after:
                await self._held.hold()
            result = await value(*args, **kwargs)
            if held and self._after:
                await self._held.hold()
            return result

        return wrapped


class Quiet:
    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        pass

    def judged(self, storyteller: Storyteller, trigger: Trigger, verdict: object) -> None:
        pass

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        pass

    def turn_finished(self, storyteller: Storyteller, trigger: Trigger, outcome: object) -> None:
        pass


@dataclass
class Start:
    """One start of the daemon's pipeline."""

    pipeline: Pipeline
    model: ScriptedModel
    alerts: RecordedAlerts
    task: asyncio.Task[None]


@dataclass
class Daemon:
    store: Store
    clock: FakeClock = field(default_factory=lambda: FakeClock(T0))
    starts: list[Start] = field(default_factory=list)
    storyteller: Storyteller | None = None

    async def start(
        self,
        model: ScriptedModel,
        *,
        retries: int = 3,
        wrap: Callable[[str, Any], Any] = lambda _name, inner: inner,
    ) -> Start:
        """Start a pipeline over the store; `wrap(name, component)` may hold one of its steps
        (names: ``situations``, ``memories``, ``runs``, ``backlog``, ``journal``)."""
        db = self.store.db
        if self.storyteller is None:
            st = await self.store.storytellers.create("Watch")
            self.storyteller = await self.store.storytellers.save(replace(st, paused=False))
        router = Router()
        router.update([self.storyteller], {1: frozenset({101, 102})})
        journal = wrap("journal", TurnJournalRepository(db, self.clock))
        recorder = RunRecorder(
            wrap("runs", RunRepository(db)),
            LedgerRepository(db),
            self.clock,
            unit=db.unit,
            journal=journal,
        )
        world = SimWorld.harbour_town()
        services = store_services(
            self.store,
            world,
            "plans",
            "claims",
            situations=wrap("situations", self.store.situations),
            memories=wrap("memories", self.store.memories),
            journal=journal,
        )
        runner = turn_runner(
            self.store, world, model, services=services, clock=self.clock, recorder=recorder
        )
        alerts = RecordedAlerts()
        pipeline = wired_pipeline(
            self.store,
            runner=runner,
            clock=self.clock,
            router=router,
            attention=AttentionConfig(quiet_seconds=0, max_wait_seconds=0, turn_retries=retries),
            observer=Quiet(),
            alerts=alerts,
            wrap_backlog=lambda backlog: wrap("backlog", backlog),
        ).pipeline
        start = Start(pipeline, model, alerts, asyncio.create_task(pipeline.run()))
        self.starts.append(start)
        await until(lambda: pipeline.restored)
        return start

    async def crash(self, start: Start) -> None:
        """Cancel the tasks where they stand, as a kill would (nothing more is marked)."""
        start.task.cancel()
        await asyncio.gather(start.task, return_exceptions=True)

    async def stop(self, start: Start) -> None:
        """What SIGTERM does once the drain deadline passed: intake closed, then cancelled."""
        start.pipeline.stop_intake()
        await self.crash(start)

    async def states(self) -> list[WorkState]:
        assert self.storyteller is not None and self.storyteller.id is not None
        items = await BacklogRepository(self.store.db, self.store.clock).items(self.storyteller.id)
        return [i.state for i in reversed(items)]

    async def counts(self) -> tuple[int, int, int]:
        """Situations, memories and completed turn records."""
        assert self.storyteller is not None and self.storyteller.id is not None
        sid = self.storyteller.id
        situations = await self.store.situations.list(sid, include_resolved=True)
        memories = await self.store.memories.list(sid)
        completed = await RunRepository(self.store.db).list(outcome="completed", limit=100)
        return len(situations), len(memories), len(completed)


async def until(condition: Callable[[], object]) -> None:
    """Let the loop (and the database thread) run until `condition()` holds (bounded by the
    loop's own time, not by a number of yields a loaded machine can outrun)."""
    await eventually(lambda: bool(condition()), "the condition")


@pytest.fixture
async def daemon(store: Store) -> AsyncIterator[Daemon]:
    """On SQLite and PostgreSQL."""
    d = Daemon(store)
    try:
        yield d
    finally:
        for start in d.starts:
            await d.crash(start)


def holding(
    name: str,
    method: str,
    held: Held,
    *,
    after: bool = True,
    when: Callable[..., bool] = lambda *_, **__: True,
) -> Any:
    def wrap(component: str, inner: Any) -> Any:
        if component != name:
            return inner
        return Wrapped(inner, method, held, after=after, when=when)

    return wrap


async def invoke(start: Start, daemon: Daemon) -> None:
    assert daemon.storyteller is not None
    assert await start.pipeline.direct(daemon.storyteller, "Check on the quay.")


@pytest.mark.parametrize(
    ("component", "method"),
    [
        ("journal", "note"),  # the last round's answer kept, the turn not yet ended
        ("runs", "add"),  # the record written, not committed
        ("backlog", "finish_turn"),  # the items ended, not committed
    ],
    ids=["after the last round", "after the record", "after the items"],
)
async def test_a_stop_at_each_step_of_a_turns_end_neither_repeats_nor_loses_it(
    daemon: Daemon, component: str, method: str
) -> None:
    held = Held()

    def last_round(*args: Any, **_: Any) -> bool:  # the journal's note of round 2 (a Noop)
        return component != "journal" or args[1] == "round:2"

    first = await daemon.start(acting(), wrap=holding(component, method, held, when=last_round))
    await invoke(first, daemon)
    await held.reached.wait()
    first.pipeline.stop_intake()  # SIGTERM; the drain deadline passes while the step is held
    first.task.cancel()
    if component != "journal":  # a completion under way is finished, not cut: it waits
        await asyncio.sleep(0.01)
        assert not first.task.done()
    held.release.set()
    await asyncio.gather(first.task, return_exceptions=True)

    second = await daemon.start(ScriptedModel())  # asking it anything would fail the turn
    await second.pipeline.wait_idle()
    assert second.model.requests == []
    assert await daemon.states() == [WorkState.DONE]
    assert await daemon.counts() == (1, 1, 1)


async def test_the_drain_waits_for_a_finished_turn_to_be_written(daemon: Daemon) -> None:
    held = Held()
    first = await daemon.start(acting(), wrap=holding("backlog", "finish_turn", held))
    await invoke(first, daemon)
    await held.reached.wait()
    first.pipeline.stop_intake()
    drain = asyncio.create_task(first.pipeline.drain())
    await asyncio.sleep(0.01)
    assert not drain.done()  # the turn counts as running until its end is written
    held.release.set()
    await drain
    await daemon.crash(first)
    second = await daemon.start(ScriptedModel())
    await second.pipeline.wait_idle()
    assert second.model.requests == [] and await daemon.counts() == (1, 1, 1)


@pytest.mark.parametrize("cut", ["crash", "stop"])
async def test_a_cut_between_two_built_in_writes_writes_each_once(daemon: Daemon, cut: str) -> None:
    held = Held()
    first = await daemon.start(acting(), wrap=holding("memories", "create", held, after=False))
    await invoke(first, daemon)
    await held.reached.wait()  # the situation is written, the memory not yet
    await (daemon.crash(first) if cut == "crash" else daemon.stop(first))
    assert (await daemon.counts())[:2] == (1, 0)
    assert await daemon.states() == [WorkState.RUNNING]

    # Round 1 comes from the journal: only round 2 is asked (a Noop); the situation is not
    # written again and the memory is written once.
    second = await daemon.start(ScriptedModel(calls(("Noop", {}), usage=USAGE)))
    await second.pipeline.wait_idle()
    assert len(second.model.requests) == 1
    assert await daemon.states() == [WorkState.DONE]
    assert await daemon.counts() == (1, 1, 1)
    [record] = await RunRepository(daemon.store.db).list(outcome="completed")
    calls_made = (await RunRepository(daemon.store.db).get(record.id)).record["turn"]["calls"]
    assert [(c["name"], c["replayed"]) for c in calls_made] == [
        ("CreateSituation", True),
        ("CreateMemory", False),
        ("Noop", False),
    ]
    assert (
        await TurnJournalRepository(daemon.store.db, daemon.store.clock).entries(record.turn_key)
        == {}
    )


async def test_a_crash_inside_a_built_in_write_leaves_neither_the_write_nor_its_result(
    daemon: Daemon,
) -> None:
    held = Held()
    first = await daemon.start(acting(), wrap=holding("situations", "create", held))
    await invoke(first, daemon)
    await held.reached.wait()  # the situation is written in the unit, not committed
    await daemon.crash(first)
    assert (await daemon.counts())[:2] == (0, 0)  # rolled back with its journal entry
    second = await daemon.start(ScriptedModel(calls(("Noop", {}), usage=USAGE)))
    await second.pipeline.wait_idle()
    assert len(second.model.requests) == 1  # round 1 was kept; round 2 asked
    assert await daemon.counts() == (1, 1, 1)


async def blocked_model() -> tuple[ScriptedModel, Held]:
    """A model whose first request is held (the turn is then cut there)."""
    held = Held()

    async def wait(_request: object) -> Any:
        await held.hold()
        raise AssertionError("released")

    return ScriptedModel(wait), held


async def test_clean_stops_are_not_counted_but_crashes_are_and_end_in_an_alert(
    daemon: Daemon,
) -> None:
    model, held = await blocked_model()
    first = await daemon.start(model, retries=1)
    await invoke(first, daemon)
    await held.reached.wait()
    await daemon.stop(first)
    for _ in range(2):  # clean stops: run again, however often
        model, held = await blocked_model()
        again = await daemon.start(model, retries=1)
        await held.reached.wait()
        await daemon.stop(again)
    for _ in range(2):  # crashes: the first is retried, the second uses the last retry up
        model, held = await blocked_model()
        again = await daemon.start(model, retries=1)
        await held.reached.wait()
        await daemon.crash(again)
    last = await daemon.start(ScriptedModel(), retries=1)
    await last.pipeline.wait_idle()
    assert last.model.requests == []
    assert await daemon.states() == [WorkState.FAILED]
    [alert] = [a for a in last.alerts.alerts if a.kind == "turn_given_up"]
    interrupted = await RunRepository(daemon.store.db).list(outcome="interrupted")
    given_up = interrupted[0]
    assert f"run {given_up.id}" in alert.detail
    assert f"storyteller runs retry {given_up.id}" in alert.detail
    assert "given up after 2 interruptions" in (given_up.error or "")

    # Queued again (what `storyteller runs retry` does): it runs and completes.
    assert (
        len(await BacklogRepository(daemon.store.db, daemon.store.clock).retry(given_up.turn_key))
        == 1
    )
    retried = await daemon.start(acting(), retries=1)
    await retried.pipeline.wait_idle()
    assert await daemon.states() == [WorkState.DONE]
    assert await daemon.counts() == (1, 1, 1)


async def test_a_crashed_turn_alerts_with_its_key(daemon: Daemon) -> None:
    async def bug(_request: object) -> Any:
        raise RuntimeError("a bug in the turn")

    start = await daemon.start(ScriptedModel(bug))
    await invoke(start, daemon)
    await start.pipeline.wait_idle()
    assert await daemon.states() == [WorkState.FAILED]
    [alert] = [a for a in start.alerts.alerts if a.kind == "turn_crashed"]
    assert "storyteller runs retry st" in alert.detail
