"""The burst window adapts: a window of routine kinds only waits a longer quiet gap (never past
the maximum wait), any other kind brings the short gap back, urgent kinds go at once."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
from test_pipeline import WATCHER, Harness, echo, until

from storyteller_daemon.agent.trigger import TriggerKind
from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import settle
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
    cfg = AttentionConfig(quiet_seconds=3, max_wait_seconds=10, routine_quiet_seconds=30)
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
