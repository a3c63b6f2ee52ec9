"""An attention batch is judged against the situations it concerns (storyteller-wide, or scoped
to its rooms or characters) and the names of its rooms; nothing else."""

from __future__ import annotations

from datetime import UTC, datetime

from storyteller_daemon.agent.prompts import PromptBuilder
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.storage.store import Store
from world_adapter.events import Cursor, RoomEcho
from world_adapter.sim import SimWorld

AT = datetime(2026, 1, 1, 20, 0, tzinfo=UTC)


def _echo(seq: int, room: int, source: int | None) -> Trigger:
    return Trigger.from_event(
        RoomEcho(
            cursor=Cursor("e", seq),
            cell_id=room,
            zone_id=1,
            occurred_at=AT,
            text="Someone whistles.",
            source_character_id=source,
        )
    )


async def test_only_the_situations_and_rooms_the_batch_concerns(
    world: SimWorld, sqlite_store: Store, storyteller: Storyteller
) -> None:
    sid = storyteller.id
    assert sid is not None
    situations = sqlite_store.situations
    await situations.create(sid, "Smuggling ring", "x")
    await situations.create(sid, "Quay thefts", "x", room_id=101)
    await situations.create(sid, "Market brawl", "x", room_id=102)
    await situations.create(sid, "Maren's debt", "x", character_id=1001)
    await situations.create(sid, "Osric's grudge", "x", character_id=1002)
    builder = PromptBuilder(world, situations, LimitsConfig(max_situation_titles=3))
    batch = [_echo(1, 101, None), _echo(2, 103, 1001)]
    context = await builder.attention_context(storyteller, batch)
    for kept in ("Smuggling ring", "Quay thefts", "Maren's debt"):
        assert kept in context
    for left in ("Market brawl", "Osric's grudge"):
        assert left not in context
    assert context.endswith('Rooms: #101 "Harbour Quay", #103 "The Drowned Lantern"')

    # The newest of those it concerns, within max_situation_titles.
    await situations.create(sid, "Lantern fire", "x", room_id=103)
    context = await builder.attention_context(storyteller, batch)
    assert "Lantern fire" in context and "Smuggling ring" not in context
