"""The pipeline over the durable backlog, with a scripted runner, a fake clock and real SQLite."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.storytellers import EventKind, Heartbeat, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.pipeline.ports import VerdictMemory
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock, eventually, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedOutcome, ScriptedTurnRunner
from world_adapter.events import CharacterState, Crime, Cursor, RoomEcho, StateChange

T0 = datetime(2026, 1, 1, tzinfo=UTC)
AT_ONCE = AttentionConfig(quiet_seconds=0, max_wait_seconds=0)


class Recorder:
    def __init__(self) -> None:
        self.drops: list[tuple[str, str]] = []
        self.finished = 0

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        self.drops.append((stage, reason))

    def judged(self, storyteller: Storyteller, trigger: Trigger, verdict: object) -> None:
        pass

    def turn_started(self, storyteller: Storyteller, trigger: Trigger) -> None:
        pass

    def turn_finished(self, storyteller: Storyteller, trigger: Trigger, outcome: object) -> None:
        self.finished += 1


WATCHER = Storyteller(
    name="Watch",
    id=1,
    paused=False,
    subscriptions=frozenset({EventKind.ROOM, EventKind.STATE, EventKind.CRIME}),
    heartbeats=frozenset({Heartbeat.TEN_MINUTES}),
    surveillance=Surveillance(zones=frozenset({1}), excluded=frozenset({108})),
)
ZONES = {1: frozenset({101, 102, 103, 104, 105, 106, 108})}


def echo(cell: int = 101, origin: str = "world", seq: int = 1, text: str | None = None) -> RoomEcho:
    return RoomEcho(
        cursor=Cursor("e", seq),
        cell_id=cell,
        zone_id=1,
        occurred_at=T0,
        text=text if text is not None else f"event {seq}",
        origin=origin,
    )


def crime(seq: int) -> Crime:
    return Crime(
        cursor=Cursor("e", seq),
        cell_id=101,
        zone_id=1,
        occurred_at=T0,
        crime_id=seq,
        crime_type="Theft",
        legal_authority="Harbour Ward",
        criminal_id=7,
        victim_id=None,
        witness_count=1,
    )


@dataclass
class Rig:
    pipeline: Pipeline
    runner: ScriptedTurnRunner
    recorder: Recorder
    clock: FakeClock
    backlog: BacklogRepository
    alerts: RecordedAlerts
    store: Store

    async def states(self) -> list[str]:
        return [i.state.value for i in reversed(await self.backlog.items(1))]


@dataclass
class Harness:
    store: Store
    clock: FakeClock = field(default_factory=lambda: FakeClock(T0))
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(
        self,
        attention: AttentionConfig = AT_ONCE,
        runner: ScriptedTurnRunner | None = None,
        storytellers: Sequence[Storyteller] = (WATCHER,),
        verdict_memory: VerdictMemory | None = None,
    ) -> Rig:
        alerts = RecordedAlerts()
        wired = wired_pipeline(
            self.store,
            runner=runner or ScriptedTurnRunner(),
            clock=self.clock,
            storytellers=storytellers,
            zones=ZONES,
            attention=attention,
            observer=(recorder := Recorder()),
            alerts=alerts,
            verdict_memory=verdict_memory,
        )
        pipeline, runner, backlog = wired.pipeline, wired.runner, wired.backlog
        self.tasks.append(asyncio.create_task(pipeline.run()))
        await settle()
        return Rig(pipeline, runner, recorder, self.clock, backlog, alerts, self.store)

    async def crash(self) -> None:
        """Cancel every pipeline task, as a kill would stop them (nothing more is stored)."""
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        self.tasks.clear()


@pytest.fixture
async def harness(sqlite_store: Store) -> AsyncIterator[Harness]:
    h = Harness(sqlite_store)
    try:
        yield h
    finally:
        await h.crash()


@pytest.fixture
async def rig(harness: Harness) -> Rig:
    return await harness.start()


def _text(trigger: Trigger) -> str:
    return str(getattr(trigger.event, "text", ""))


async def until(condition: object, clock: FakeClock | None = None, step: float = 0.0) -> None:
    """Let the loop (and the database thread) run until `condition()` holds: bounded by the
    loop's own time (`eventually`), or, stepping `clock`, by a number of steps."""
    assert callable(condition)
    if clock is None or not step:
        await eventually(lambda: bool(condition()), "the condition")
        return
    for _ in range(2000):
        if condition():
            return
        if clock is not None and step:
            await clock.advance(step)
        await asyncio.sleep(0.001)
    raise AssertionError("condition never held")


# ---------------------------------------------------------------------- the stages


