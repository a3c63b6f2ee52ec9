"""Ranked memories in a turn's prompt, over a real store on both backends: recency, importance
and relevance to the trigger (its words, its characters) each move a memory up."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.agent.prompts import PromptBuilder
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, OSRIC = 1001, 1002
OLD = T0 - timedelta(days=10)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(OLD)


@pytest.fixture
async def ranked_store(db_url: str, clock: FakeClock) -> AsyncIterator[Store]:
    store = Store.open(db_url, clock=clock)
    await store.db.upgrade()
    try:
        yield store
    finally:
        await store.close()


async def memory_order(
    store: Store, clock: FakeClock, advantage: str | None, *, trigger: Trigger
) -> list[str]:
    """The titles of the prompt's memories, best first, after writing a probe memory (first,
    so it loses every tie) that has `advantage` (or none) and five plain ones."""
    sid = (await store.storytellers.create(f"Watch {advantage}")).id or 0
    clock.set_now(T0 - timedelta(hours=1) if advantage == "recency" else OLD)
    await store.memories.create(
        sid,
        MAREN if advantage == "character" else OSRIC,
        "Probe",
        "Saw the cutpurse at dusk." if advantage == "words" else "Drank at the Lantern.",
        importance=9 if advantage == "importance" else 5,
    )
    clock.set_now(OLD)
    for n in range(5):
        await store.memories.create(sid, OSRIC, f"Plain {n}", "Drank at the Lantern.")
    builder = PromptBuilder(
        SimWorld.harbour_town(), store.situations, LimitsConfig(), memories=store.memories
    )
    st = await store.storytellers.get(sid)
    prompt = await builder.build(st, trigger)
    return re.findall(r'^- #\d+ about character #\d+ \([^)]*\): "([^"]+)"', prompt.text, re.M)


@pytest.mark.parametrize("advantage", ["recency", "importance", "words", "character"])
async def test_each_part_of_the_score_moves_a_memory_up(
    advantage: str, ranked_store: Store, clock: FakeClock
) -> None:
    world = SimWorld.harbour_town()
    if advantage == "character":  # an echo by Maren involves her
        trigger = Trigger.from_event(world.emote(MAREN, "waves."))
    else:
        trigger = Trigger(TriggerKind.DIRECT, T0, text="Has anyone seen the cutpurse?")
    without = await memory_order(ranked_store, clock, None, trigger=trigger)
    assert without[-1] == "Probe" and len(without) == 6  # every tie goes against it
    with_it = await memory_order(ranked_store, clock, advantage, trigger=trigger)
    assert with_it[0] == "Probe"
