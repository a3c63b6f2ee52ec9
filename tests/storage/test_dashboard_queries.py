"""The dashboard's reads on both backends: run pages, stage counts, hourly spend, search."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storyteller_daemon.domain.situations import Provenance
from storyteller_daemon.domain.work import Decision, NewWork, WorkState
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.dashboard_queries import DashboardQueries, HourSpend, RunFilter
from storyteller_daemon.storage.ledger import LedgerEntry, LedgerRepository
from storyteller_daemon.storage.runs import NewRun, RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def run(n: int, *, kind: str = "turn", storyteller: int = 1, **over: object) -> NewRun:
    fields: dict[str, object] = {
        "kind": kind,
        "turn_key": f"st{storyteller}:event:e:{n}",
        "storyteller_id": storyteller,
        "storyteller_name": f"Teller {storyteller}",
        "trigger_kind": "room_echo",
        "trigger_label": "Room Echo",
        "room_id": 100 + n % 3,
        "outcome": "completed" if kind == "turn" else "interested",
        "started_at": T0 + timedelta(minutes=n),
        "record": {"kind": kind, "n": n},
    }
    fields.update(over)
    return NewRun(**fields)  # type: ignore[arg-type]


def charge(
    at: datetime, cost: float, *, storyteller: int = 1, purpose: str = "turn", status: str = "ok"
) -> LedgerEntry:
    return LedgerEntry(
        occurred_at=at,
        purpose=purpose,
        model="gpt-5",
        storyteller_id=storyteller,
        storyteller_name=f"Teller {storyteller}",
        input_tokens=1000,
        cached_tokens=250,
        cost_usd=cost,
        status=status,
    )


async def test_run_pages_walk_back_by_id_and_the_stream_reads_forward(store: Store) -> None:
    runs = RunRepository(store.db)
    ids = [await runs.add(run(n, storyteller=1 + n % 2)) for n in range(7)]
    queries = DashboardQueries(store.db)
    first = await queries.runs_before(RunFilter(), limit=3)
    assert [r.id for r in first] == ids[::-1][:3]
    second = await queries.runs_before(RunFilter(), before=first[-1].id, limit=3)
    assert [r.id for r in second] == ids[::-1][3:6]
    mine = await queries.runs_before(RunFilter(storyteller_id=2, room_id=101))
    assert [r.id for r in mine] == [
        ids[1]
    ]  # n=1: storyteller 2, room 101 (n=4 is room 101, teller 1)
    after = await queries.runs_with_records(RunFilter(), after=ids[4])
    assert [(r.summary.id, r.record["n"]) for r in after] == [(ids[5], 5), (ids[6], 6)]
    assert await queries.newest_run_id() == ids[-1]
    assert await queries.runs_for_keys(["st2:event:e:3", "gone", ""]) == {"st2:event:e:3": ids[3]}


async def test_turn_outcomes_count_the_window_only(store: Store) -> None:
    runs = RunRepository(store.db)
    await runs.add(run(0, outcome="completed"))
    await runs.add(run(30, outcome="crashed"))
    await runs.add(run(31, kind="attention"))
    outcomes = await DashboardQueries(store.db).turn_outcomes(T0 + timedelta(minutes=10))
    assert outcomes == [(1, "crashed", 1)]


async def test_stage_counts_group_the_window_by_state_and_rule(store: Store) -> None:
    clock = FakeClock(T0)
    backlog = BacklogRepository(store.db, clock)

    def work(n: int) -> NewWork:
        return NewWork(1, f"sim:1:{n}", "room_echo", "event", 101, "{}")

    await backlog.add([work(0)])  # before the window
    clock.set_now(T0 + timedelta(hours=2))
    items = await backlog.add([work(n) for n in range(1, 5)])
    await backlog.decide(
        [
            Decision(items[0].id, WorkState.IGNORED, "dull"),
            Decision(items[1].id, WorkState.FILTERED, "repeat", "repeats"),
            Decision(items[2].id, WorkState.INTERESTED, "theft"),
        ]
    )
    counts = await DashboardQueries(store.db).stage_counts(T0 + timedelta(hours=1))
    assert sorted((c.state, c.rule, c.count) for c in counts) == [
        ("filtered", "repeats", 1),
        ("ignored", None, 1),
        ("interested", None, 1),
        ("pending", None, 1),
    ]
    assert await DashboardQueries(store.db).stage_counts(T0 + timedelta(hours=3)) == []


async def test_hourly_spend_is_bucketed_by_the_database_in_utc(store: Store) -> None:
    ledger = LedgerRepository(store.db)
    await ledger.add(
        [
            charge(T0 + timedelta(minutes=5), 0.01),
            charge(T0 + timedelta(minutes=55), 0.02, status="timeout"),
            charge(T0 + timedelta(minutes=10), 0.5, purpose="attention"),
            charge(T0 + timedelta(hours=1, minutes=1), 0.04, storyteller=2),
            charge(T0 + timedelta(hours=5), 9.0),  # outside the window
        ]
    )
    spend = await DashboardQueries(store.db).hourly_spend(T0, T0 + timedelta(hours=2))
    assert sorted(spend, key=lambda s: (s.hour, s.storyteller_id or 0, s.purpose)) == [
        HourSpend("2026-03-01 12", 1, "Teller 1", "attention", 1, 1000, 250, 0.5),
        HourSpend("2026-03-01 12", 1, "Teller 1", "turn", 2, 2000, 500, 0.03, failed=1),
        HourSpend("2026-03-01 13", 2, "Teller 2", "turn", 1, 1000, 250, 0.04),
    ]


async def test_situations_and_memories_are_searched_by_words_literally(store: Store) -> None:
    st = await store.storytellers.create("Watch")
    assert st.id is not None
    by_run = Provenance(run="st1:event:e:9", from_player=True)
    await store.situations.create(st.id, "Cutpurse on the quay", "Wren took 100% of it")
    await store.situations.create(st.id, "Fire", "The warehouse burns", provenance=by_run)
    await store.memories.create(st.id, 2003, "Wren", "Quick hands on the QUAY")
    queries = DashboardQueries(store.db)
    assert [s.title for s in await queries.situations(words="quay")] == ["Cutpurse on the quay"]
    assert [s.title for s in await queries.situations(words="100%")] == ["Cutpurse on the quay"]
    assert await queries.situations(words="1_0") == []  # _ is not a wildcard
    fire = await queries.situations(words="burns")
    assert fire[0].provenance == by_run
    assert [m.title for m in await queries.memories(words="quay", character_id=2003)] == ["Wren"]
    assert await queries.memories(character_id=1) == []
    assert await queries.open_situation_counts() == {st.id: 2}
