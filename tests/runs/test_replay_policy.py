"""A replay passes the policy point as the recorded turn did.

A player's echo starts a turn under the daemon's policy: the destructive built-ins are not
offered (an echo is a player's words), a call repeating the player's words is refused as
dictated, and a call refused by a cap that counted earlier calls is refused again only because
the recording says so. The replay must offer the same tools and decide the same calls the same
way, or it reports differences the code did not make.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from test_replay import watcher

from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.policy_rules import DESTRUCTIVE_TOOLS
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig, PolicyConfig
from storyteller_daemon.domain.approvals import PolicyAction
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runs import ReplayReport, replay_turn
from storyteller_daemon.runtime.turns import replay_runner
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
WREN, QUAY = 2004, 106  # Wren stands in Warehouse Lane
SHOUT = "the harbour master takes bribes from every smuggler on the quay"
DICTATED = {"Room": QUAY, "Text": f"A voice rings out: {SHOUT}."}
OWN = {"Room": QUAY, "Text": "Gulls wheel over the quay."}


async def record(
    store: Store, policy_cfg: PolicyConfig, model: Model, *, earlier: int = 0
) -> tuple[Storyteller, int]:
    """A turn on Wren's shout, under a policy of `policy_cfg` that counted `earlier` prog
    calls of the storyteller in the last hour; its run id."""
    st = await watcher(store)
    world = SimWorld.harbour_town()
    clock = FakeClock(T0)
    policy = Policy(policy_cfg, clock, approvals=store.approvals)
    action = PolicyAction(st.id or 0, "EchoToRoom", T0 - timedelta(minutes=5), rooms=frozenset())
    policy.restore([action] * earlier, T0)
    runner = turn_runner(store, world, model, clock=clock, policy=policy)
    echo = Trigger.from_event(world.emote(WREN, f'shouts, "{SHOUT}!"'))
    await runner.run_turn(st, echo)
    [summary] = await store.runs.list(kind="turn")
    return st, summary.id


async def test_a_replay_offers_and_refuses_what_the_recorded_turn_did(sqlite_store: Store) -> None:
    model = ScriptedModel(calls(("EchoToRoom", DICTATED), ("EchoToRoom", OWN)), calls(("Noop", {})))
    st, run_id = await record(sqlite_store, PolicyConfig(), model)
    stored = await sqlite_store.runs.get(run_id)
    recorded = stored.record["turn"]
    [dictated, own, _] = recorded["calls"]
    assert (dictated["refused"], dictated["rule"]) == (True, "dictated")
    assert not own["refused"]
    offered = {t["name"] for t in recorded["requests"][0]["request"]["tools"]}
    assert not offered & DESTRUCTIVE_TOOLS
    report = await replay_turn(
        run_id, stored.record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock(T0)
    )
    assert report.identical, report.differences


async def replayed(
    store: Store, st: Storyteller, run_id: int, cfg: PolicyConfig | None = None, **drop: bool
) -> ReplayReport:
    """The replay of run `run_id` with today's policy `cfg`, without the record's `drop` keys."""
    record = (await store.runs.get(run_id)).record
    for key in drop:
        del record[key]
    return await replay_turn(
        run_id, record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock(T0), policy=cfg
    )


async def test_a_cap_that_counted_earlier_calls_refuses_again_from_the_recording(
    sqlite_store: Store,
) -> None:
    model = ScriptedModel(calls(("EchoToRoom", OWN)), calls(("Noop", {})))
    cfg = PolicyConfig(max_prog_calls_per_storyteller_per_hour=2)
    st, run_id = await record(sqlite_store, cfg, model, earlier=2)
    [capped, _] = (await sqlite_store.runs.get(run_id)).record["turn"]["calls"]
    assert (capped["refused"], capped["rule"]) == (True, "storyteller_cap")
    report = await replayed(sqlite_store, st, run_id)
    assert report.identical, report.differences
    # A record from before records said whether a policy was passed was the daemon's: it did.
    assert (await replayed(sqlite_store, st, run_id, policed=True)).identical


async def test_a_parked_call_is_parked_again_and_nothing_is_stored(sqlite_store: Store) -> None:
    model = ScriptedModel(calls(("EchoToRoom", OWN)), calls(("Noop", {})))
    cfg = PolicyConfig(approve=["*/EchoToRoom"])
    st, run_id = await record(sqlite_store, cfg, model)
    [parked, _] = (await sqlite_store.runs.get(run_id)).record["turn"]["calls"]
    assert parked["parked"] and parked["envelope"]["result"]["approval"] == 1
    report = await replayed(sqlite_store, st, run_id, cfg)
    assert report.identical, report.differences
    assert len(await sqlite_store.approvals.list()) == 1


async def test_a_turn_recorded_without_a_policy_replays_without_one(sqlite_store: Store) -> None:
    model = ScriptedModel(calls(("EchoToRoom", DICTATED)), calls(("Noop", {})))
    st = await watcher(sqlite_store)
    world = SimWorld.harbour_town()
    runner = turn_runner(sqlite_store, world, model, clock=FakeClock(T0))
    await runner.run_turn(st, Trigger.from_event(world.emote(WREN, f'shouts, "{SHOUT}!"')))
    [summary] = await sqlite_store.runs.list(kind="turn")
    record = (await sqlite_store.runs.get(summary.id)).record
    assert record["policed"] is False and not record["turn"]["calls"][0]["refused"]
    assert (await replayed(sqlite_store, st, summary.id)).identical
