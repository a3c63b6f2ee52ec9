"""Scripted activity: deterministic for a seed, varied, and paced by an injected sleep."""

from __future__ import annotations

import asyncio
from collections import Counter
from datetime import UTC, datetime

import pytest

from world_adapter.events import (
    CharacterState,
    Crime,
    Cursor,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)
from world_adapter.sim import SimWorld

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
PLAYERS = {1001, 1002, 1003}
WREN = 2004


def _run(seed: int, steps: int) -> tuple[SimWorld, list[WorldEvent | None]]:
    world = SimWorld.harbour_town(seed=seed, clock=lambda: NOW)
    return world, [world.step() for _ in range(steps)]


def test_the_same_seed_tells_the_same_story() -> None:
    world_a, events_a = _run(7, 200)
    world_b, events_b = _run(7, 200)
    assert events_a == events_b
    assert world_a.output_of(1001) == world_b.output_of(1001)


def test_another_seed_tells_another_story() -> None:
    _, events_a = _run(7, 50)
    _, events_b = _run(8, 50)
    assert events_a != events_b


def test_activity_covers_every_kind_of_scripted_life() -> None:
    world, events = _run(7, 600)
    kinds = Counter(type(e).__name__ for e in events)
    assert set(kinds) == {"RoomEcho", "Speech", "Crime", "StateChange"}
    echoes = [e.text for e in events if isinstance(e, RoomEcho)]
    assert any(t.startswith("Fishwife Agna ") for t in echoes)
    assert any(t.startswith("Dockhand Per ") for t in echoes)
    assert any(t.startswith("Wren the cutpurse arrives") for t in echoes)
    speakers = {e.speaker_id for e in events if isinstance(e, Speech)}
    assert speakers and speakers <= PLAYERS
    thefts = [e for e in events if isinstance(e, Crime)]
    assert thefts and all(
        (t.crime_type, t.legal_authority, t.criminal_id) == ("Theft", "Harbour Ward Watch", WREN)
        for t in thefts
    )
    falls = [e for e in events if isinstance(e, StateChange)]
    assert falls and all((f.state, f.cell_id) == (CharacterState.PASS_OUT, 103) for f in falls)
    assert kinds["Crime"] < kinds["RoomEcho"] / 10
    assert all(e is None or e.origin == "world" for e in events)


async def test_every_theft_follows_an_echo_of_wren_robbing_the_victim() -> None:
    world, _ = _run(7, 600)
    every_room = frozenset(r.id for r in world.town_map.rooms)
    stream = world.subscribe(every_room, Cursor("sim-1", 0))
    history = [await anext(stream) for _ in range(world.cursor.seq)]
    crimes = [e for e in history if isinstance(e, Crime)]
    assert crimes
    for crime in crimes:
        before = history[crime.cursor.seq - 2]
        assert crime.victim_id is not None
        assert isinstance(before, RoomEcho) and before.source_character_id == WREN
        assert world.sheet(crime.victim_id).name in before.text
        assert before.cell_id == crime.cell_id


def test_nothing_happens_when_nobody_can_act() -> None:
    world = SimWorld.harbour_town()
    for sheet in world.all_sheets():
        world.set_online(sheet.id, False)
    assert world.step() is None
    assert world.cursor.seq == 0


async def test_run_activity_takes_exactly_the_requested_steps() -> None:
    world = SimWorld.harbour_town(clock=lambda: NOW)
    pauses: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        pauses.append(seconds)

    await world.run_activity(2.5, sleep=fake_sleep, steps=12)
    assert pauses == [2.5] * 12
    _, expected = _run(7, 12)
    assert world.cursor.seq == max(e.cursor.seq for e in expected if e is not None)


async def test_run_activity_runs_until_cancelled() -> None:
    world = SimWorld.harbour_town()
    pauses = 0
    fourth_pause = asyncio.Event()
    never = asyncio.Event()

    async def fake_sleep(seconds: float) -> None:
        nonlocal pauses
        pauses += 1
        if pauses == 4:
            fourth_pause.set()
            await never.wait()

    task = asyncio.create_task(world.run_activity(1.0, sleep=fake_sleep))
    await fourth_pause.wait()
    after_three_steps = world.cursor
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    _, expected = _run(7, 3)
    assert after_three_steps.seq == max(e.cursor.seq for e in expected if e is not None)
    assert world.cursor == after_three_steps


@pytest.mark.parametrize(
    ("interval", "steps", "message"),
    [(0.0, None, "interval must be positive, not 0.0"), (1.0, -1, "must not be negative")],
)
async def test_run_activity_refuses_bad_settings(
    interval: float, steps: int | None, message: str
) -> None:
    world = SimWorld.harbour_town()

    async def never(seconds: float) -> None:
        raise AssertionError("must not sleep")

    with pytest.raises(ValueError, match=message):
        await world.run_activity(interval, sleep=never, steps=steps)
