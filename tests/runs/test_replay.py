"""Recording turns and replaying them with today's code: identical, changed, and live.

A turn on the sim world creates a situation and runs a prog; its record holds the tape of what
the world and the repositories answered. A replay runs the same trigger through today's runner
against that tape and the recorded model answers: nothing is created again, no prog runs again,
and any change in prompts or tool behaviour shows up as a difference.
"""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import Model, Usage
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import LimitsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import CustomTool, EventKind, Heartbeat, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.runs import RunRecorder, decode_trigger, encode_trigger, replay_turn
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner, replay_runner
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, Step, calls, text
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.events import CharacterState, Crime, Cursor, Speech, StateChange
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PRICES = {"gpt-5": ModelPrice(input=1.25, cached_input=0.125, output=10.0)}
MAREN, WREN, QUAY, WAREHOUSE_LANE = 1001, 2004, 101, 106
ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip
WHISTLE = "A watch whistle shrills along the quay."
SITUATION = {"Title": "Cutpurse on the quay", "Description": "Wren robbed Maren."}


WHY = "a theft on the quay"
GATE_USAGE = Usage(300, 0, 20, 0)
TURN_USAGE = Usage(2000, 500, 150, 40)


def acting() -> tuple[Step, Step]:
    """A turn's answers: a situation opened and an echo, then Noop."""
    situation = {**SITUATION, "CharacterId": None, "RoomId": QUAY}
    return (
        calls(
            ("CreateSituation", situation),
            ("EchoToRoom", {"Room": QUAY, "Text": WHISTLE}),
            text="thinking aloud",
            usage=TURN_USAGE,
        ),
        calls(("Noop", {}), text="thinking aloud", usage=TURN_USAGE),
    )


async def watcher(store: Store) -> Storyteller:
    st = await store.storytellers.create("Harbour Watch")
    return await store.storytellers.save(
        replace(
            st,
            paused=False,
            subscriptions=frozenset({EventKind.ROOM}),
            surveillance=Surveillance(zones=frozenset({1})),
            custom_tools=(ECHO,),
        )
    )


def runner(
    store: Store,
    world: SimWorld,
    model: Model,
    *,
    record: bool = True,
    into: Store | None = None,
) -> AgentTurnRunner:
    """A recording runner; runs are stored in `into` (default: `store`), the cost ledger in
    `store` (a request whose ledger row cannot be written is not sent)."""
    clock = FakeClock(T0)
    db = (into or store).db
    metered = metered_model(model, RuntimeStats(), PRICES, clock=clock)
    recorder = RunRecorder(RunRepository(db), store.ledger, clock, record=record)
    return turn_runner(store, world, metered, clock=clock, recorder=recorder)


async def record_a_turn(store: Store, world: SimWorld) -> tuple[Storyteller, int]:
    """Judge a theft, run its turn; the turn's run id."""
    st = await watcher(store)
    echo = world.emote(WREN, "slips a hand into Maren Tidewell's purse and runs!")
    agent = runner(store, world, ScriptedModel(attend_all(WHY, usage=GATE_USAGE), *acting()))
    [verdict] = await agent.judge(st, [Trigger.from_event(echo)])
    turn = await agent.run_turn(
        st, replace(Trigger.from_event(echo), attention_reason=verdict.reason)
    )
    assert turn.outcome == "completed"
    [summary] = await RunRepository(store.db).list(kind="turn")
    return st, summary.id


