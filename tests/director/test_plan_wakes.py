"""Events wake the plans waiting for them: the attention stage settles an event that meets a due
step's condition without a model call, so its turn advances the plan; on SQLite, a fake clock,
the daemon's turn runner and a scripted model."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from director_rig import HARBOUR_WARD, MAREN, QUAY, Rig, create_plan, director_rig, echo, step

from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.story_plans import PlanStatus, StepState
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.domain.work import WorkItem, WorkState
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.testing.clock import settle
from storyteller_daemon.testing.model import calls
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.steps import attend_all
from world_adapter.events import Cursor, Speech

LEDGER = {"Kind": "speech", "RoomId": QUAY, "Words": "ledger"}
ASKED = "Has anyone seen the harbour LEDGER?"


def said(seq: int, words: str, rig: Rig) -> Speech:
    return Speech(
        cursor=Cursor("e", seq),
        cell_id=QUAY,
        zone_id=HARBOUR_WARD,
        occurred_at=rig.clock.now(),
        speaker_id=MAREN,
        speaker_name="Maren",
        text=words,
    )


def attention_requests(rig: Rig) -> int:
    return sum(1 for r in rig.model.requests if not r.tools)


async def plan_waiting_for_the_ledger(rig: Rig) -> int:
    waiting = step("EchoToRoom", "Answer talk of the ledger", WaitFor=LEDGER)
    record = await rig.beat(create_plan("Bring the ledger to light", waiting))
    [made] = [c for c in record.calls if c.name == "CreateStoryPlan"]
    assert made.envelope["ok"] is True, made.envelope
    plan_id = made.envelope["result"]["Id"]
    assert isinstance(plan_id, int)
    return plan_id


@asynccontextmanager
async def pipeline_of(rig: Rig, *rules: AttentionRule) -> AsyncIterator[Pipeline]:
    """The daemon's pipeline over the rig's storyteller (hearing speech), runner and store."""
    teller = await rig.store.storytellers.save(
        replace(
            rig.teller,
            subscriptions=frozenset({EventKind.ROOM, EventKind.SPEECH}),
            attention_rules=rules,
        )
    )
    pipeline = wired_pipeline(
        rig.store,
        runner=rig.runner,
        clock=rig.clock,
        storytellers=[teller],
        zones=await rig.world.zones(),
        plans=rig.store.plans,
    ).pipeline
    task = asyncio.create_task(pipeline.run())
    await settle()
    try:
        yield pipeline
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def heard(pipeline: Pipeline, rig: Rig, seq: int, words: str) -> WorkItem:
    """Take one speech in, wait until the pipeline is idle; the speech's work item."""
    await pipeline.accept([said(seq, words, rig)])
    await pipeline.wait_idle()
    newest = (await BacklogRepository(rig.store.db, rig.clock).items(rig.teller.id or 0))[0]
    return newest


async def test_an_event_a_plan_waits_for_gets_a_turn_without_an_attention_call(
    sqlite_url: str,
) -> None:
    async with director_rig(sqlite_url) as rig:
        sid = rig.teller.id or 0
        plan_id = await plan_waiting_for_the_ledger(rig)
        async with pipeline_of(rig) as pipeline:
            rig.model.add(attend_all(only=lambda _: False))  # the model ignores small talk
            idle = await heard(pipeline, rig, 1, "Fine weather for the boats.")
            assert (idle.state, idle.rule) == (WorkState.IGNORED, None)
            assert attention_requests(rig) == 1

            rig.model.add(calls(echo(QUAY, "A clerk goes pale.")), calls(("Noop", {})))
            woke = await heard(pipeline, rig, 2, ASKED)
            assert (woke.state, woke.rule) == (WorkState.DONE, f"plan:{plan_id}")
            turn_prompt = str(rig.model.requests[-2].input[0]["content"])
            due = turn_prompt.split("Plan steps due now:\n", 1)[1].splitlines()[0]
            assert due.startswith(f"- Plan #{plan_id} step 1 (due: ")
            assert "condition was met" in due
            assert attention_requests(rig) == 1  # settled from memory, not by the model
            plan = await rig.store.plans.get(sid, plan_id)
            assert plan.status is PlanStatus.COMPLETED
            assert plan.steps[0].state is StepState.DONE
            assert pipeline.stats.filtered["plan"] == 1

            # The plan is done: the same words are the attention model's to judge again.
            rig.model.add(attend_all(only=lambda _: False))
            again = await heard(pipeline, rig, 3, ASKED)
            assert (again.state, again.rule) == (WorkState.IGNORED, None)
            assert attention_requests(rig) == 2


async def test_an_ignore_rule_of_the_admin_wins_over_a_plan(sqlite_url: str) -> None:
    async with director_rig(sqlite_url) as rig:
        sid = rig.teller.id or 0
        plan_id = await plan_waiting_for_the_ledger(rig)
        hush = AttentionRule("no-ledgers", RuleAction.IGNORE, pattern=r"ledger")
        async with pipeline_of(rig, hush) as pipeline:
            item = await heard(pipeline, rig, 1, ASKED)
            assert (item.state, item.rule) == (WorkState.IGNORED, "rule:no-ledgers")
            assert attention_requests(rig) == 0
            plan = await rig.store.plans.get(sid, plan_id)
            assert plan.steps[0].state is StepState.PENDING


async def test_a_storyteller_that_does_not_plan_has_its_events_judged(sqlite_url: str) -> None:
    async with director_rig(sqlite_url) as rig:
        await plan_waiting_for_the_ledger(rig)
        rig.teller = await rig.store.storytellers.save(
            replace(rig.teller, direction=replace(rig.teller.direction, plans=False))
        )
        async with pipeline_of(rig) as pipeline:
            rig.model.add(attend_all(only=lambda _: False))
            item = await heard(pipeline, rig, 1, ASKED)
            assert (item.state, item.rule) == (WorkState.IGNORED, None)
            assert attention_requests(rig) == 1
