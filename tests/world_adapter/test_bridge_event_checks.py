"""``bridge check --events`` against a game without the ``cause_event`` hook: the checker asks
the operator for each event kind and an invoke, and checks what then arrives. Here the
"operator" is the test, acting in the sim world when told to; one who does nothing fails."""

from __future__ import annotations

import asyncio

from test_bridge_doubles import TOKEN, served, sim_world

from world_adapter.bridge.checks.events import OPERATOR_STEPS
from world_adapter.bridge.conformance import CheckResult, Status, run_checks
from world_adapter.bridge.world_server import WorldServer
from world_adapter.invocations import InvocationAnswer
from world_adapter.sim import SimWorld
from world_adapter.sim.hooks import cause_event

KINDS = ["room_echo", "speech", "crime", "state_change", "invoke"]


class Operator:
    """Does in the sim world what the checker asks, as a person at the game would."""

    def __init__(self, world: SimWorld, server: WorldServer) -> None:
        self.world = world
        self.server = server
        self.told: list[str] = []
        self.invocations: list[asyncio.Task[InvocationAnswer]] = []

    def __call__(self, step: str) -> None:
        self.told.append(step)
        kind = next(k for k, text in OPERATOR_STEPS.items() if text in step)
        if kind == "invoke":
            invoke = self.server.invoke("Harbour Watch", "Ring the bell.", request_id="op-1")
            self.invocations.append(asyncio.ensure_future(invoke))
        else:
            cause_event(self.world, kind)


def event_results(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name.removeprefix("event-"): r for r in results if r.name.startswith("event-")}


async def test_the_operator_is_asked_for_each_event_and_each_is_checked() -> None:
    world = sim_world()
    async with served(world) as server:
        operator = Operator(world, server)
        results = await run_checks(server.url, TOKEN, events=operator, event_seconds=5)
        answers = await asyncio.gather(*operator.invocations)
    found = event_results(results)
    assert list(found) == KINDS
    assert all(r.status is Status.PASS for r in found.values()), found
    assert all("caused by the operator" in r.detail for r in found.values())
    assert len(operator.told) == len(KINDS)
    assert [(a.accepted, a.reason) for a in answers] == [(False, "not_supported")]
    # Only the malformed check's three deliberate bad frames: the checker's invoked and
    # invoke_outcome frames were read as valid.
    assert server.stats.bad_frames == 3


async def test_an_event_that_never_comes_fails_its_check_with_the_reason() -> None:
    world = sim_world()
    async with served(world) as server:
        results = await run_checks(server.url, TOKEN, events=lambda step: None, event_seconds=0.3)
    found = event_results(results)
    assert {r.status for r in found.values()} == {Status.FAIL}
    assert "no crime arrived within 0.3 s (caused by the operator)" in found["crime"].detail
