"""What would change if: recorded turns compared under a changed model, prompt or tool set.

A theft on the sim world is judged (interested) and its turn opens a situation and echoes a
whistle through the storyteller's custom tool, then calls Noop. The comparison replays that turn
over its tape, asking the suite's scripted Responses server over HTTP (through the real openai
SDK) or the offline stand-in, and its attention batch is asked again.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from test_replay import watcher

from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.models.interface import Model, Usage
from storyteller_daemon.agent.models.offline import OfflineStandInModel
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import (
    ReasoningEffort,
    Storyteller,
)
from storyteller_daemon.runs.compare import (
    NOT_RUN,
    WOULD_RUN,
    Comparer,
    RecordedTurn,
    batches_of,
    likely_cost_usd,
)
from storyteller_daemon.runs.comparison import Change
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import replay_runner
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PRICES = {
    "gpt-5": ModelPrice(input=1.25, cached_input=0.125, output=10.0),
    "gpt-5-mini": ModelPrice(input=0.25, cached_input=0.025, output=2.0),
}
WREN, QUAY = 2004, 101
WHY = "a theft on the quay"
SITUATION = {
    "Title": "Cutpurse on the quay",
    "Description": "Wren robbed Maren.",
    "CharacterId": None,
    "RoomId": QUAY,
}
WHISTLE = {"Room": QUAY, "Text": "A watch whistle shrills along the quay."}
GATE_USAGE = Usage(300, 0, 20, 0)
TURN_USAGE = Usage(2000, 500, 150, 40)


async def record_turn(store: Store, model: Model | None = None) -> RecordedTurn:
    """The theft judged and its turn run (by the scripted model unless `model`), as stored."""
    st = await watcher(store)
    world = SimWorld.harbour_town()
    script = model or ScriptedModel(
        attend_all(WHY, usage=GATE_USAGE),
        calls(("CreateSituation", SITUATION), ("EchoToRoom", WHISTLE), usage=TURN_USAGE),
        calls(("Noop", {}), usage=TURN_USAGE),
    )
    clock = FakeClock(T0)
    runner = turn_runner(
        store, world, metered_model(script, RuntimeStats(), PRICES, clock=clock), clock=clock
    )
    echo = Trigger.from_event(world.emote(WREN, "slips a hand into Maren Tidewell's purse, thief!"))
    [verdict] = await runner.judge(st, [echo])
    assert verdict.interested
    await runner.run_turn(st, replace(echo, attention_reason=verdict.reason))
    return await stored_turn(store, st)


async def stored_turn(store: Store, st: Storyteller) -> RecordedTurn:
    """The storyteller's one recorded turn, with the batches that judged its event and today's
    settings."""
    [turn] = await store.runs.list(kind="turn")
    record = (await store.runs.get(turn.id)).record
    batches = [
        (b.id, (await store.runs.get(b.id)).record) for b in await store.runs.list(kind="attention")
    ]
    current = await store.storytellers.get(st.id or 0)
    return RecordedTurn(turn.id, record, current, batches_of(record, batches), turn.room_id)


def storyteller_model(*, ignore_if: str | None = None):  # type: ignore[no-untyped-def]
    """A responder acting like the recorded model: attends (unless the attention instructions
    hold `ignore_if`), then makes the recorded calls of the tools offered, then Noop."""

    def respond(body: dict[str, Any]) -> Reply:
        if "text" in body:  # an attention batch
            ignore = ignore_if is not None and ignore_if in body["instructions"]
            verdicts = (
                {"attend": [], "ignore": "1"}
                if ignore
                else {"attend": [{"id": "1", "why": WHY}], "ignore": ""}
            )
            return Reply.text(json.dumps(verdicts), usage=GATE_USAGE)
        if any(item.get("type") == "function_call_output" for item in body["input"]):
            return Reply.calls(("Noop", {}), usage=TURN_USAGE)
        offered = {tool["name"] for tool in body.get("tools", [])}
        wanted = [("CreateSituation", SITUATION), ("EchoToRoom", WHISTLE)]
        return Reply.calls(*[c for c in wanted if c[0] in offered], usage=TURN_USAGE)

    return respond


def comparer(change: Change, model: Model) -> Comparer:
    return Comparer(
        change,
        model,
        replay_runner,
        LimitsConfig(),
        AttentionOptions(),
        PRICES,
        FakeClock(T0),
    )


async def compare_live(turn: RecordedTurn, change: Change, **responder: Any) -> tuple[Any, Any]:
    """The comparison of `turn` asking the scripted server, and the server's requests."""
    async with ScriptedResponsesServer(responder=storyteller_model(**responder)) as server:
        live = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
        try:
            compared = await comparer(change, live).compare([turn])
        finally:
            await live.close()
    return compared, server.requests


