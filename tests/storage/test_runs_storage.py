"""Run records and the cost ledger on both backends: store, filter, link, sum, prune."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

import pytest

from storyteller_daemon.errors import NotFoundError
from storyteller_daemon.storage.ledger import LedgerEntry, LedgerRepository
from storyteller_daemon.storage.runs import NewRun, RunRepository
from storyteller_daemon.storage.store import Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def run(
    kind: str = "turn", *, key: str = "st1:event:e:1", at: datetime = T0, **over: object
) -> NewRun:
    fields: dict[str, object] = {
        "kind": kind,
        "turn_key": key,
        "storyteller_id": 1,
        "storyteller_name": "Harbour Watch",
        "trigger_kind": "room_echo",
        "trigger_label": "Room Echo",
        "room_id": 101,
        "outcome": "completed" if kind == "turn" else "interested",
        "started_at": at,
        "record": {"kind": kind, "prompt": "Wren slips a hand into a purse"},
    }
    fields.update(over)
    return NewRun(**fields)  # type: ignore[arg-type]


def charge(at: datetime = T0, cost: float = 0.01, **over: object) -> LedgerEntry:
    fields: dict[str, object] = {
        "occurred_at": at,
        "purpose": "turn",
        "model": "gpt-5",
        "storyteller_id": 1,
        "storyteller_name": "Harbour Watch",
        "trigger_kind": "room_echo",
        "room_id": 101,
        "input_tokens": 1000,
        "cached_tokens": 200,
        "output_tokens": 50,
        "reasoning_tokens": 10,
        "cost_usd": cost,
    }
    fields.update(over)
    return LedgerEntry(**fields)  # type: ignore[arg-type]


async def test_a_run_keeps_its_record_and_columns(store: Store) -> None:
    runs = RunRepository(store.db)
    run_id = await runs.add(run(rounds=2, tool_calls=3, cost_usd=0.02), [charge(), charge()])
    stored = await runs.get(run_id)
    assert stored.record == {"kind": "turn", "prompt": "Wren slips a hand into a purse"}
    assert (stored.summary.rounds, stored.summary.tool_calls) == (2, 3)
    assert stored.summary.started_at == T0
    with pytest.raises(NotFoundError, match="No run with id 999"):
        await runs.get(999)


async def test_list_filters_newest_first(store: Store) -> None:
    runs = RunRepository(store.db)
    await runs.add(run(at=T0, outcome="noop"))
    await runs.add(run(at=T0 + timedelta(hours=1), trigger_kind="heartbeat", room_id=None))
    await runs.add(run(at=T0 + timedelta(hours=2), storyteller_id=2, storyteller_name="Crier"))
    await runs.add(run("attention", at=T0 + timedelta(hours=3), outcome="ignore"))

    def hours(found: list) -> list[int]:
        return [int((r.started_at - T0) / timedelta(hours=1)) for r in found]

    assert hours(await runs.list()) == [3, 2, 1, 0]
    assert hours(await runs.list(storyteller_id=2)) == [2]
    assert hours(await runs.list(storyteller_name="crier")) == [2]
    assert hours(await runs.list(trigger_kind="heartbeat")) == [1]
    assert hours(await runs.list(outcome="noop")) == [0]
    assert hours(await runs.list(kind="attention")) == [3]
    assert hours(await runs.list(since=T0 + timedelta(hours=1), until=T0 + timedelta(hours=3))) == [
        2,
        1,
    ]
    assert hours(await runs.list(limit=1)) == [3]


async def test_an_attention_record_and_its_turn_share_the_turn_key(store: Store) -> None:
    runs = RunRepository(store.db)
    judged = await runs.add(run("attention"), [charge(purpose="attention", cost=0.001)])
    await runs.add(run("attention", key="st1:event:e:2", outcome="ignore"))
    turn = await runs.add(run(situation_id=7), [charge(cost=0.02)])
    related = await runs.related((await runs.get(turn)).summary)
    assert [r.id for r in related] == [judged]
    # the attention call that led to a turn on a situation is charged to that situation too
    by_situation = await LedgerRepository(store.db).totals("situation")
    assert [(line.key, line.requests) for line in by_situation] == [("7", 2)]


async def test_pruning_runs_keeps_their_ledger_rows(store: Store) -> None:
    runs, ledger = RunRepository(store.db), LedgerRepository(store.db)
    await runs.add(run(at=T0 - timedelta(days=40)), [charge(at=T0 - timedelta(days=40))])
    kept = await runs.add(run(at=T0), [charge(at=T0)])
    assert await runs.prune(T0 - timedelta(days=30)) == 1
    assert [r.id for r in await runs.list()] == [kept]
    days = await ledger.totals("day")
    assert [line.key for line in days] == ["2026-03-01", "2026-01-20"]
    assert await ledger.prune(T0 - timedelta(days=30)) == 1
    assert [line.key for line in await ledger.totals("day")] == ["2026-03-01"]


async def test_ledger_totals_by_every_grouping(store: Store) -> None:
    ledger = LedgerRepository(store.db)
    situation = await store.situations.create(
        (await store.storytellers.create("Harbour Watch")).id or 0, "Cutpurse on the quay", ""
    )
    await ledger.add(
        [
            charge(cost=0.05, situation_id=situation.id),
            charge(cost=0.01, purpose="attention", model="gpt-5-nano"),
            charge(
                at=T0 + timedelta(days=1),
                cost=0.02,
                storyteller_id=2,
                storyteller_name="Crier",
                trigger_kind="heartbeat",
                room_id=None,
            ),
        ]
    )
    by_storyteller = await ledger.totals("storyteller")
    assert [(line.label, line.requests, round(line.cost_usd, 4)) for line in by_storyteller] == [
        ("Harbour Watch (#1)", 2, 0.06),
        ("Crier (#2)", 1, 0.02),
    ]
    assert [line.key for line in await ledger.totals("day")] == ["2026-03-02", "2026-03-01"]
    assert {line.key for line in await ledger.totals("trigger")} == {"room_echo", "heartbeat"}
    situations = await ledger.totals("situation")
    assert [(line.label, round(line.cost_usd, 4)) for line in situations] == [
        (f"#{situation.id} Cutpurse on the quay", 0.05),
        ("none", 0.03),
    ]
    assert {line.key for line in await ledger.totals("model")} == {"gpt-5", "gpt-5-nano"}
    assert {line.key for line in await ledger.totals("purpose")} == {"turn", "attention"}
    assert [line.key for line in await ledger.totals("room")] == ["101", None]
    only_day_two = await ledger.totals("storyteller", since=T0 + timedelta(hours=12))
    assert [line.key for line in only_day_two] == ["2"]
    assert [line.key for line in await ledger.totals("day", storyteller_name="CRIER")] == [
        "2026-03-02"
    ]
    total = sum(line.input_tokens for line in by_storyteller)
    assert total == 3000


async def test_spend_on_a_day_per_storyteller(store: Store) -> None:
    ledger = LedgerRepository(store.db)
    await ledger.add(
        [
            charge(cost=0.25),
            charge(cost=0.5, storyteller_id=2),
            charge(at=T0 + timedelta(days=1), cost=9.0),
            charge(cost=4.0, purpose="replay"),  # an admin's replay is outside the caps
        ]
    )
    spend = await ledger.spend_on(date(2026, 3, 1))
    assert spend.total == pytest.approx(0.75)
    assert spend.by_storyteller == {1: pytest.approx(0.25), 2: pytest.approx(0.5)}
    assert (await ledger.spend_on(date(2026, 2, 1))).total == 0


async def test_settling_a_provisional_row_replaces_what_it_held(store: Store) -> None:
    ledger = LedgerRepository(store.db)
    worst = LedgerEntry(T0, "attention", "gpt-5-nano", input_tokens=900, cost_usd=0.5)
    (row,) = await ledger.add([worst])
    (other,) = await ledger.add([worst])
    answered = LedgerEntry(
        T0 + timedelta(days=1), "turn", "gpt-5", input_tokens=120, output_tokens=7, cost_usd=0.01
    )

    assert await ledger.settle(row, answered)
    assert not await ledger.settle(other + 1000, answered)  # gone: the caller adds a new one

    days = {line.key: line for line in await ledger.totals("day")}
    assert set(days) == {"2026-03-01", "2026-03-02"}
    settled = days["2026-03-02"]
    assert (settled.requests, settled.failed, settled.input_tokens, settled.output_tokens) == (
        1,
        0,
        120,
        7,
    )
    assert settled.cost_usd == pytest.approx(0.01)
    assert days["2026-03-01"].cost_usd == pytest.approx(0.5)  # the other row is untouched
