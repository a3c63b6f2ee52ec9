"""Story plans across heartbeats: made, advanced one step per heartbeat, failed and replanned,
expired, and held to the storyteller's own tools; on SQLite and PostgreSQL, on a fake clock."""

from __future__ import annotations

from dataclasses import replace

from director_rig import MAREN, QUAY, Rig, create_plan, director_rig, echo, step

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.story_plans import PlanStatus, StepState
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import calls

THREE_STEPS = (
    step("EchoToRoom", "Unsettle the quay with a shout", Arguments='{"Room": 101}'),
    step("CreateSituation", "Open a thread on the missing ledger"),
    step("EchoToRoom", "Let the harbour bell toll once"),
)


async def make_plan(rig: Rig, *steps: dict[str, object], hours: int | None = None) -> int:
    record = await rig.beat(create_plan("Bring the ledger to light", *steps, hours=hours))
    [made] = [c for c in record.calls if c.name == "CreateStoryPlan"]
    assert made.envelope["ok"] is True, made.envelope
    plan_id = made.envelope["result"]["Id"]
    assert isinstance(plan_id, int)
    return plan_id


def prompt_of(rig: Rig) -> str:
    content = rig.model.requests[-1].input[0]["content"]
    assert isinstance(content, str)
    return content


async def test_a_three_step_plan_advances_one_step_per_heartbeat(db_url: str) -> None:
    async with director_rig(db_url) as rig:
        sid = rig.teller.id or 0
        plan_id = await make_plan(rig, *THREE_STEPS)
        await rig.advance(1)
        first = await rig.beat(calls(echo(QUAY, "Someone yells about a stolen ledger!")))
        assert f"Plan #{plan_id} step 1 (due: the heartbeat): call EchoToRoom" in (prompt_of(rig))
        assert first.calls[0].envelope["ok"] is True
        plan = await rig.store.plans.get(sid, plan_id)
        assert [s.state for s in plan.steps] == [StepState.DONE, StepState.PENDING] + [
            StepState.PENDING
        ]
        run = await rig.last_run()
        assert run["direction"]["plan_steps"][0]["outcome"] == "done"

        await rig.advance(1)
        situation = ("CreateSituation", {"Title": "The ledger", "Description": "Missing."})
        await rig.beat(calls(situation))
        assert f"Plan #{plan_id} step 2" in prompt_of(rig)
        await rig.advance(1)
        await rig.beat(calls(echo(QUAY, "The harbour bell tolls.")))
        assert f"Plan #{plan_id} step 3" in prompt_of(rig)
        done = await rig.store.plans.get(sid, plan_id)
        assert done.status is PlanStatus.COMPLETED
        assert [e.action for e in done.history] == [
            "created", "step_done", "step_done", "step_done", "completed",
        ]  # fmt: skip
        await rig.advance(1)
        await rig.beat()
        assert "Plan steps due now" not in prompt_of(rig)  # a finished plan asks for nothing


async def test_the_plan_block_is_stable_until_the_plan_changes(sqlite_url: str) -> None:
    async with director_rig(sqlite_url) as rig:
        await make_plan(rig, *THREE_STEPS)
        await rig.advance(1)
        await rig.beat()  # the model leaves the due step alone: nothing changes
        first = prompt_of(rig)
        await rig.advance(1)
        await rig.beat(calls(echo(QUAY)))
        second = prompt_of(rig)
        await rig.advance(1)
        await rig.beat()
        third = prompt_of(rig)
        stable = (await rig.last_run())["prompt_budget"]["stable_chars"]
        assert "Your story plans" in third[:stable]
        assert "[pending] EchoToRoom" in first and "[done] EchoToRoom" in third
        # The first two prompts share their stable start (no plan changed between them); the
        # step done in the second turn changed the plan block of the third.
        assert first[: first.index("Plan steps due now")] == second[: second.index("Plan steps")]
        assert third[:stable] != first[:stable]


async def test_a_failed_step_leads_to_a_recorded_replan(db_url: str) -> None:
    async with director_rig(db_url) as rig:
        sid = rig.teller.id or 0
        plan_id = await make_plan(rig, step("EchoToRoom", "Shout on the lost pier"), THREE_STEPS[1])
        await rig.advance(1)
        failed = await rig.beat(calls(echo(9999, "Anyone there?")))
        assert failed.calls[0].envelope["ok"] is False
        plan = await rig.store.plans.get(sid, plan_id)
        assert plan.status is PlanStatus.NEEDS_REPLAN and plan.steps[0].state is StepState.FAILED
        assert "EchoToRoom failed" in plan.history[-1].reason

        await rig.advance(1)
        reason = "There is no lost pier; the quay will do."
        new_steps = [step("EchoToRoom", "Shout on the quay"), THREE_STEPS[1]]
        replan = (
            "UpdateStoryPlan",
            {"Id": plan_id, "Action": "replan", "Reason": reason, "Steps": new_steps,
             "Goal": None, "ExpiresInHours": None},
        )  # fmt: skip
        record = await rig.beat(calls(replan))
        assert "A step failed: replan it" in prompt_of(rig)
        assert "Plan steps due now" not in prompt_of(rig)  # nothing is due until it is replanned
        assert record.calls[0].envelope["ok"] is True, record.calls[0].envelope
        plan = await rig.store.plans.get(sid, plan_id)
        assert plan.status is PlanStatus.ACTIVE
        assert [(e.action, e.reason) for e in plan.history][-1] == ("replanned", reason)
        assert [s.state for s in plan.steps] == [
            StepState.FAILED, StepState.PENDING, StepState.PENDING,
        ]  # fmt: skip
        await rig.advance(1)
        await rig.beat(calls(echo(QUAY)))
        assert f"Plan #{plan_id} step 2" in prompt_of(rig)


