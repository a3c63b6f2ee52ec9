"""The burst window adapts: a window of routine kinds only waits a longer quiet gap (never past
the maximum wait), any other kind brings the short gap back, urgent kinds go at once; calm
events wait for the calm maximum and ride with the next request, while bursts, scenes and
urgent kinds are asked about at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from test_pipeline import WATCHER, Harness, crime, echo, until

from storyteller_daemon.agent.trigger import TriggerKind
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import settle
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.events import Cursor, Speech


def speech_event(seq: int) -> Speech:
    return Speech(
        cursor=Cursor("e", seq),
        cell_id=101,
        zone_id=1,
        occurred_at=echo().occurred_at,
        speaker_id=1001,
        speaker_name="Lucan",
        text="The crates go out at midnight.",
    )


@pytest.fixture
async def harness(sqlite_store: Store) -> AsyncIterator[Harness]:
    h = Harness(sqlite_store)
    try:
        yield h
    finally:
        await h.crash()


async def test_routine_kinds_alone_wait_a_longer_gap_up_to_the_maximum_wait(
    harness: Harness,
) -> None:
    cfg = AttentionConfig(
        quiet_seconds=3, max_wait_seconds=10, routine_quiet_seconds=30, calm_wait_factor=1
    )
    watcher = replace(WATCHER, subscriptions=WATCHER.subscriptions | {EventKind.SPEECH})
    rig = await harness.start(cfg, storytellers=[watcher])
    await rig.pipeline.ingest(echo(seq=1))
    await rig.clock.advance(9)
    await settle()
    assert rig.runner.judged == []  # echoes only: the quiet gap is 30 s...
    await rig.clock.advance(1)
    await until(lambda: len(rig.runner.judged) == 1)  # ...but never past the maximum wait

    # A line of speech (not routine) brings the short gap back for its window.
    await rig.pipeline.ingest(echo(seq=2, text="Gulls cry."))
    await rig.pipeline.ingest(speech_event(3))
    await rig.clock.advance(2)
    await settle()
    assert len(rig.runner.judged) == 1
    await rig.clock.advance(1)
    await until(lambda: len(rig.runner.judged) == 2)
    assert [t.kind for t in rig.runner.judged[1]] == [TriggerKind.ROOM_ECHO, TriggerKind.SPEECH]


def _crimes_only() -> ScriptedTurnRunner:
    """A model that attends to crimes and ignores everything else."""
    return ScriptedTurnRunner(
        verdict=AttentionVerdict(False, ""),
        verdicts={TriggerKind.CRIME: AttentionVerdict(True, "a theft")},
    )


async def test_calm_events_ride_together_and_lively_ones_go_at_once(harness: Harness) -> None:
    cfg = AttentionConfig(
        quiet_seconds=3,
        max_wait_seconds=10,
        calm_wait_factor=6,
        calm_requests_per_hour=0,  # no allowance: calm events always wait
        scene_events=3,
        scene_seconds=8,
        routine_kinds=(),
    )
    runner = _crimes_only()
    rig = await harness.start(cfg, runner)
    judged = rig.runner.judged

    # Calm lines in different rooms wait past the window, up to the calm maximum, together.
    await rig.pipeline.ingest(echo(cell=101, seq=1, text="Gulls cry."))
    await rig.clock.advance(20)
    await rig.pipeline.ingest(echo(cell=102, seq=2, text="A cart rattles past."))
    await rig.clock.advance(30)
    await settle()
    assert judged == []
    await rig.clock.advance(10)
    await until(lambda: len(judged) == 1)
    assert [t.room_id for t in judged[0]] == [101, 102]
    assert rig.pipeline.stats.attention_windows["calm"] == 1

    # A burst in one room is asked about as it forms, without waiting for the window.
    for seq in (3, 4, 5):
        await rig.pipeline.ingest(echo(cell=103, seq=seq, text=f"A blow lands ({seq})."))
        await rig.clock.advance(1)
    await until(lambda: len(judged) == 2)
    assert [t.room_id for t in judged[1]] == [103, 103, 103]

    # A crime takes the calm lines waiting with it.
    await rig.pipeline.ingest(echo(cell=104, seq=6, text="A dog barks."))
    await rig.clock.advance(5)
    await rig.pipeline.ingest(crime(7))
    await until(lambda: len(judged) == 3)
    assert [t.kind for t in judged[2]] == [TriggerKind.ROOM_ECHO, TriggerKind.CRIME]

    # The crime's room is a scene now: its next line is judged within the window, and takes
    # a calm line elsewhere with it.
    await rig.pipeline.ingest(echo(cell=105, seq=8, text="Rain starts."))
    await rig.clock.advance(10)
    await settle()
    assert len(judged) == 3
    await rig.pipeline.ingest(echo(cell=101, seq=9, text="Someone runs off."))
    await rig.clock.advance(10)
    await until(lambda: len(judged) == 4)
    assert [t.room_id for t in judged[3]] == [105, 101]
    assert rig.pipeline.stats.attention_windows == {"calm": 1, "burst": 1, "urgent": 1, "scene": 1}


async def test_a_paced_backlog_bigger_than_a_batch_is_asked_in_batches_at_once(
    harness: Harness,
) -> None:
    cfg = AttentionConfig(
        quiet_seconds=30, max_wait_seconds=60, max_batch_events=5, calm_wait_factor=5
    )
    rig = await harness.start(cfg, ScriptedTurnRunner(verdict=AttentionVerdict(False, "")))
    await rig.pipeline.accept([echo(seq=seq, text=f"t{seq}") for seq in range(1, 13)])
    await until(lambda: len(rig.runner.judged) == 3)
    assert [len(b) for b in rig.runner.judged] == [5, 5, 2]
    assert await rig.states() == ["ignored"] * 12


async def test_a_quiet_world_is_judged_as_windows_close_until_its_allowance_runs_out(
    harness: Harness,
) -> None:
    cfg = AttentionConfig(
        quiet_seconds=3,
        max_wait_seconds=10,
        calm_wait_factor=6,  # calm events wait a minute at most
        calm_requests_per_hour=6,  # one request in hand, the next ten minutes later
        routine_kinds=(),
    )
    rig = await harness.start(cfg, ScriptedTurnRunner(verdict=AttentionVerdict(False, "")))
    judged = rig.runner.judged

    # A new admin's first line: the allowance is full, so it goes when its window closes.
    await rig.pipeline.ingest(echo(cell=101, seq=1, text="Gulls cry."))
    await rig.clock.advance(3)
    await until(lambda: len(judged) == 1)

    # The allowance is spent: the next calm line waits, up to the calm maximum.
    await rig.pipeline.ingest(echo(cell=102, seq=2, text="A cart rattles past."))
    await rig.clock.advance(59)
    await settle()
    assert len(judged) == 1
    await rig.clock.advance(1)
    await until(lambda: len(judged) == 2)

    # Ten minutes on, the allowance has a request in hand again: a line goes with its window.
    await rig.clock.advance(600)
    await rig.pipeline.ingest(echo(cell=103, seq=3, text="A bell tolls."))
    await rig.clock.advance(3)
    await until(lambda: len(judged) == 3)
    assert rig.pipeline.stats.attention_windows == {"quiet": 2, "calm": 1}


async def test_a_new_line_in_a_scene_is_judged_within_the_scene_wait(harness: Harness) -> None:
    cfg = AttentionConfig(
        quiet_seconds=8,
        max_wait_seconds=12,
        calm_wait_factor=5,
        calm_requests_per_hour=0,
        scene_wait_seconds=2,
        routine_kinds=(),
    )
    runner = _crimes_only()
    rig = await harness.start(cfg, runner)
    judged = rig.runner.judged
    await rig.pipeline.ingest(crime(1))  # urgent: asked at once; its room becomes a scene
    await until(lambda: len(judged) == 1)

    await rig.pipeline.ingest(echo(cell=102, seq=2, text="Rain starts."))  # calm, elsewhere
    await rig.pipeline.ingest(echo(cell=101, seq=3, text="The thief runs for the quay."))
    await rig.clock.advance(1.5)
    await settle()
    assert len(judged) == 1  # not before the scene wait...
    await rig.clock.advance(0.5)
    await until(lambda: len(judged) == 2)  # ...and not a whole window either
    assert [t.room_id for t in judged[1]] == [102, 101]
    assert rig.pipeline.stats.attention_windows == {"urgent": 1, "scene": 1}

    # A line in a room that is no scene waits for its window and the calm maximum.
    await rig.pipeline.ingest(echo(cell=103, seq=4, text="A dog barks."))
    await rig.clock.advance(12)
    await settle()
    assert len(judged) == 2


async def test_with_the_shipped_defaults_a_new_admins_lines_are_judged_within_the_window(
    harness: Harness,
) -> None:
    cfg = AttentionConfig()  # allowance 30 an hour: five requests in hand at the start
    rig = await harness.start(cfg, ScriptedTurnRunner(verdict=AttentionVerdict(False, "")))
    judged = rig.runner.judged
    for n in range(1, 6):
        await rig.pipeline.ingest(echo(cell=100 + n, seq=n, text=f"A quiet line {n}."))
        await rig.clock.advance(cfg.max_wait_seconds)
        await until(lambda n=n: len(judged) == n)
    # A storyteller that asked its whole allowance within a minute is a busy one: the next
    # calm line waits for the allowance's next request (one every two minutes at 30 an hour;
    # 0.4 of one was left at t=60 and 0.5 by its window's close at t=72: another minute).
    await rig.pipeline.ingest(echo(cell=106, seq=6, text="A sixth quiet line."))
    await rig.clock.advance(cfg.max_wait_seconds)
    await settle()
    await until(lambda: not rig.pipeline.working())  # its window's pass let it wait
    assert len(judged) == 5
    await rig.clock.advance(59)
    await settle()
    assert len(judged) == 5
    await rig.clock.advance(1)
    await until(lambda: len(judged) == 6)
    assert rig.pipeline.stats.attention_windows == {"max_wait": 5, "calm": 1}