async def test_a_turn_and_its_attention_call_are_recorded_with_costs(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    runs = RunRepository(sqlite_store.db)
    stored = await runs.get(run_id)
    summary, record = stored.summary, stored.record
    assert (summary.outcome, summary.verdict, summary.rounds, summary.tool_calls) == (
        "completed",
        "interested",
        2,
        3,
    )
    assert (summary.trigger_kind, summary.room_id, summary.storyteller_name) == (
        "room_echo",
        WAREHOUSE_LANE,  # where Wren was
        "Harbour Watch",
    )
    assert "slips a hand into Maren Tidewell's purse" in record["prompt"]
    assert record["trigger"]["attention_reason"] == "a theft on the quay"
    assert [c["name"] for c in record["turn"]["calls"]] == ["CreateSituation", "EchoToRoom", "Noop"]
    assert record["turn"]["requests"][0]["response"]["output_text"] == "thinking aloud"
    taped = {(e["service"], e["method"]) for e in record["tape"]}
    assert {
        ("world", "execute_prog"),
        ("situations", "create"),
        ("situations", "open_scoped"),
    } <= taped
    [situation] = await sqlite_store.situations.list(st.id or 0)
    assert summary.situation_id == situation.id == record["situations"][0]
    [attention] = await runs.related(summary)
    assert (attention.kind, attention.outcome, attention.rounds) == ("attention", "interested", 1)
    attention_record = (await runs.get(attention.id)).record
    assert attention_record["verdict"]["reason"] == "a theft on the quay"
    [judged] = attention_record["events"]
    assert judged["verdict"]["decision"] == "interested"
    assert judged["trigger"]["event"]["cursor"] == record["trigger"]["event"]["cursor"]
    assert attention_record["request"]["text"]["format"]["name"] == "attention_verdicts"
    # the ledger: one row per request, all three charged to the situation the turn opened
    lines = await LedgerRepository(sqlite_store.db).totals("situation")
    assert [(line.key, line.requests) for line in lines] == [(str(situation.id), 3)]
    turn_cost = 2 * (1500 * 1.25 + 500 * 0.125 + 150 * 10.0) / 1e6
    assert summary.cost_usd == pytest.approx(turn_cost)
    assert summary.input_tokens == 4000 and summary.reasoning_tokens == 80


async def test_an_ignored_event_leaves_a_small_attention_record(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st = await watcher(sqlite_store)
    echo = world.emote(MAREN, "yawns.")
    ignore = text(json.dumps({"attend": [], "ignore": ["1"]}), usage=GATE_USAGE)
    [verdict] = await runner(sqlite_store, world, ScriptedModel(ignore)).judge(
        st, [Trigger.from_event(echo)]
    )
    assert not verdict.interested
    [run] = await RunRepository(sqlite_store.db).list()
    assert (run.kind, run.outcome, run.verdict, run.tool_calls) == (
        "attention",
        "ignore",
        "ignore",
        0,
    )
    assert run.cost_usd == pytest.approx((300 * 1.25 + 20 * 10.0) / 1e6)


async def test_without_run_records_only_the_ledger_is_written(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st = await watcher(sqlite_store)
    agent = runner(sqlite_store, world, ScriptedModel(*acting()), record=False)
    await agent.run_turn(st, Trigger(TriggerKind.DIRECT, occurred_at=T0, text="the bells"))
    assert await RunRepository(sqlite_store.db).list() == []
    [line] = await LedgerRepository(sqlite_store.db).totals("storyteller")
    assert line.requests == 2


async def test_a_run_that_cannot_be_stored_does_not_fail_the_turn(
    sqlite_store: Store, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    unmigrated = Store.open(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}", clock=SystemClock())
    try:
        st = await watcher(sqlite_store)
        agent = runner(
            sqlite_store, SimWorld.harbour_town(), ScriptedModel(*acting()), into=unmigrated
        )
        turn = await agent.run_turn(st, Trigger(TriggerKind.DIRECT, occurred_at=T0, text="bells"))
        assert turn.outcome == "completed"
        assert "the turn run of storyteller 1 could not be stored: StorageError" in caplog.text
    finally:
        await unmigrated.close()


async def test_prompts_and_player_text_stay_out_of_the_log(
    sqlite_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await record_a_turn(sqlite_store, SimWorld.harbour_town())
    ours = [r.getMessage() for r in caplog.records if r.name.startswith("storyteller")]
    assert ours  # the turn did log
    for secret in ("purse", "a theft on the quay", WHISTLE, "Cutpurse", "thinking aloud"):
        assert not [m for m in ours if secret in m], secret


async def test_a_recorded_turn_replays_identically_and_acts_on_nothing(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    heard = world.output_of(MAREN)
    assert WHISTLE in heard
    stored = await RunRepository(sqlite_store.db).get(run_id)
    report = await replay_turn(
        run_id, stored.record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    assert report.identical, report.differences
    assert [c["name"] for c in report.replayed["calls"]] == [
        "CreateSituation",
        "EchoToRoom",
        "Noop",
    ]
    assert report.replayed["calls"] == report.recorded["calls"]
    assert world.output_of(MAREN) == heard  # the prog did not run again
    assert len(await sqlite_store.situations.list(st.id or 0)) == 1  # nothing was created
    assert report.charges == []


async def test_a_turn_recorded_before_prompts_were_budgeted_still_replays(
    sqlite_store: Store,
) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    record = (await RunRepository(sqlite_store.db).get(run_id)).record
    # What such a record lacks: the budget's report, the notes fence, the digest (it names
    # no taped services, only flags: speech history taped, no digest) and the knowledge reads
    # on its tape.
    for key in ("prompt_budget", "notes_fence", "services"):
        del record[key]
    record["speech_history"] = True
    newer = {"open_universal", "open_scoped", "candidates", "latest"}
    record["tape"] = [e for e in record["tape"] if e["method"] not in newer]
    report = await replay_turn(
        run_id, record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    assert report.replayed["calls"] == report.recorded["calls"]
    where = {d.where for d in report.differences}
    # Today's prompt reads what the tape does not hold: those reads are named, and the blocks
    # they would have filled are left out of the replayed prompt.
    assert {"situations.open_universal", "situations.open_scoped", "memories.candidates"} <= where
    assert "digests.latest" not in where  # the record says no digest was read


async def test_a_changed_prompt_shows_in_the_replay(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    changed = await sqlite_store.storytellers.save(replace(st, system_prompt="You are a gull."))
    stored = await RunRepository(sqlite_store.db).get(run_id)
    report = await replay_turn(
        run_id, stored.record, changed, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    assert not report.identical
    where = [d.where for d in report.differences]
    # The cache key names the instructions and tools, so it changes with them.
    assert where == [
        "request 1 instructions",
        "request 1 prompt_cache_key",
        "request 2 instructions",
        "request 2 prompt_cache_key",
    ]
    assert report.differences[0].replayed.startswith("You are a gull.")
    assert report.replayed["calls"] == report.recorded["calls"]  # same recorded answers


async def test_changed_tool_behaviour_shows_in_the_replay(
    sqlite_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    stored = await RunRepository(sqlite_store.db).get(run_id)
    monkeypatch.setattr("storyteller_daemon.agent.tools.registry.NOOP_MESSAGE", "Nothing to do.")
    report = await replay_turn(
        run_id, stored.record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    [difference] = report.differences
    assert difference.where == "call 3 Noop result"
    assert "No action taken." in difference.recorded and "Nothing to do." in difference.replayed


async def test_a_removed_tool_is_refused_and_its_prog_is_missed(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    without = await sqlite_store.storytellers.save(replace(st, custom_tools=()))
    stored = await RunRepository(sqlite_store.db).get(run_id)
    report = await replay_turn(
        run_id, stored.record, without, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    where = [d.where for d in report.differences]
    assert "call 2 EchoToRoom result" in where and "call 2 EchoToRoom" in where
    assert "world.execute_prog" in where  # the recorded prog run is no longer asked for
    flags = next(d for d in report.differences if d.where == "call 2 EchoToRoom")
    assert (flags.recorded, flags.replayed) == ("run", "refused")


async def test_replay_refuses_an_attention_record(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    runs = RunRepository(sqlite_store.db)
    [attention] = await runs.related((await runs.get(run_id)).summary)
    with pytest.raises(ValidationError, match="only turns can be replayed"):
        await replay_turn(
            attention.id,
            (await runs.get(attention.id)).record,
            st,
            LimitsConfig(),
            runner=replay_runner,
            clock=FakeClock(),
        )


async def test_a_live_model_is_asked_with_the_recorded_inputs(sqlite_store: Store) -> None:
    world = SimWorld.harbour_town()
    st, run_id = await record_a_turn(sqlite_store, world)
    stored = await RunRepository(sqlite_store.db).get(run_id)
    usage = Usage(1000, 0, 100, 0)
    async with ScriptedResponsesServer(
        responder=lambda body: Reply.calls(("Noop", {}), usage=usage)
    ) as server:
        live = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
        try:
            report = await replay_turn(
                run_id,
                stored.record,
                st,
                LimitsConfig(),
                runner=replay_runner,
                clock=FakeClock(),
                live=live,
                live_name="gpt-5-mini",
                prices=PRICES,
            )
        finally:
            await live.close()
    assert [b["model"] for b in server.requests] == ["gpt-5-mini"]
    first_input = server.requests[0]["input"][0]["content"]
    assert first_input == stored.record["prompt"]  # the recorded inputs, rebuilt
    assert [c["name"] for c in report.replayed["calls"]] == ["Noop"]
    assert report.differences[0].where == "call 1"
    assert report.model.endswith("as gpt-5-mini")
    [charge] = report.charges
    assert (charge.purpose, charge.model, charge.storyteller_id) == ("replay", "gpt-5-mini", st.id)
    assert charge.cost_usd == pytest.approx((1000 * 1.25 + 100 * 10.0) / 1e6)  # gpt-5's price
    assert len(await sqlite_store.situations.list(st.id or 0)) == 1


@pytest.mark.parametrize(
    "trigger",
    [
        Trigger(TriggerKind.HEARTBEAT, occurred_at=T0, heartbeat=Heartbeat.HOUR),
        Trigger(TriggerKind.DIRECT, occurred_at=T0, text="the bells", involved=frozenset({3, 1})),
        Trigger.from_event(
            Speech(cursor=Cursor("e", 4), cell_id=QUAY, zone_id=1, occurred_at=T0, speaker_id=MAREN,
                   speaker_name="Maren", text="Thief!", target_id=WREN, target_kind="character")
        ),
        Trigger.from_event(
            Crime(cursor=Cursor("e", 5), cell_id=QUAY, zone_id=None, occurred_at=T0, crime_id=9,
                  crime_type="Theft", legal_authority="Harbour Ward", criminal_id=WREN,
                  victim_id=MAREN)
        ),
        Trigger.from_event(
            StateChange(cursor=Cursor("e", 6), cell_id=QUAY, zone_id=1, occurred_at=T0,
                        character_id=MAREN, state=CharacterState.PASS_OUT)
        ),
    ],
)  # fmt: skip
def test_every_trigger_survives_the_record(trigger: Trigger) -> None:
    stored = json.loads(json.dumps(encode_trigger(trigger)))
    assert decode_trigger(stored) == trigger
