"""Speech reaches the history from the event pipeline: once per event, whoever listens, paused
or not, before the speech is judged, without blocking intake, and overflow is counted."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.domain.storytellers import EventKind, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline import Pipeline, SpeechRecorder
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.events import Cursor, RoomEcho, Speech
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUAY, TAVERN, TEMPLE_SQUARE = 101, 103, 202
MAREN, OSRIC, ILSA = 1001, 1002, 1003
_seq = itertools.count(1)


@dataclass
class HistoryReads:
    """The gate's hook: reads the history before judging, as the real prompt builder does for
    speech, and keeps what it read each time."""

    read: Callable[[], Awaitable[list[str]]]
    seen: list[list[str]] = field(default_factory=list)

    async def __call__(self, triggers: Sequence[Trigger]) -> None:
        self.seen.append(await self.read())


class MemoryRecorder:
    """Records in memory; `gate` holds every write until it is set; `fail` makes writes fail."""

    def __init__(self) -> None:
        self.recorded: list[str] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.fail: set[str] = set()

    async def record(self, event: Speech) -> None:
        await self.gate.wait()
        if event.text in self.fail:
            raise RuntimeError("disk full")
        self.recorded.append(event.text)

    async def record_many(self, events: Sequence[Speech]) -> None:
        if any(event.text in self.fail for event in events):
            raise RuntimeError("disk full")
        for event in events:
            await self.record(event)

    async def read(self) -> list[str]:
        return list(self.recorded)


def teller(sid: int, name: str, *, paused: bool, kinds: set[EventKind]) -> Storyteller:
    return Storyteller(
        name=name,
        id=sid,
        paused=paused,
        subscriptions=frozenset(kinds),
        surveillance=Surveillance(included=frozenset({QUAY})),
    )


LISTENING = teller(1, "Listening", paused=False, kinds={EventKind.SPEECH})
PAUSED = teller(2, "Paused", paused=True, kinds={EventKind.SPEECH})
ECHOES_ONLY = teller(3, "Echoes only", paused=False, kinds={EventKind.ROOM})


def speech(text: str, seconds: float = 0) -> Speech:
    return Speech(
        cursor=Cursor("e", next(_seq)),
        cell_id=QUAY,
        zone_id=1,
        occurred_at=T0 + timedelta(seconds=seconds),
        speaker_id=MAREN,
        speaker_name="Maren Tidewell",
        text=text,
    )


def pipeline_over(
    store: Store,
    recorder: SpeechRecorder,
    reads: HistoryReads,
    tellers: list[Storyteller],
    buffer: int = 256,
) -> Pipeline:
    runner = ScriptedTurnRunner(verdict=AttentionVerdict(False, "not now"), on_judge=reads)
    return wired_pipeline(
        store,
        runner=runner,
        clock=FakeClock(T0),
        storytellers=tellers,
        speech=recorder,
        speech_buffer=buffer,
    ).pipeline


@pytest.fixture
async def rig(
    sqlite_store: Store,
) -> AsyncIterator[tuple[Pipeline, MemoryRecorder, HistoryReads]]:
    recorder = MemoryRecorder()
    reads = HistoryReads(recorder.read)
    tellers = [LISTENING, PAUSED, ECHOES_ONLY]
    pipeline = pipeline_over(sqlite_store, recorder, reads, tellers, buffer=2)
    task = asyncio.create_task(pipeline.run())
    await settle()
    try:
        yield pipeline, recorder, reads
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_each_speech_is_recorded_once_whoever_listens(rig: tuple) -> None:
    pipeline, recorder, reads = rig
    await pipeline.accept(
        [
            speech("Three storytellers watch this room."),
            RoomEcho(cursor=Cursor("e", 0), cell_id=QUAY, zone_id=1, occurred_at=T0, text="waves."),
        ]
    )
    await pipeline.wait_idle()
    assert recorder.recorded == ["Three storytellers watch this room."]
    # One judgement each from the speech listener and the echo listener; one line recorded.
    assert len(reads.seen) == 2


async def test_speech_is_recorded_even_when_every_listener_is_paused(rig: tuple) -> None:
    pipeline, recorder, reads = rig
    pipeline.router.update([PAUSED, replace(LISTENING, paused=True)], {})
    await pipeline.ingest(speech("Nobody is listening."))
    await pipeline.wait_idle()
    assert pipeline.stats.dropped["pause"] == 2
    assert recorder.recorded == ["Nobody is listening."]
    assert reads.seen == []


async def test_speech_is_judged_only_once_the_history_holds_it(rig: tuple) -> None:
    pipeline, recorder, reads = rig
    recorder.gate.clear()  # the database is slow
    await pipeline.accept([speech("First.", 1), speech("Second.", 2)])
    await settle()
    assert reads.seen == []  # the attention stage waits for the writer
    recorder.gate.set()
    await pipeline.wait_idle()
    assert reads.seen == [["First.", "Second."]]


async def test_intake_never_waits_for_the_writer_and_overflow_is_counted(rig: tuple) -> None:
    pipeline, recorder, reads = rig
    recorder.gate.clear()
    pipeline.router.update([], {})
    await pipeline.ingest(speech("taken by the writer"))
    await settle()
    for text in ("buffered 1", "buffered 2", "lost"):
        await pipeline.ingest(speech(text))  # returns at once although the writer is stuck
    assert pipeline.stats.dropped["speech_history"] == 1
    recorder.gate.set()
    await pipeline.wait_idle()
    assert recorder.recorded == ["taken by the writer", "buffered 1", "buffered 2"]


async def test_a_failed_write_loses_one_line_only(
    rig: tuple, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline, recorder, reads = rig
    recorder.fail = {"secret plans"}
    for text in ("good 1", "secret plans", "good 2"):
        await pipeline.ingest(speech(text))
        await settle()
    await pipeline.wait_idle()
    assert recorder.recorded == ["good 1", "good 2"]
    assert "could not record a speech in room #101" in caplog.text
    assert "secret plans" not in caplog.text  # player text stays out of the log


async def test_the_daemon_records_each_watched_speech_from_the_world_once(
    sqlite_store: Store,
) -> None:
    ear = await sqlite_store.storytellers.create("Ear")
    await sqlite_store.storytellers.save(
        replace(
            ear,
            paused=False,
            subscriptions=frozenset({EventKind.SPEECH}),
            surveillance=Surveillance(included=frozenset({QUAY})),
        )
    )
    ward = await sqlite_store.storytellers.create("Ward")  # paused, room echoes only
    await sqlite_store.storytellers.save(
        replace(ward, surveillance=Surveillance(zones=frozenset({1})))
    )

    async def quay_history() -> list[str]:
        lines = await sqlite_store.speech.recent(QUAY, limit=10, since=T0)
        return [line.message for line in lines]

    reads = HistoryReads(quay_history)
    pipeline = pipeline_over(sqlite_store, sqlite_store.speech, reads, [])
    world = SimWorld.harbour_town(clock=lambda: T0)
    daemon = Daemon(
        settings=sqlite_store.storytellers,
        world=world,
        pipeline=pipeline,
        clock=FakeClock(T0),
        drain_seconds=5,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.ready.wait(), 5)
    await settle()
    world.say(MAREN, "Heard by both storytellers.")
    world.say(OSRIC, "Heard by the paused one only.")
    world.say(ILSA, "Said where nobody watches.")
    async with asyncio.timeout(5):
        while pipeline.stats.events_in < 2:  # noqa: ASYNC110 - the pump offers no event
            await asyncio.sleep(0.01)
    await asyncio.wait_for(pipeline.wait_idle(), 5)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert await quay_history() == ["Heard by both storytellers."]
    assert reads.seen == [["Heard by both storytellers."]]
    tavern = await sqlite_store.speech.recent(TAVERN, limit=10, since=T0)
    assert [line.message for line in tavern] == ["Heard by the paused one only."]
    assert await sqlite_store.speech.recent(TEMPLE_SQUARE, limit=10, since=T0) == []