async def test_interested_event_reaches_a_turn_with_the_reason(rig: Rig) -> None:
    assert await rig.pipeline.ingest(echo()) == 1
    await rig.pipeline.wait_idle()
    [trigger] = rig.runner.turn_triggers
    assert trigger.kind is TriggerKind.ROOM_ECHO and trigger.attention_reason == "matters"
    assert rig.runner.turns[0][1] == "st1:event:e:1"
    assert rig.pipeline.stats.verdicts["interested"] == 1
    assert rig.pipeline.stats.turns["completed"] == 1
    assert await rig.states() == ["done"]


async def test_ignored_and_violating_verdicts_are_recorded_and_counted(rig: Rig) -> None:
    rig.runner.verdict = AttentionVerdict(False, "")
    await rig.pipeline.ingest(echo())
    await rig.pipeline.wait_idle()
    rig.runner.verdict = AttentionVerdict(False, "", violation="no single verdict after a re-ask")
    await rig.pipeline.ingest(echo(seq=2))
    await rig.pipeline.wait_idle()
    assert rig.runner.turns == []
    assert rig.recorder.drops == [
        ("attention", "ignored"),
        ("attention", "contract violation: no single verdict after a re-ask"),
    ]
    assert rig.pipeline.stats.verdicts == {"ignore": 1, "violation": 1}
    assert await rig.states() == ["ignored", "violation"]


@pytest.mark.parametrize(
    ("urgent_kinds", "echo_state"),
    [(("crime",), "violation"), ((), "violation"), (("crime", "room_echo"), "done")],
)
async def test_urgent_kinds_fail_open_when_the_gate_cannot_judge_them(
    harness: Harness, urgent_kinds: tuple[str, ...], echo_state: str
) -> None:
    """Crimes always, and any kind the admin lists, get a turn after a contract violation."""
    rig = await harness.start(AT_ONCE.model_copy(update={"urgent_kinds": urgent_kinds}))
    rig.runner.verdict = AttentionVerdict(False, "", violation="no verdict from the batch")
    await rig.pipeline.ingest(crime(1))
    await rig.pipeline.wait_idle()
    await rig.pipeline.ingest(echo(seq=2))
    await rig.pipeline.wait_idle()
    [crime_item] = [i for i in await rig.backlog.items(1) if i.kind == "crime"]
    assert (crime_item.state, crime_item.rule) == (WorkState.DONE, "fail_open")
    assert [t.kind for t in rig.runner.turn_triggers][0] is TriggerKind.CRIME
    assert "broke the verdict contract" in (rig.runner.turn_triggers[0].attention_reason or "")
    [echo_item] = [i for i in await rig.backlog.items(1) if i.kind == "room_echo"]
    assert echo_item.state.value == echo_state
    failed_open = 2 if echo_state == "done" else 1
    assert +rig.pipeline.stats.verdicts == +Counter(
        {"fail_open": failed_open, "violation": 2 - failed_open}
    )


async def test_prefilter_drops_own_progs_excluded_rooms_and_unsubscribed_kinds(rig: Rig) -> None:
    await rig.pipeline.accept([echo(origin="prog"), echo(cell=108, seq=2)])
    rig.pipeline.router.update([replace(WATCHER, subscriptions=frozenset())], ZONES)
    await rig.pipeline.ingest(echo(seq=3))
    await rig.pipeline.wait_idle()
    assert rig.recorder.drops == [("prefilter", "caused by a storyteller's own prog")]
    assert rig.runner.judged == [] and await rig.states() == []
    assert rig.pipeline.stats.events_in == 3


async def test_excluded_room_gets_no_audience_at_all(rig: Rig) -> None:
    await rig.pipeline.accept([echo(cell=108), echo(cell=999, seq=2)])
    await rig.pipeline.wait_idle()
    assert rig.pipeline.stats.events_in == 2
    assert rig.runner.judged == [] and rig.recorder.drops == []


async def test_pause_is_a_master_switch(rig: Rig) -> None:
    paused = replace(WATCHER, paused=True)
    rig.pipeline.router.update([paused], ZONES)
    assert await rig.pipeline.ingest(echo()) == 0
    assert await rig.pipeline.direct(paused, "anything") is False
    assert await rig.pipeline.heartbeat(1, Heartbeat.TEN_MINUTES) is False
    assert {d[0] for d in rig.recorder.drops} == {"pause"}
    assert rig.runner.judged == [] and rig.runner.turns == []


