"""A turn's services are declared once (`TurnServices`): a store added as one field of it is
taped while a turn runs, named in the run record, replayed from the tape, and reached by tools,
with no other code touched."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import pytest

from storyteller_daemon.agent.services import TurnServices, service_fields
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.errors import ToolError
from storyteller_daemon.runs import RunRecorder, Tape
from storyteller_daemon.runs.replay import held_services
from storyteller_daemon.runs.tape import record_services, replay_services, taped_names
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.turns import store_services
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, tzinfo=UTC)
DIRECT = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="ring the bell")


class RumourStore(Protocol):
    """A store no turn has used before."""

    async def spread(self, storyteller_id: int, rumour: str, *, loud: bool = False) -> int:
        """Keep a rumour; how many the storyteller has spread."""
        ...


class Rumours:
    def __init__(self) -> None:
        self.kept: list[str] = []

    async def spread(self, storyteller_id: int, rumour: str, *, loud: bool = False) -> int:
        self.kept.append(rumour.upper() if loud else rumour)
        return len(self.kept)


@dataclass(frozen=True)
class WithRumours(TurnServices):
    """`TurnServices` and one more store: the whole of adding it."""

    rumours: RumourStore | None = None


def services(store: Store, rumours: Rumours | None) -> WithRumours:
    base = store_services(store, SimWorld.harbour_town())
    return WithRumours(base.world, base.situations, base.memories, base.references, rumours=rumours)


async def test_a_store_added_as_one_field_is_taped_recorded_and_replayed(
    sqlite_store: Store,
) -> None:
    st = await sqlite_store.storytellers.create("Watch")
    rumours = Rumours()
    runs = RunRepository(sqlite_store.db)
    recorder = RunRecorder(runs, None, FakeClock(T0))
    async with recorder.turn(st, DIRECT, "turn-1", services(sqlite_store, rumours)) as run:
        ctx = ToolContext(run.services)  # what a tool handler is handed
        assert isinstance(ctx.services, WithRumours) and ctx.services.rumours is not None
        assert await ctx.services.rumours.spread(st.id or 0, "the mayor", loud=True) == 1
    assert rumours.kept == ["THE MAYOR"]
    [summary] = await runs.list(kind="turn")
    record = (await runs.get(summary.id)).record
    assert "rumours" in record["services"]
    assert [e for e in record["tape"] if e["service"] == "rumours"] == [
        {
            "service": "rumours",
            "method": "spread",
            "args": {"storyteller_id": st.id, "rumour": "the mayor", "loud": True},
            "result": 1,
        }
    ]
    replayed = replay_services(WithRumours, Tape(record["tape"]), held_services(record))
    assert replayed.rumours is not None
    assert await replayed.rumours.spread(st.id or 0, "the mayor", loud=True) == 1
    assert rumours.kept == ["THE MAYOR"]  # the replay acted on nothing
    with pytest.raises(ToolError, match="not in the recording"):
        await replayed.rumours.spread(st.id or 0, "the harbour master")


async def test_an_optional_store_left_out_is_neither_taped_nor_replayed(
    sqlite_store: Store,
) -> None:
    live = services(sqlite_store, None)
    tape = Tape()
    assert record_services(live, tape).rumours is None
    assert taped_names(live) == ["world", "situations", "memories", "references"]
    assert replay_services(WithRumours, tape, taped_names(live)).rumours is None


def test_the_journal_is_the_turns_own_and_never_taped() -> None:
    fields = {f.name: f for f in service_fields(TurnServices)}
    assert not fields["journal"].taped
    assert fields["world"].taped and not fields["world"].optional
    assert fields["plans"].optional


def test_records_from_before_services_were_named_replay_what_their_flags_said() -> None:
    assert held_services({"digests": True}) == [
        "world", "situations", "memories", "references", "mcp", "speech", "digests"
    ]  # fmt: skip
    old = {"speech_history": False, "director": True}
    assert held_services(old)[-3:] == ["plans", "claims", "queries"]
    assert "speech" not in held_services(old)
    assert held_services({"services": ["world", "rumours"]}) == ["world", "rumours"]


def test_a_service_must_be_declared_as_one_protocol() -> None:
    @dataclass(frozen=True)
    class Vague(TurnServices):
        extra: int | str | None = None

    with pytest.raises(TypeError, match="service extra must be declared as one protocol"):
        service_fields(Vague)
