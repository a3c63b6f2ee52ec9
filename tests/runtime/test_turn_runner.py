"""The agent behind the pipeline: status progs, persistent contract violations, turn keys."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.trigger import Trigger, TriggerKind, turn_key
from storyteller_daemon.domain.storytellers import EventKind, Heartbeat
from storyteller_daemon.runtime.attention_calls import VIOLATION_ALERT_STREAK
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.events import Cursor, RoomEcho, Speech
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, tzinfo=UTC)


USAGE = Usage(10, 0, 2, 0)


def answering(answer: str) -> ScriptedModel:
    """Answers every request with `answer`, as text."""
    return ScriptedModel(then=text(answer, USAGE))


def runner(
    store: Store,
    model: ScriptedModel,
    attention: AttentionOptions | None = None,
    alerts: RecordedAlerts | None = None,
) -> AgentTurnRunner:
    return turn_runner(
        store,
        SimWorld.harbour_town(),
        model,
        clock=FakeClock(T0),
        recorded=False,
        alerts=alerts,
        attention=attention,
    )


async def test_heartbeat_prompt_carries_the_status_prog_output(sqlite_store: Store) -> None:
    st = await sqlite_store.storytellers.create("Beat")
    st = await sqlite_store.storytellers.save(
        replace(
            st,
            heartbeats=frozenset({Heartbeat.TEN_MINUTES}),
            status_progs=((Heartbeat.TEN_MINUTES, "HarbourWatchStatus"),),
            time_model="gpt-5-mini",
        )
    )
    model = ScriptedModel(then=calls(("Noop", {}), usage=USAGE))
    record = await runner(sqlite_store, model).run_turn(
        st, Trigger(TriggerKind.HEARTBEAT, occurred_at=T0, heartbeat=Heartbeat.TEN_MINUTES)
    )
    assert record.outcome == "noop"
    prompt = model.requests[0].input[0]["content"]
    assert "Harbour Ward:" in prompt  # HarbourWatchStatus output
    assert model.requests[0].model == "gpt-5-mini"  # time scope


async def test_persistent_contract_violations_raise_one_error(
    sqlite_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    st = await sqlite_store.storytellers.create("Gate")
    st = replace(st, paused=False, subscriptions=frozenset({EventKind.ROOM}))
    alerts = RecordedAlerts()
    gate_runner = runner(sqlite_store, answering("interested, obviously"), alerts=alerts)
    echo = RoomEcho(cursor=Cursor("e", 1), cell_id=101, zone_id=1, occurred_at=T0, text="x")
    caplog.set_level(logging.ERROR)
    for _ in range(VIOLATION_ALERT_STREAK * 2):
        [verdict] = await gate_runner.judge(st, [Trigger.from_event(echo)])
        assert verdict.violation
    errors = [r for r in caplog.records if "broke the verdict contract" in r.getMessage()]
    assert len(errors) == 1
    [alert] = alerts.alerts
    assert alert.title.startswith("Gate: its attention model keeps breaking")
    assert "fail_open" in alert.detail


def test_turn_keys_are_stable_per_trigger() -> None:
    from storyteller_daemon.domain.storytellers import Storyteller

    st = Storyteller(name="k", id=3)
    echo = RoomEcho(cursor=Cursor("e", 9), cell_id=1, zone_id=None, occurred_at=T0, text="x")
    assert turn_key(st, Trigger.from_event(echo)) == "st3:event:e:9"
    beat = Trigger(TriggerKind.HEARTBEAT, occurred_at=T0, heartbeat=Heartbeat.HOUR)
    assert turn_key(st, beat) == turn_key(st, beat)
    a = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="a")
    b = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="b")
    assert turn_key(st, a) != turn_key(st, b)


async def test_the_reference_design_shows_the_classifier_what_its_turn_would_see(
    sqlite_store: Store,
) -> None:
    """Echoes alone, speech and crimes with their whole prompt, as one-call-per-event does."""
    st = await sqlite_store.storytellers.create("Reference")
    model = answering('{"Decision": "ignore"}')
    reference = runner(sqlite_store, model, AttentionOptions(reference=True))
    echo = RoomEcho(
        cursor=Cursor("e", 1), cell_id=101, zone_id=1, occurred_at=T0, text="Gulls cry."
    )
    speech = Speech(
        cursor=Cursor("e", 2),
        cell_id=101,
        zone_id=1,
        occurred_at=T0,
        speaker_id=1001,
        speaker_name="Maren Tidewell",
        text="The crates come tonight.",
    )
    for event in (echo, speech):
        [verdict] = await reference.judge(st, [Trigger.from_event(event)])
        assert not verdict.interested and verdict.violation is None
    echo_input, speech_input = (r.input[0]["content"] for r in model.requests)
    assert echo_input == "Gulls cry."
    assert "A character has spoken" in speech_input and "Location:" in speech_input
    assert "The crates come tonight." in speech_input
    assert all(r.text_format == {"type": "json_object"} for r in model.requests)
