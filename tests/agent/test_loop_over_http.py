"""FutureMUD's loop-control tests, through the real openai SDK over HTTP to the test server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.loop import MALFORMED_FEEDBACK, MISSING_CALL_FEEDBACK, ToolLoop
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.agent.records import TurnOutcome, TurnRecord
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.app import ModelChoice, build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import LimitsConfig, parse_config
from storyteller_daemon.domain.storytellers import Heartbeat
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.sim import SimWorld

T0 = datetime(2026, 5, 1, tzinfo=UTC)


@dataclass
class Rig:
    server: ScriptedResponsesServer
    store: Store
    loop: ToolLoop
    ctx: ToolContext

    async def turn(self) -> TurnRecord:
        st = await self.store.storytellers.get("Loop")
        trigger = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="the bells ring")
        return await self.loop.run(st, trigger, "A bell rings.", self.ctx, turn_key="http-1")

    def user_texts(self, request_index: int) -> list[str]:
        items: list[dict[str, Any]] = self.server.requests[request_index]["input"]
        return [i["content"] for i in items if i.get("role") == "user"]


@pytest.fixture
async def rig(sqlite_store: Store) -> AsyncIterator[Rig]:
    await sqlite_store.storytellers.create("Loop")
    async with ScriptedResponsesServer() as server:
        model = OpenAIResponsesModel(api_key="sk-local", base_url=server.base_url, max_retries=0)
        ctx = ToolContext(
            TurnServices(
                world=SimWorld.harbour_town(),
                situations=sqlite_store.situations,
                memories=sqlite_store.memories,
                references=sqlite_store.references,
            )
        )
        try:
            yield Rig(server, sqlite_store, ToolLoop(model, LimitsConfig(), FakeClock()), ctx)
        finally:
            await model.close()


async def test_a_noop_only_batch_ends_the_turn(rig: Rig) -> None:
    rig.server.enqueue(Reply.calls(("Noop", {})))
    record = await rig.turn()
    assert record.outcome is TurnOutcome.NOOP
    assert len(rig.server.requests) == 1


async def test_missing_tool_calls_are_retried_twice_then_the_turn_stops(rig: Rig) -> None:
    rig.server.enqueue(*(Reply.text("I would rather talk.") for _ in range(3)))
    record = await rig.turn()
    assert record.outcome is TurnOutcome.NO_TOOL_CALL
    assert len(rig.server.requests) == 3  # the first try and two retries
    assert [r["tool_choice"] for r in rig.server.requests] == ["required"] * 3
    assert rig.user_texts(1)[-1] == MISSING_CALL_FEEDBACK
    assert rig.user_texts(2).count(MISSING_CALL_FEEDBACK) == 2


async def test_malformed_json_is_fed_back_three_times_then_the_turn_stops(rig: Rig) -> None:
    rig.server.enqueue(*(Reply.raw_arguments("CreateSituation", "{") for _ in range(4)))
    record = await rig.turn()
    assert record.outcome is TurnOutcome.MALFORMED_BUDGET
    assert len(rig.server.requests) == 4
    second = rig.server.requests[1]["input"]
    outputs = [i for i in second if i.get("type") == "function_call_output"]
    assert len(outputs) == 1 and "Malformed tool-call JSON" in outputs[0]["output"]
    assert rig.user_texts(1)[-1] == MALFORMED_FEEDBACK
    assert await rig.store.situations.list(1) == []  # nothing was created


async def test_without_an_api_key_a_heartbeat_sends_nothing_and_runs_no_status_prog(
    sqlite_url: str,
) -> None:
    cfg = parse_config({"database": {"url": sqlite_url}, "model": {"api_key_env": "NO_KEY"}}, "t")
    store = Store.open(sqlite_url, clock=SystemClock())
    await store.db.upgrade()
    st = await store.storytellers.create("Beat")
    st = await store.storytellers.save(
        replace(
            st,
            paused=False,
            heartbeats=frozenset({Heartbeat.FIVE_MINUTES}),
            status_progs=((Heartbeat.FIVE_MINUTES, "AIStorytellerStatusFiveMinute"),),
        )
    )
    world = InstrumentedWorld(SimWorld.harbour_town())
    runtime = await build_runtime(
        cfg,
        environ={},
        world=world,
        choice=ModelChoice(None, "none"),
        store=store,
        clock=SystemClock(),
    )
    try:
        await runtime.daemon.reload(force=True)
        assert await runtime.pipeline.heartbeat(st.id or 0, Heartbeat.FIVE_MINUTES) is False
        assert await runtime.pipeline.direct(st, "the bells") is False
        assert world.count("execute_prog") == 0
        assert runtime.stats.dropped["api_key"] == 2
    finally:
        await runtime.close()
