"""Each pipeline stage alone, with a scripted runner (no model, no database)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.settings import EventKind, Heartbeat, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.routing import Router
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.testing.clock import FakeClock, settle
from world_adapter.events import CharacterState, Cursor, RoomEcho, StateChange

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Verdict:
    interested: bool
    reason: str = ""
    violation: str | None = None


@dataclass
class Outcome:
    outcome: str


class FakeRunner:
    def __init__(self) -> None:
        self.judged: list[list[Trigger]] = []
        self.turns: list[Trigger] = []
        self.verdict = Verdict(True, "matters")
        self.release: asyncio.Event | None = None

    async def judge(self, storyteller: Storyteller, triggers: Sequence[Trigger]) -> list[Verdict]:
        self.judged.append(list(triggers))
        return [self.verdict for _ in triggers]

    async def run_turn(self, storyteller: Storyteller, trigger: Trigger) -> Outcome:
        if self.release is not None:
            await self.release.wait()
        self.turns.append(trigger)
        return Outcome("completed")


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
    subscriptions=frozenset({EventKind.ROOM, EventKind.STATE}),
    heartbeats=frozenset({Heartbeat.TEN_MINUTES}),
    surveillance=Surveillance(zones=frozenset({1}), excluded=frozenset({108})),
)
ZONES = {1: frozenset({101, 102, 108})}


def echo(cell: int = 101, origin: str = "world", seq: int = 1) -> RoomEcho:
    return RoomEcho(
        cursor=Cursor("e", seq), cell_id=cell, zone_id=1, occurred_at=T0, text="x", origin=origin
    )


@pytest.fixture
async def rig() -> AsyncIterator[tuple[Pipeline, FakeRunner, Recorder]]:
    router = Router()
    router.update([WATCHER], ZONES)
    runner, recorder = FakeRunner(), Recorder()
    pipeline = Pipeline(
        router=router,
        runner=runner,
        clock=FakeClock(T0),
        stats=RuntimeStats(),
        observer=recorder,
        queue_size=25,
        model_available=True,
    )
    task = asyncio.create_task(pipeline.run())
    await settle()
    try:
        yield pipeline, runner, recorder
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_interested_event_reaches_a_turn_with_the_reason(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    pipeline.ingest(echo())
    await pipeline.drain()
    assert [t.kind for t in runner.turns] == [TriggerKind.ROOM_ECHO]
    assert runner.turns[0].attention_reason == "matters"
    assert pipeline.stats.verdicts["interested"] == 1
    assert pipeline.stats.turns["completed"] == 1


async def test_ignored_and_violating_verdicts_are_dropped_and_counted(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    runner.verdict = Verdict(False, "just fish")
    pipeline.ingest(echo())
    await pipeline.drain()
    runner.verdict = Verdict(False, "", violation="not valid JSON")
    pipeline.ingest(echo(seq=2))
    await pipeline.drain()
    assert runner.turns == []
    assert recorder.drops == [
        ("attention", "ignored: just fish"),
        ("attention", "contract violation: not valid JSON"),
    ]
    assert pipeline.stats.verdicts == {"ignore": 1, "violation": 1}


async def test_prefilter_drops_own_progs_excluded_rooms_and_unsubscribed_kinds(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    pipeline.offer(WATCHER, Trigger.from_event(echo(origin="prog")))
    pipeline.offer(WATCHER, Trigger.from_event(echo(cell=108)))
    speechless = replace(WATCHER, subscriptions=frozenset({EventKind.STATE}))
    pipeline.offer(speechless, Trigger.from_event(echo()))
    await pipeline.drain()
    assert [d[0] for d in recorder.drops] == ["prefilter"] * 3
    assert "own prog" in recorder.drops[0][1]
    assert "#108 is not watched" in recorder.drops[1][1]
    assert "not subscribed" in recorder.drops[2][1]
    assert runner.judged == []


async def test_excluded_room_gets_no_audience_at_all(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    pipeline.ingest(echo(cell=108))
    pipeline.ingest(echo(cell=999))
    await pipeline.drain()
    assert pipeline.stats.events_in == 2
    assert runner.judged == [] and recorder.drops == []


async def test_pause_is_a_master_switch(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    paused = replace(WATCHER, paused=True)
    assert pipeline.offer(paused, Trigger.from_event(echo())) is False
    assert pipeline.direct(paused, "anything") is False
    pipeline.router.update([paused], ZONES)
    assert pipeline.heartbeat(1, Heartbeat.TEN_MINUTES) is False
    assert {d[0] for d in recorder.drops} == {"pause"}
    assert runner.judged == [] and runner.turns == []


async def test_pausing_while_a_turn_waits_stops_it(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    runner.release = asyncio.Event()
    pipeline.direct(WATCHER, "first")
    pipeline.direct(WATCHER, "second")
    await settle()
    pipeline.router.update([replace(WATCHER, paused=True)], ZONES)
    runner.release.set()
    await pipeline.drain()
    assert [t.text for t in runner.turns] == ["first"]
    assert ("pause", "storyteller was paused while the turn waited") in recorder.drops


async def test_missing_api_key_is_a_silent_noop(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    pipeline.model_available = False
    pipeline.ingest(echo())
    assert pipeline.heartbeat(1, Heartbeat.TEN_MINUTES) is False
    assert pipeline.direct(WATCHER, "hello") is False
    await pipeline.drain()
    assert runner.judged == [] and runner.turns == []
    assert {d[0] for d in recorder.drops} == {"api_key"}


async def test_state_changes_heartbeats_and_direct_skip_attention(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    pipeline.ingest(
        StateChange(
            cursor=Cursor("e", 5),
            cell_id=102,
            zone_id=1,
            occurred_at=T0,
            character_id=1001,
            state=CharacterState.DEAD,
        )
    )
    assert pipeline.heartbeat(1, Heartbeat.TEN_MINUTES)
    assert pipeline.heartbeat(1, Heartbeat.HOUR) is False  # not subscribed
    assert pipeline.direct(WATCHER, "  ") is False  # blank
    assert pipeline.direct(WATCHER, "the bells ring")
    await pipeline.drain()
    assert runner.judged == []
    assert [t.label for t in runner.turns] == [
        "Character State Dead",
        "Heartbeat 10m",
        "Direct Invocation",
    ]


async def test_the_26th_queued_item_is_rejected_and_counted(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    runner.release = asyncio.Event()
    accepted = [pipeline.direct(WATCHER, f"item {i}") for i in range(26)]
    await settle()
    assert accepted == [True] * 25 + [False]  # direct invocation reports the rejection
    assert pipeline.queue_depth(1) == 25
    assert pipeline.stats.queue_overflow == {"Watch": 1}
    runner.release.set()
    await pipeline.drain()
    assert len(runner.turns) == 25


async def test_a_burst_is_judged_in_one_call(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    for seq in range(1, 5):
        pipeline.ingest(echo(seq=seq))
    await pipeline.drain()
    assert [len(batch) for batch in runner.judged] == [4]
    assert pipeline.stats.attention_calls == 1
    assert len(runner.turns) == 4


async def test_after_stop_intake_nothing_new_is_accepted(rig: tuple) -> None:
    pipeline, runner, recorder = rig
    pipeline.stop_intake()
    assert pipeline.direct(WATCHER, "late") is False
    assert recorder.drops == [("intake", "shutting down")]


def test_without_a_key_drops_stay_out_of_the_info_log(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from storyteller_daemon.runtime.observers import LoggingObserver

    caplog.set_level(logging.INFO, logger="storyteller.activity")
    observer = LoggingObserver()
    observer.dropped(WATCHER, Trigger.from_event(echo()), "api_key", "no model API key configured")
    observer.dropped(WATCHER, Trigger.from_event(echo()), "pause", "storyteller is paused")
    assert [r.levelname for r in caplog.records] == ["INFO"]
    assert "pause" in caplog.records[0].getMessage()
