"""The kill switch's database twin at the pipeline's admission: a game's direct invocation is
refused while any daemon's admin has set it, on real SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG
from storyteller_daemon.domain.storytellers import Heartbeat
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