async def test_unchanged_settings_compare_equal(sqlite_store: Store) -> None:
    turn = await record_turn(sqlite_store)
    comparison, _ = await compare_live(turn, Change())
    [compared] = comparison.turns
    assert (
        compared.before.calls
        == compared.after.calls
        == [
            "CreateSituation",
            "EchoToRoom",
            "Noop",
        ]
    )
    assert not compared.added and not compared.removed and compared.flips == []
    assert compared.after.usage == compared.before.usage == GATE_USAGE + TURN_USAGE + TURN_USAGE
    assert compared.after.usd == pytest.approx(compared.before.usd)
    assert len(await sqlite_store.situations.list(turn.storyteller.id or 0)) == 1  # no new one


async def test_a_tool_removed_from_the_storyteller_loses_its_calls(sqlite_store: Store) -> None:
    turn = await record_turn(sqlite_store)
    without = await sqlite_store.storytellers.save(replace(turn.storyteller, custom_tools=()))
    comparison, requests = await compare_live(replace(turn, storyteller=without), Change())
    [compared] = comparison.turns
    assert "EchoToRoom" not in {t["name"] for t in requests[1]["tools"]}  # the turn's first
    assert compared.removed == {"EchoToRoom": 1}
    assert compared.added == {}
    assert compared.after.calls == ["CreateSituation", "Noop"]
    data = comparison.to_dict()
    assert data["total"]["removed"] == {"EchoToRoom": 1} and data["total"]["added"] == {}


async def test_a_cheaper_model_costs_less_for_the_same_tokens(sqlite_store: Store) -> None:
    turn = await record_turn(sqlite_store)
    comparison, requests = await compare_live(turn, Change(model="gpt-5-mini"))
    assert {body["model"] for body in requests} == {"gpt-5-mini"}
    [compared] = comparison.turns
    spent = [GATE_USAGE, TURN_USAGE, TURN_USAGE]
    assert compared.before.usd == pytest.approx(sum(cost_usd(PRICES, "gpt-5", u) for u in spent))
    after = sum(cost_usd(PRICES, "gpt-5-mini", u) for u in spent)
    assert compared.after.usd == pytest.approx(after)
    assert compared.after.usd < compared.before.usd
    assert comparison.likely_cost_usd == pytest.approx(after)  # same tokens, the target's price
    totals = comparison.to_dict()["total"]
    assert totals["usd"]["after"] < totals["usd"]["before"]
    assert totals["tokens"]["before"] == totals["tokens"]["after"]


async def test_a_prompt_that_ignores_the_event_flips_its_verdict_and_skips_the_turn(
    sqlite_store: Store,
) -> None:
    turn = await record_turn(sqlite_store)
    change = Change(prompt="You watch the temple, nothing else.", prompt_file="temple.txt")
    comparison, requests = await compare_live(turn, change, ignore_if="the temple")
    assert len(requests) == 1  # the attention batch; no turn is run
    assert "You watch the temple" in requests[0]["instructions"]
    [compared] = comparison.turns
    [flip] = compared.flips
    assert (flip.run_id, flip.event, flip.before, flip.after) == (
        turn.attention[0][0],
        1,
        "interested",
        "ignore",
    )
    assert compared.after.outcome == NOT_RUN and compared.after.calls == []
    assert compared.removed == {"CreateSituation": 1, "EchoToRoom": 1, "Noop": 1}
    assert compared.after.usage == GATE_USAGE
    assert comparison.to_dict()["total"]["flips"] == 1