async def test_pausing_while_a_turn_waits_stops_it(rig: Rig) -> None:
    rig.runner.release = asyncio.Event()
    assert await rig.pipeline.direct(WATCHER, "first")
    assert await rig.pipeline.direct(WATCHER, "second")
    await until(lambda: rig.pipeline.turn_running(1))  # the first turn is running
    rig.pipeline.router.update([replace(WATCHER, paused=True)], ZONES)
    rig.runner.release.set()
    await rig.pipeline.wait_idle()
    assert [t.text for t in rig.runner.turn_triggers] == ["first"]
    assert ("pause", "storyteller was paused") in rig.recorder.drops
    assert await rig.states() == ["done", "filtered"]


async def test_missing_api_key_is_a_silent_noop(rig: Rig) -> None:
    rig.pipeline.model_available = False
    await rig.pipeline.ingest(echo())
    assert await rig.pipeline.heartbeat(1, Heartbeat.TEN_MINUTES) is False
    assert await rig.pipeline.direct(WATCHER, "hello") is False
    await rig.pipeline.wait_idle()
    assert rig.runner.judged == [] and rig.runner.turns == []
    assert {d[0] for d in rig.recorder.drops} == {"api_key"}


async def test_state_changes_heartbeats_and_direct_skip_attention(rig: Rig) -> None:
    state = StateChange(
        cursor=Cursor("e", 5),
        cell_id=102,
        zone_id=1,
        occurred_at=T0,
        character_id=1001,
        state=CharacterState.DEAD,
    )
    await rig.pipeline.ingest(state)
    await rig.pipeline.wait_idle()
    assert await rig.pipeline.heartbeat(1, Heartbeat.TEN_MINUTES)
    await rig.pipeline.wait_idle()
    assert await rig.pipeline.heartbeat(1, Heartbeat.HOUR) is False  # not subscribed
    assert await rig.pipeline.direct(WATCHER, "  ") is False  # blank
    assert await rig.pipeline.direct(WATCHER, "the bells ring")
    await rig.pipeline.wait_idle()
    assert rig.runner.judged == []
    assert [t.label for t in rig.runner.turn_triggers] == [
        "Character State Dead",
        "Heartbeat 10m",
        "Direct Invocation",
    ]


async def test_a_heartbeat_while_a_turn_runs_is_dropped_as_busy(rig: Rig) -> None:
    rig.runner.release = asyncio.Event()
    await rig.pipeline.direct(WATCHER, "long turn")
    await until(lambda: rig.pipeline.turn_running(1))
    assert await rig.pipeline.heartbeat(1, Heartbeat.TEN_MINUTES) is False
    assert rig.recorder.drops == [("busy", "a turn of this storyteller is running")]
    rig.runner.release.set()
    await rig.pipeline.wait_idle()


async def test_direct_invocations_beyond_the_queue_size_are_refused(rig: Rig) -> None:
    rig.runner.release = asyncio.Event()
    accepted = [await rig.pipeline.direct(WATCHER, f"item {i}") for i in range(26)]
    assert accepted == [True] * 25 + [False]  # direct invocation reports the rejection
    assert rig.pipeline.stats.queue_overflow == {"Watch": 1}
    rig.runner.release.set()
    await rig.pipeline.wait_idle()
    assert len(rig.runner.turns) == 25  # direct invocations each get a turn of their own


async def test_after_stop_intake_nothing_new_is_accepted(rig: Rig) -> None:
    rig.pipeline.stop_intake()
    assert await rig.pipeline.direct(WATCHER, "late") is False
    assert await rig.pipeline.ingest(echo()) == 0
    assert rig.recorder.drops == [("intake", "shutting down")] * 2


async def test_routine_drops_and_ignores_stay_out_of_the_info_log_but_are_summed_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    from storyteller_daemon.runtime.pipeline.observers import LoggingObserver

    caplog.set_level(logging.INFO, logger="storyteller.activity")
    clock = FakeClock(T0)
    stats = RuntimeStats()
    observer = LoggingObserver(clock=clock, stats=stats)
    trigger = Trigger.from_event(echo())
    stats.heard[WATCHER.name] += 6
    stats.spend(WATCHER.name, 0.0123)
    observer.dropped(WATCHER, trigger, "api_key", "no model API key configured")
    observer.dropped(WATCHER, trigger, "pause", "storyteller is paused")
    for _ in range(3):
        observer.judged(WATCHER, trigger, AttentionVerdict(interested=False))
    observer.judged(WATCHER, trigger, AttentionVerdict(interested=True, reason="a theft"))
    observer.dropped(WATCHER, trigger, "expired", "unjudged for 900 s")
    assert [r.getMessage().split(": ", 1)[1] for r in caplog.records] == [
        "attention on Room Echo in room #101: interested",
        "Room Echo in room #101 dropped at expired (unjudged for 900 s)",
    ]
    await clock.advance(61.0)
    observer.turn_started(WATCHER, trigger)  # the next callback after a minute sums it up
    assert caplog.records[2].getMessage() == (
        f"{WATCHER.name}, last 61 s: 6 event(s) in; 4 judged (3 ignore, 1 interested); "
        "settled without a turn: api_key 1, expired 1, pause 1; 0 turn(s) started; "
        "$0.0123 spent"
    )