async def test_an_expired_plan_stops_steering(db_url: str) -> None:
    async with director_rig(db_url) as rig:
        sid = rig.teller.id or 0
        plan_id = await make_plan(rig, *THREE_STEPS, hours=1)
        await rig.advance(2)
        await rig.beat()
        assert "Your story plans" not in prompt_of(rig)
        plan = await rig.store.plans.get(sid, plan_id)
        assert plan.status is PlanStatus.EXPIRED and plan.history[-1].action == "expired"
        late = ("UpdateStoryPlan", {"Id": plan_id, "Action": "step_done", "Reason": "late"})
        record = await rig.beat(calls(late))
        assert record.calls[0].envelope["ok"] is False


async def test_steps_may_only_name_the_storytellers_own_tools(sqlite_url: str) -> None:
    async with director_rig(sqlite_url) as rig:
        record = await rig.beat(create_plan("Flood the town", step("OpenSluices", "Flood it")))
        refused = record.calls[0].envelope
        assert (
            refused["ok"] is False
            and "'OpenSluices', which this storyteller may not" in (refused["error"])
        )
        plan_id = await make_plan(rig, *THREE_STEPS)
        # The admin takes the custom tool away: the step fails when it comes due, not runs.
        await rig.store.storytellers.save(replace(rig.teller, custom_tools=()))
        await rig.advance(1)
        await rig.beat()
        plan = await rig.store.plans.get(rig.teller.id or 0, plan_id)
        assert plan.status is PlanStatus.NEEDS_REPLAN
        assert "no longer one this storyteller may call" in plan.steps[0].note
        assert "Plan steps due now" not in prompt_of(rig)


async def test_a_step_waiting_for_an_event_comes_due_when_it_happens(sqlite_url: str) -> None:
    async with director_rig(sqlite_url) as rig:
        wait = {"Kind": "speech", "RoomId": QUAY, "CharacterId": None, "Words": "ledger"}
        plan_id = await make_plan(rig, step("EchoToRoom", "Answer the talk", WaitFor=wait))
        await rig.advance(1)
        await rig.beat()
        assert "waits for speech in room #101" in prompt_of(rig)
        assert "Plan steps due now" not in prompt_of(rig)
        talk = Trigger.from_event(rig.world.say(MAREN, "Has anyone seen the ledger?"))
        await rig.beat(calls(echo(QUAY, "A dockhand looks up sharply.")), trigger=talk)
        assert f"Plan #{plan_id} step 1 (due: its condition was met" in prompt_of(rig)
        plan = await rig.store.plans.get(rig.teller.id or 0, plan_id)
        assert plan.status is PlanStatus.COMPLETED


async def test_plan_tools_are_offered_only_to_storytellers_that_plan(sqlite_url: str) -> None:
    async with director_rig(sqlite_url, plans=False) as rig:
        record = await rig.beat(create_plan("Anything", *THREE_STEPS))
        assert record.calls[0].refused
        assert "only to storytellers that plan" in record.calls[0].envelope["error"]
        assert not {"CreateStoryPlan", "ClaimScene"} & {
            t.name for t in rig.model.requests[-1].tools
        }


async def test_a_plans_turn_replays_identically(sqlite_url: str) -> None:
    from storyteller_daemon.config import LimitsConfig
    from storyteller_daemon.runs import replay_turn
    from storyteller_daemon.runtime.turns import replay_runner
    from storyteller_daemon.storage.runs import RunRepository

    async with director_rig(sqlite_url) as rig:
        await make_plan(rig, *THREE_STEPS)
        await rig.advance(1)
        await rig.beat(calls(echo(QUAY)))
        runs = RunRepository(rig.store.db)
        newest = (await runs.list(kind="turn"))[0]
        stored = await runs.get(newest.id)
        assert stored.record["direction"]["plan_steps"][0]["outcome"] == "done"
        before = await rig.store.plans.list(rig.teller.id)
        report = await replay_turn(
            newest.id,
            stored.record,
            rig.teller,
            LimitsConfig(),
            runner=replay_runner,
            clock=FakeClock(),
        )
        assert report.identical, report.differences
        assert await rig.store.plans.list(rig.teller.id) == before  # the replay changed nothing
