"""The offline stand-in's plan rules (what `make demo` shows): a fixed plan made on a heartbeat,
its due steps done one per heartbeat, a failed step replanned, each saying it is rule-based."""

from __future__ import annotations

from dataclasses import replace

from director_rig import MAREN, director_rig

from storyteller_daemon.agent.models.offline import OfflineStandInModel
from storyteller_daemon.agent.models.offline_plans import BELL_LINE, RULE_GOAL, RULE_REASON
from storyteller_daemon.domain.direction import ContextProvider, ProviderKind
from storyteller_daemon.domain.story_plans import PlanStatus

PLACES = ContextProvider("places", ProviderKind.TEXT, 100, "The quay is room #101.")


async def test_the_stand_in_makes_a_plan_and_advances_it(sqlite_url: str) -> None:
    model = OfflineStandInModel()
    async with director_rig(sqlite_url, model=model, providers=(PLACES,)) as rig:
        sid = rig.teller.id or 0
        made = await rig.runner.run_turn(rig.teller, rig.heartbeat())
        assert [c.name for c in made.calls] == ["CreateStoryPlan", "Noop"]
        [plan] = await rig.store.plans.list(sid)
        assert plan.goal == RULE_GOAL and "rule-based" in plan.goal
        assert [s.tool for s in plan.steps] == ["CreateSituation", "EchoToRoom", "CreateSituation"]
        for hour, tool in enumerate(("CreateSituation", "EchoToRoom", "CreateSituation"), 1):
            await rig.clock.advance(3600)
            turn = await rig.runner.run_turn(rig.teller, rig.heartbeat())
            assert turn.calls[0].name == tool and turn.calls[0].envelope["ok"], turn.calls[0]
            assert (await rig.store.plans.get(sid, plan.id)).steps[hour - 1].state.value == "done"
        assert (await rig.store.plans.get(sid, plan.id)).status is PlanStatus.COMPLETED
        assert any(BELL_LINE in line for line in rig.world.output_of(MAREN))


async def test_the_stand_in_replans_a_failed_step(sqlite_url: str) -> None:
    model = OfflineStandInModel()
    gone = ContextProvider("places", ProviderKind.TEXT, 100, "The quay is room #9999.")
    async with director_rig(sqlite_url, model=model, providers=(gone,)) as rig:
        sid = rig.teller.id or 0
        await rig.runner.run_turn(rig.teller, rig.heartbeat())
        [plan] = await rig.store.plans.list(sid)
        rig.teller = await rig.store.storytellers.save(
            replace(rig.teller, direction=replace(rig.teller.direction, providers=()))
        )
        for _ in range(2):  # the situation, then the echo into a room that does not exist
            await rig.clock.advance(3600)
            await rig.runner.run_turn(rig.teller, rig.heartbeat())
        assert (await rig.store.plans.get(sid, plan.id)).status is PlanStatus.NEEDS_REPLAN
        await rig.clock.advance(3600)
        await rig.runner.run_turn(rig.teller, rig.heartbeat())
        replanned = await rig.store.plans.get(sid, plan.id)
        assert replanned.status is PlanStatus.ACTIVE
        assert replanned.history[-1].reason == RULE_REASON