async def test_a_turn_is_not_run_when_only_another_event_of_its_batch_is_attended(
    sqlite_store: Store,
) -> None:
    st = await watcher(sqlite_store)
    world = SimWorld.harbour_town()
    clock = FakeClock(T0)
    script = ScriptedModel(
        attend_all(WHY, only=lambda line: "purse" in line, usage=GATE_USAGE),
        calls(("Noop", {}), usage=TURN_USAGE),
    )
    runner = turn_runner(
        sqlite_store, world, metered_model(script, RuntimeStats(), PRICES, clock=clock), clock=clock
    )
    theft = Trigger.from_event(world.emote(WREN, "slips a hand into Maren Tidewell's purse!"))
    yawn = Trigger.from_event(world.emote(1001, "yawns."))
    assert [v.interested for v in await runner.judge(st, [theft, yawn])] == [True, False]
    await runner.run_turn(st, replace(theft, attention_reason=WHY))
    turn = await stored_turn(sqlite_store, st)

    def swapped(body: dict[str, Any]) -> Reply:  # the yawn matters, the theft does not
        return Reply.text(json.dumps({"attend": [{"id": "2", "why": "a yawn"}], "ignore": "1"}))

    async with ScriptedResponsesServer(responder=swapped) as server:
        live = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
        try:
            [compared] = (await comparer(Change(), live).compare([turn])).turns
        finally:
            await live.close()
    assert len(server.requests) == 1  # the theft's turn is not run for the yawn's sake
    assert compared.after.outcome == NOT_RUN
    assert [(f.event, f.before, f.after) for f in compared.flips] == [
        (1, "interested", "ignore"),
        (2, "ignore", "interested"),
    ]


async def test_a_batch_the_recording_ignored_flips_to_a_turn_no_tape_holds(
    sqlite_store: Store,
) -> None:
    st = await sqlite_store.storytellers.create("Harbour Watch")
    st = await sqlite_store.storytellers.save(replace(st, paused=False))
    world = SimWorld.harbour_town()
    ignoring = ScriptedModel(text(json.dumps({"attend": [], "ignore": "1"}), usage=GATE_USAGE))
    clock = FakeClock(T0)
    metered = metered_model(ignoring, RuntimeStats(), PRICES, clock=clock)
    runner = turn_runner(sqlite_store, world, metered, clock=clock)
    [verdict] = await runner.judge(st, [Trigger.from_event(world.emote(WREN, "yawns."))])
    assert not verdict.interested
    [batch] = await sqlite_store.runs.list(kind="attention")
    ignored = RecordedTurn(
        batch.id, {}, st, ((batch.id, (await sqlite_store.runs.get(batch.id)).record),)
    )
    comparison, requests = await compare_live(ignored, Change(model="gpt-5-mini"))
    assert len(requests) == 1  # the batch asked again; there is no turn to replay
    [compared] = comparison.turns
    assert (compared.kind, compared.trigger) == ("attention", "Room Echo")
    assert (compared.before.outcome, compared.after.outcome) == (NOT_RUN, WOULD_RUN)
    [flip] = compared.flips
    assert (flip.before, flip.after) == ("ignore", "interested")
    assert "no tape" in compared.note
    assert compared.before.usage == compared.after.usage == GATE_USAGE


async def test_effort_is_sent_with_every_request(sqlite_store: Store) -> None:
    turn = await record_turn(sqlite_store)
    comparison, requests = await compare_live(turn, Change(effort=ReasoningEffort.MINIMAL))
    assert {body["reasoning"]["effort"] for body in requests} == {"minimal"}
    assert comparison.model.endswith("at minimal effort")
    assert comparison.to_dict()["change"] == {
        "model": None,
        "effort": "minimal",
        "prompt_file": None,
    }


async def test_the_offline_stand_in_drops_a_removed_tool(sqlite_store: Store) -> None:
    turn = await record_turn(sqlite_store, OfflineStandInModel())
    assert "EchoToRoom" in [c["name"] for c in turn.record["turn"]["calls"]]
    without = await sqlite_store.storytellers.save(replace(turn.storyteller, custom_tools=()))
    run = comparer(Change(), OfflineStandInModel())
    comparison = await run.compare([replace(turn, storyteller=without)])
    [compared] = comparison.turns
    assert compared.removed == {"EchoToRoom": 1} and compared.added == {}
    assert compared.flips == []
    assert [c.purpose for c in run.charges][:1] == ["replay"]


def test_the_estimate_prices_the_recorded_tokens_at_the_target_model() -> None:
    record = {"charges": [{"model": "gpt-5", "usage": {"input_tokens": 1_000_000}}]}
    attention = {"charges": [{"model": "gpt-5", "usage": {"output_tokens": 1_000_000}}]}
    st = Storyteller(name="Harbour Watch", id=1)
    turn = RecordedTurn(2, record, st, ((1, attention),))
    assert likely_cost_usd([turn], Change(), PRICES) == pytest.approx(1.25 + 10.0)
    assert likely_cost_usd([turn], Change(model="gpt-5-mini"), PRICES) == pytest.approx(0.25 + 2.0)
    assert likely_cost_usd([turn], Change(model="unpriced"), PRICES) == 0.0