async def test_summaries_come_every_minute_quiet_or_not_and_at_the_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A storyteller that only heard events, or only spent, is summed up on the minute; a
    quiet minute logs nothing; the partial minute at the end is flushed."""
    import logging

    from storyteller_daemon.runtime.pipeline.observers import LoggingObserver

    caplog.set_level(logging.INFO, logger="storyteller.activity")
    clock = FakeClock(datetime(2026, 1, 1, tzinfo=UTC))
    stats = RuntimeStats()
    observer = LoggingObserver(clock=clock, stats=stats)
    task = asyncio.create_task(observer.run())
    await settle()
    stats.heard["Quay"] += 3
    stats.spend("Market", 0.5)
    await clock.advance(60)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [
        "Market, last 60 s: 0 event(s) in; 0 judged; 0 turn(s) started; $0.5000 spent",
        "Quay, last 60 s: 3 event(s) in; 0 judged; 0 turn(s) started; $0.0000 spent",
    ]
    await clock.advance(60)  # nothing happened: nothing logged
    assert len(caplog.records) == 2
    stats.heard["Quay"] += 1
    await clock.advance(10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    observer.flush()
    assert caplog.records[-1].getMessage().startswith("Quay, last 10 s: 1 event(s) in;")


# ---------------------------------------------------------------------- batches and windows


async def test_a_burst_is_judged_in_one_request_and_handled_in_one_turn(rig: Rig) -> None:
    await rig.pipeline.accept([echo(seq=seq) for seq in range(1, 5)])
    await rig.pipeline.wait_idle()
    assert [len(batch) for batch in rig.runner.judged] == [4]
    [(trigger, key)] = rig.runner.turns
    assert [t.event.cursor.seq for t in trigger.all if t.event] == [1, 2, 3, 4]
    assert key == "st1:event:e:1+3"
    assert await rig.states() == ["done"] * 4


async def test_the_window_waits_for_a_quiet_gap(harness: Harness) -> None:
    rig = await harness.start(
        AttentionConfig(quiet_seconds=3, max_wait_seconds=10, routine_kinds=(), calm_wait_factor=1)
    )
    for seq in (1, 2, 3):
        await rig.pipeline.ingest(echo(seq=seq))
        await rig.clock.advance(1)
    await settle()
    assert rig.runner.judged == []  # 1 s since the last event: the burst may go on
    await rig.clock.advance(2)
    await until(lambda: len(rig.runner.judged) == 1)
    assert [len(b) for b in rig.runner.judged] == [3]


async def test_a_steady_stream_is_judged_at_the_maximum_wait(harness: Harness) -> None:
    rig = await harness.start(
        AttentionConfig(quiet_seconds=3, max_wait_seconds=10, calm_wait_factor=1)
    )
    for seq in range(1, 11):  # one event a second (t = 0..9): never a quiet gap of 3 s
        await rig.pipeline.ingest(echo(seq=seq, text=f"distinct {seq}"))
        await rig.clock.advance(1)
    # t = 10: the oldest has waited 10 s; the quiet gap alone would wait until t = 12.
    await until(lambda: len(rig.runner.judged) == 1)
    assert len(rig.runner.judged[0]) == 10


async def test_urgent_kinds_skip_the_window(harness: Harness) -> None:
    rig = await harness.start(AttentionConfig(quiet_seconds=30, max_wait_seconds=60))
    await rig.pipeline.accept([echo(seq=1), crime(2)])
    await until(lambda: len(rig.runner.judged) == 1)
    assert [t.kind for t in rig.runner.judged[0]] == [TriggerKind.ROOM_ECHO, TriggerKind.CRIME]


async def test_a_fight_of_twelve_echoes_costs_one_request_and_one_turn(harness: Harness) -> None:
    rig = await harness.start(
        AttentionConfig(quiet_seconds=3, max_wait_seconds=10, calm_wait_factor=1)
    )
    for seq in range(1, 13):
        await rig.pipeline.ingest(echo(seq=seq, text=f"Bram swings at Tove ({seq})."))
        await rig.clock.advance(0.7)
    await rig.clock.advance(3)
    await rig.pipeline.wait_idle()
    assert len(rig.runner.judged) <= 2
    assert len(rig.runner.turns) == 1
    assert len(rig.runner.turns[0][0].all) == 12


async def test_a_big_backlog_is_judged_in_full_batches_without_waiting(harness: Harness) -> None:
    rig = await harness.start(
        AttentionConfig(
            quiet_seconds=30, max_wait_seconds=60, max_batch_events=5, calm_wait_factor=1
        )
    )
    rig.runner.verdict = AttentionVerdict(False)
    await rig.pipeline.accept([echo(seq=seq, text=f"t{seq}") for seq in range(1, 13)])
    await until(lambda: len(rig.runner.judged) == 2)
    assert [len(b) for b in rig.runner.judged] == [5, 5]  # full batches go at once
    await rig.clock.advance(30)  # the last two wait for the window like any other
    await rig.pipeline.wait_idle()
    assert [len(b) for b in rig.runner.judged] == [5, 5, 2]


async def test_a_slow_model_grows_the_durable_backlog_and_loses_nothing(harness: Harness) -> None:
    runner = ScriptedTurnRunner(judge_gate=asyncio.Event(), verdict=AttentionVerdict(False))
    rig = await harness.start(AttentionConfig(quiet_seconds=0, max_wait_seconds=0), runner)
    await rig.pipeline.ingest(echo(seq=1, text="first"))
    await until(lambda: rig.pipeline.judging(1))
    await rig.pipeline.accept([echo(seq=s, text=f"t{s}") for s in range(2, 502)])
    depth = await rig.backlog.depth()
    assert depth[(1, "pending")] == 501  # nothing dropped while the model is stuck
    assert rig.pipeline.stats.dropped == {}
    runner.judge_gate.set()
    await rig.pipeline.wait_idle()
    assert sum(len(b) for b in runner.judged) == 501
    assert max(len(b) for b in runner.judged) <= 60
    assert len(runner.judged) <= 10  # throughput rises with load: batches fill up


async def test_a_deep_backlog_is_judged_by_parallel_requests_on_disjoint_events(
    harness: Harness,
) -> None:
    runner = ScriptedTurnRunner(judge_gate=asyncio.Event(), verdict=AttentionVerdict(False))
    rig = await harness.start(
        AttentionConfig(
            quiet_seconds=0, max_wait_seconds=0, max_batch_events=5, parallel_requests=3
        ),
        runner,
    )
    await rig.pipeline.accept([echo(seq=s, text=f"t{s}") for s in range(1, 18)])
    await until(lambda: len(runner.asked) == 3)
    await settle()
    assert len(runner.asked) == 3  # three in flight at most, each on events no other holds
    texts = [_text(t) for batch in runner.asked for t in batch]
    assert texts == [f"t{s}" for s in range(1, 16)]
    runner.judge_gate.set()
    await rig.pipeline.wait_idle()
    assert sorted(len(b) for b in runner.judged) == [2, 5, 5, 5]
    assert sorted(_text(t) for b in runner.judged for t in b) == sorted(
        f"t{s}" for s in range(1, 18)
    )
    assert set(await rig.states()) == {"ignored"}


async def test_one_request_in_flight_when_parallel_requests_is_one(harness: Harness) -> None:
    runner = ScriptedTurnRunner(judge_gate=asyncio.Event(), verdict=AttentionVerdict(False))
    rig = await harness.start(
        AttentionConfig(
            quiet_seconds=0, max_wait_seconds=0, max_batch_events=5, parallel_requests=1
        ),
        runner,
    )
    await rig.pipeline.accept([echo(seq=s, text=f"t{s}") for s in range(1, 13)])
    await until(lambda: len(runner.asked) == 1)
    await settle()
    assert len(runner.asked) == 1  # the first request is held; no second one was sent
    depth = await rig.backlog.depth()
    assert depth[(1, "pending")] == 12
    runner.judge_gate.set()
    await rig.pipeline.wait_idle()
    assert [len(b) for b in runner.judged] == [5, 5, 2]


async def test_a_failed_request_beside_one_in_flight_backs_off_and_loses_nothing(
    harness: Harness,
) -> None:
    runner = ScriptedTurnRunner(verdict=AttentionVerdict(False), failures=1)
    rig = await harness.start(
        AttentionConfig(
            quiet_seconds=0, max_wait_seconds=0, max_batch_events=4, parallel_requests=2
        ),
        runner,
    )
    await rig.pipeline.accept([echo(seq=s, text=f"t{s}") for s in range(1, 11)])
    await until(lambda: rig.pipeline.stats.attention_failures == 1)
    await until(lambda: sum(len(b) for b in runner.judged) == 10, rig.clock, step=1)
    await rig.pipeline.wait_idle()
    assert rig.pipeline.stats.attention_failures == 1
    assert sorted(_text(t) for b in runner.judged for t in b) == sorted(
        f"t{s}" for s in range(1, 11)
    )
    assert set(await rig.states()) == {"ignored"}


async def test_requests_failing_together_count_as_one_failure_for_the_back_off(
    harness: Harness,
) -> None:
    runner = ScriptedTurnRunner(
        judge_gate=asyncio.Event(), verdict=AttentionVerdict(False), failures=2
    )
    cfg = AttentionConfig(
        quiet_seconds=0, max_wait_seconds=0, max_batch_events=4, parallel_requests=2
    )
    rig = await harness.start(cfg, runner)
    await rig.pipeline.accept([echo(seq=s, text=f"t{s}") for s in range(1, 9)])
    await until(lambda: len(runner.asked) == 2)
    runner.judge_gate.set()  # both fail in the same outage
    await until(lambda: rig.pipeline.stats.attention_failures == 2)
    await rig.clock.advance(cfg.retry_seconds + 0.1)  # one failure's delay, not two
    await until(lambda: len(runner.asked) > 2)
    await rig.pipeline.wait_idle()
    assert sum(len(b) for b in runner.judged) == 8


# ---------------------------------------------------------------------- repeats


async def test_the_same_text_heard_in_many_rooms_is_judged_once(rig: Rig) -> None:
    bell = "The harbour bell tolls twice."
    await rig.pipeline.accept([echo(cell=c, seq=c, text=bell) for c in (101, 102, 103, 104, 105)])
    await rig.pipeline.wait_idle()
    assert [len(b) for b in rig.runner.judged] == [1]
    assert rig.pipeline.stats.filtered == {"heard_elsewhere": 4}
    assert len(rig.runner.turns) == 1 and len(rig.runner.turns[0][0].all) == 5
    items = await rig.backlog.items(1)
    assert sorted(i.rule or "" for i in items) == ["", *["heard_elsewhere"] * 4]


async def test_repeated_ambience_in_a_room_takes_the_earlier_verdict(rig: Rig) -> None:
    rig.runner.verdict = AttentionVerdict(False)
    gulls = "Gulls wheel and cry over the quay."
    await rig.pipeline.ingest(echo(seq=1, text=gulls))
    await rig.pipeline.wait_idle()
    await rig.clock.advance(120)
    await rig.pipeline.ingest(echo(seq=2, text="  GULLS wheel and cry over the quay. "))
    await rig.pipeline.wait_idle()
    assert len(rig.runner.judged) == 1
    assert rig.pipeline.stats.filtered == {"repeated_in_room": 1}
    await rig.clock.advance(400)  # past room_repeat_seconds: judged again
    await rig.pipeline.ingest(echo(seq=3, text=gulls))
    await rig.pipeline.wait_idle()
    assert len(rig.runner.judged) == 2


async def test_one_call_per_event_mode_judges_each_event_alone(harness: Harness) -> None:
    rig = await harness.start(AttentionConfig(one_call_per_event=True))
    await rig.pipeline.accept([echo(cell=c, seq=c, text="Same text.") for c in (101, 102, 103)])
    await rig.pipeline.wait_idle()
    assert [len(b) for b in rig.runner.judged] == [1, 1, 1]
    assert len(rig.runner.turns) == 3


# ---------------------------------------------------------------------- turns


async def test_events_interesting_while_a_turn_runs_go_to_the_next_turn_together(rig: Rig) -> None:
    rig.runner.release = asyncio.Event()
    await rig.pipeline.ingest(echo(seq=1))
    await until(lambda: rig.pipeline.turn_running(1))
    for seq in (2, 3, 4):
        await rig.pipeline.ingest(echo(seq=seq))
    await until(lambda: sum(map(len, rig.runner.judged)) == 4)
    rig.runner.release.set()
    await rig.pipeline.wait_idle()
    assert [len(t.all) for t in rig.runner.turn_triggers] == [1, 3]


async def test_crimes_and_echoes_get_separate_turns_the_crime_first(rig: Rig) -> None:
    await rig.pipeline.accept([echo(seq=1), crime(2), echo(seq=3)])
    await rig.pipeline.wait_idle()
    kinds = [[t.kind.value for t in trig.all] for trig in rig.runner.turn_triggers]
    assert kinds == [["crime"], ["room_echo", "room_echo"]]  # urgent before older work


async def test_a_crashing_turn_is_recorded_failed_and_the_lane_goes_on(rig: Rig) -> None:
    calls = 0
    original = rig.runner.run_turn

    async def crash_once(
        st: Storyteller, trigger: Trigger, key: str, *, finish: Any = None
    ) -> ScriptedOutcome:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("bug")
        return await original(st, trigger, key)

    rig.runner.run_turn = crash_once  # type: ignore[method-assign]
    await rig.pipeline.direct(WATCHER, "one")
    await rig.pipeline.wait_idle()
    await rig.pipeline.direct(WATCHER, "two")
    await rig.pipeline.wait_idle()
    assert await rig.states() == ["failed", "done"]
    assert rig.pipeline.stats.turns == {"crashed": 1, "completed": 1}


async def test_a_transient_turn_failure_is_alerted(rig: Rig) -> None:
    rig.runner.outcome = "model_transient_error"
    await rig.pipeline.direct(WATCHER, "one")
    await rig.pipeline.wait_idle()
    assert rig.alerts.keys == ["turn_transient:1"]
    assert await rig.states() == ["failed"]


# ---------------------------------------------------------------------- faults


async def test_a_failed_attention_request_leaves_the_events_pending(rig: Rig) -> None:
    rig.runner.failures = 1
    await rig.pipeline.accept([echo(seq=1), echo(seq=2)])
    await until(lambda: rig.pipeline.stats.attention_failures == 1)
    items = await rig.backlog.pending(1, 10)
    assert [(i.state, i.attempts) for i in items] == [(WorkState.PENDING, 1)] * 2
    assert rig.alerts.keys == ["attention_failed:1"]
    await until(lambda: len(rig.runner.judged) == 1, rig.clock, step=1)  # retried after backoff
    await rig.pipeline.wait_idle()
    assert [len(b) for b in rig.runner.judged] == [2]
    assert await rig.states() == ["done", "done"]


async def test_events_past_the_maximum_age_are_expired_counted_and_alerted(
    harness: Harness,
) -> None:
    runner = ScriptedTurnRunner(failures=10_000)
    rig = await harness.start(
        AttentionConfig(quiet_seconds=0, max_wait_seconds=0, max_age_seconds=60), runner
    )
    await rig.pipeline.ingest(echo())
    await until(lambda: rig.pipeline.stats.dropped["expired"] == 1, rig.clock, step=5)
    assert await rig.states() == ["expired"]
    item = (await rig.backlog.items(1))[0]
    assert item.rule == "max_age" and "60 s" in (item.reason or "")
    assert "work_expired:1" in rig.alerts.keys
    assert "faster attention model" in rig.alerts.alerts[-1].detail


async def test_a_restart_resumes_pending_and_interested_work(harness: Harness) -> None:
    runner = ScriptedTurnRunner(judge_gate=asyncio.Event(), release=asyncio.Event())
    rig = await harness.start(AT_ONCE, runner)
    await rig.pipeline.accept([echo(seq=1), crime(2)])
    await until(lambda: rig.pipeline.judging(1))
    await harness.crash()  # killed while judging: both events still pending
    assert await rig.states() == ["pending", "pending"]

    again = await harness.start(AT_ONCE)
    await again.pipeline.wait_idle()
    assert [len(b) for b in again.runner.judged] == [2]
    assert await again.states() == ["done", "done"]


async def test_a_turn_killed_mid_way_runs_again_under_the_same_key_once(harness: Harness) -> None:
    once = AttentionConfig(quiet_seconds=0, max_wait_seconds=0, turn_retries=1)
    runner = ScriptedTurnRunner(release=asyncio.Event())
    rig = await harness.start(once, runner)
    await rig.pipeline.ingest(echo(seq=1))
    await until(lambda: rig.pipeline.turn_running(1))  # turn running
    await harness.crash()
    assert await rig.states() == ["running"]

    second = await harness.start(once, ScriptedTurnRunner(release=asyncio.Event()))
    await until(lambda: second.pipeline.turn_running(1))  # re-run, killed again
    assert second.runner.interruptions == [("st1:event:e:1", 2)]
    await harness.crash()
    [item] = await rig.backlog.items(1)
    assert (item.state, item.attempts, item.turn_key) == (
        WorkState.RUNNING,
        2,
        "st1:event:e:1",
    )

    third = await harness.start(once)
    await third.pipeline.wait_idle()
    assert third.runner.turns == []  # twice interrupted: failed, not run a third time
    [item] = await rig.backlog.items(1)
    assert item.state is WorkState.FAILED and "interrupted 2 times" in (item.reason or "")


async def test_a_rerun_turn_gets_its_original_key(harness: Harness) -> None:
    rig = await harness.start(AT_ONCE, ScriptedTurnRunner(release=asyncio.Event()))
    await rig.pipeline.accept([echo(seq=1), echo(seq=2)])
    await until(lambda: rig.pipeline.turn_running(1))
    await harness.crash()
    again = await harness.start(AT_ONCE)
    await again.pipeline.wait_idle()
    [(trigger, key)] = again.runner.turns
    assert key == "st1:event:e:1+1" and len(trigger.all) == 2


async def test_a_cut_off_drain_leaves_work_in_the_backlog(harness: Harness) -> None:
    runner = ScriptedTurnRunner(release=asyncio.Event())
    rig = await harness.start(AttentionConfig(quiet_seconds=30, max_wait_seconds=60), runner)
    await rig.pipeline.ingest(crime(1))  # urgent: judged and turned at once
    await until(lambda: rig.pipeline.turn_running(1))
    await rig.pipeline.ingest(echo(seq=2))  # waits for its window
    rig.pipeline.stop_intake()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await rig.pipeline.drain()  # the turn is stuck
    await harness.crash()
    assert await rig.states() == ["running", "pending"]
    again = await harness.start(AT_ONCE)
    await again.pipeline.wait_idle()
    assert await again.states() == ["done", "done"]


async def test_work_of_a_world_that_cannot_replay_is_expired_on_start(rig: Rig) -> None:
    rig.runner.judge_gate = asyncio.Event()
    await rig.pipeline.ingest(echo())
    assert await rig.pipeline.discard_unreplayable() == 1
    assert await rig.states() == ["expired"]
    assert rig.pipeline.stats.dropped["world_restarted"] == 1
    rig.runner.judge_gate.set()


# ---------------------------------------------------------------------- attention rules


async def test_attention_rules_decide_without_a_model_call(harness: Harness) -> None:
    rules = (
        AttentionRule("temple-bell", RuleAction.IGNORE, pattern=r"\bbell\b"),
        AttentionRule(
            "office", RuleAction.ATTEND, rooms=frozenset({102}), cooldown=timedelta(minutes=5)
        ),
    )
    watcher = replace(WATCHER, attention_rules=rules)
    rig = await harness.start(storytellers=[watcher])
    rig.runner.verdict = AttentionVerdict(False)
    await rig.pipeline.accept(
        [
            echo(seq=1, text="The temple BELL rings."),
            echo(cell=102, seq=2, text="A quill scratches."),
        ]
    )
    await rig.pipeline.wait_idle()
    assert rig.runner.judged == []  # both settled by rules
    assert rig.pipeline.stats.filtered == {"rule:temple-bell": 1, "rule:office": 1}
    assert [len(t.all) for t in rig.runner.turn_triggers] == [1]
    items = {i.rule: i.state for i in await rig.backlog.items(1)}
    assert items == {"rule:temple-bell": WorkState.IGNORED, "rule:office": WorkState.DONE}

    await rig.pipeline.ingest(echo(cell=102, seq=3, text="A door slams."))  # cooling down
    await rig.pipeline.wait_idle()
    assert [len(b) for b in rig.runner.judged] == [1]  # so the model judges it
    await rig.clock.advance(301)
    await rig.pipeline.ingest(echo(cell=102, seq=4, text="Papers rustle."))
    await rig.pipeline.wait_idle()
    assert rig.pipeline.stats.filtered["rule:office"] == 2


def test_a_rule_with_a_bad_pattern_or_kind_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="rule noisy: pattern is not a regular expression"):
        AttentionRule("noisy", RuleAction.IGNORE, pattern="(")
    with pytest.raises(ValueError, match="unknown kind 'state'"):
        AttentionRule("x", RuleAction.IGNORE, kinds=frozenset({"state"}))
    with pytest.raises(ValueError, match="rule name 'Bad Name'"):
        AttentionRule("Bad Name", RuleAction.IGNORE)


async def test_finished_work_is_pruned_after_its_retention(harness: Harness) -> None:
    rig = await harness.start(
        AttentionConfig(quiet_seconds=0, max_wait_seconds=0, retention_hours=2)
    )
    rig.runner.verdict = AttentionVerdict(False)
    await rig.pipeline.ingest(echo())
    await rig.pipeline.wait_idle()
    kept_until = []
    for hour in range(1, 5):  # the prune runs hourly; each run needs the database thread
        sleepers = rig.clock.sleepers
        await rig.clock.advance(3600)
        await until(lambda before=sleepers: rig.clock.sleepers >= before)
        if await rig.states() == ["ignored"]:
            kept_until.append(hour)
    assert await rig.states() == []
    assert kept_until == [1, 2]  # updated at hour 0: kept while younger than two hours
