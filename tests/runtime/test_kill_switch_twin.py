"""What every daemon of a database shares: the kill switch's database twin at the pipeline's
admission (a game's direct invocation is refused while any admin has set it) and before
approved calls (they wait), which the daemon holding their storyteller alone runs; on real
SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import Approval, ParkedCall
from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.runtime.scheduling.approvals import ApprovalRunner
from storyteller_daemon.runtime.spending.admission import Admission
from storyteller_daemon.storage.store import Store

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_a_direct_invocation_is_refused_while_the_database_flag_is_on(store: Store) -> None:
    st = await store.storytellers.create("Harbour Watch")
    admission = Admission(
        None, None, kill_switch=lambda: False, kill_flag=lambda: store.flags.on(KILL_SWITCH_FLAG)
    )
    direct = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="the bells")
    heartbeat = Trigger(TriggerKind.HEARTBEAT, occurred_at=T0, heartbeat=Heartbeat.TEN_MINUTES)
    assert await admission.admit(st, direct, frozenset()) is None
    await store.flags.set(KILL_SWITCH_FLAG, True, by="admin on another host")
    assert await admission.admit(st, direct, frozenset()) == (
        "kill_switch",
        "the kill switch is on",
    )
    assert await admission.admit(st, heartbeat, frozenset()) is None  # it acts only at calls
    await store.flags.set(KILL_SWITCH_FLAG, False, by="admin")
    assert await admission.admit(st, direct, frozenset()) is None


async def test_a_cluster_daemon_runs_only_the_approved_calls_of_its_storytellers(
    store: Store,
) -> None:
    now = datetime.now(UTC)
    ids = []
    for n, sid in enumerate((1, 2)):
        parked = await store.approvals.park(
            ParkedCall(
                key=f"k{n}",
                storyteller_id=sid,
                tool="SummonWatch",
                arguments='{"Room":101}',
                turn_key=f"t{n}",
                trigger="Room Echo",
                room_id=101,
                created_at=now,
                expires_at=now + timedelta(hours=1),
            )
        )
        await store.approvals.decide(parked.id, approve=True, now=now, by="admin")
        ids.append(parked.id)
    mine = await store.approvals.claim(frozenset({2}))
    assert [a.id for a in mine] == [ids[1]]
    theirs = await store.approvals.claim(frozenset({1}))
    assert [a.id for a in theirs] == [ids[0]]


async def test_approved_calls_wait_while_the_database_flag_is_on(store: Store) -> None:
    st = await store.storytellers.create("Harbour Watch")
    assert st.id is not None
    now = datetime.now(UTC)
    parked = await store.approvals.park(
        ParkedCall(
            key="k",
            storyteller_id=st.id,
            tool="SummonWatch",
            arguments='{"Room":101}',
            turn_key="t",
            trigger="Room Echo",
            room_id=101,
            created_at=now,
            expires_at=now + timedelta(hours=1),
        )
    )
    await store.approvals.decide(parked.id, approve=True, now=now, by="admin")
    ran: list[int] = []

    async def run(storyteller: Storyteller, approval: Approval) -> dict[str, Any]:
        ran.append(approval.id)
        return {"ok": True, "result": {}}

    flags = store.flags
    policy = Policy(PolicyConfig(), SystemClock(), kill_flag=lambda: flags.on(KILL_SWITCH_FLAG))
    runner = ApprovalRunner(store.approvals, store.storytellers.get, run, policy, SystemClock())
    await flags.set(KILL_SWITCH_FLAG, True, by="admin")
    assert await runner.run_once() == [] and ran == []
    await flags.set(KILL_SWITCH_FLAG, False, by="admin")
    assert [a.id for a in await runner.run_once()] == ran == [parked.id]
