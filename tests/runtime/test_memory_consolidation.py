"""Consolidation on the idle pass: near-duplicate memories about one character are merged into
the oldest, with provenance and history kept; everything else is left alone."""

from __future__ import annotations

from datetime import timedelta

from reflection_rig import T0, reflection_rig, storyteller

from storyteller_daemon.config import ReflectionConfig
from storyteller_daemon.domain.situations import MemoryAction, Provenance
from storyteller_daemon.runtime.reflection import consolidate_memories
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.model import ScriptedModel

FROM_PLAYER = Provenance("st1:event:e:7", ("e:7",), from_player=True)


async def test_duplicates_are_merged_into_the_oldest_and_distinct_memories_stay(
    store: Store,
) -> None:
    rig = reflection_rig(store.db, ScriptedModel())
    st = await storyteller(rig.store)
    assert st.id is not None
    memories = rig.store.memories
    oldest = await memories.create(st.id, 7, "Wren the cutpurse", "Wren stole a purse from Maren.")
    await rig.clock.advance(60)
    longer = await memories.create(
        st.id,
        7,
        "Wren",
        "Wren stole a purse from Maren. She says the guard let her go.",
        importance=8,
        provenance=FROM_PLAYER,
    )
    await rig.clock.advance(60)
    tavern = await memories.create(st.id, 7, "Songs", "Wren sings at the Gull on Sundays.")
    other = await memories.create(st.id, 8, "Wren?", "Wren stole a purse from Maren.")
    await rig.clock.advance(60)

    merges = await consolidate_memories(memories, st.id, ReflectionConfig())

    assert [(m.character_id, m.kept, m.merged) for m in merges] == [(7, oldest.id, (longer.id,))]
    kept = await memories.get(st.id, oldest.id)
    assert kept.title == "Wren the cutpurse"
    assert kept.text == "Wren stole a purse from Maren. She says the guard let her go."
    assert kept.importance == 8  # the highest of the merged
    assert kept.provenance.from_player  # from players once, from players for good
    assert kept.provenance.events == ("e:7",)
    assert kept.updated_on == T0 + timedelta(seconds=180)
    remaining = {m.id: m for m in await memories.list(st.id)}
    assert set(remaining) == {oldest.id, tavern.id, other.id}
    assert remaining[tavern.id] == tavern and remaining[other.id] == other

    history = await memories.history(st.id, character_id=7)
    merged = [(e.memory_id, e.action, e.actor) for e in history if e.at == kept.updated_on]
    assert merged == [
        (longer.id, MemoryAction.CONSOLIDATED, f"reflection: merged into memory #{oldest.id}"),
        (oldest.id, MemoryAction.ABSORBED, f"reflection: absorbed #{longer.id}"),
    ]
    absorbed = history[-1]
    assert absorbed.text_before == "Wren stole a purse from Maren."
    assert absorbed.text_after == kept.text and absorbed.from_player

    assert await consolidate_memories(memories, st.id, ReflectionConfig()) == []  # settled


async def test_a_merge_longer_than_the_bound_is_not_made(sqlite_store: Store) -> None:
    rig = reflection_rig(sqlite_store.db, ScriptedModel())
    st = await storyteller(rig.store)
    assert st.id is not None
    base = "Wren stole a purse from Maren on the quay at dawn."
    await rig.store.memories.create(st.id, 7, "Wren", base)
    await rig.store.memories.create(st.id, 7, "Wren", f"{base} The guard saw it all.")

    cfg = ReflectionConfig(merged_max_chars=60)
    assert await consolidate_memories(rig.store.memories, st.id, cfg) == []
    assert len(await rig.store.memories.list(st.id)) == 2
    cfg = ReflectionConfig(similarity=1.0)
    assert len(await consolidate_memories(rig.store.memories, st.id, cfg)) == 1


async def test_the_digest_hears_of_memory_changes_but_not_of_the_merges(
    sqlite_store: Store,
) -> None:
    from reflection_rig import USAGE, fenced_blocks

    from storyteller_daemon.testing.model import text

    rig = reflection_rig(sqlite_store.db, ScriptedModel(text("Wren stole a purse.", USAGE)))
    st = await storyteller(rig.store)
    assert st.id is not None
    for _ in range(2):
        await rig.store.memories.create(st.id, 7, "Wren", "Wren stole a purse.")
    await rig.clock.advance(60)

    report = await rig.reflection.reflect(st)

    assert len(report.merges) == 1 and report.digest.outcome == "refreshed"
    blocks, _ = fenced_blocks(rig.model.requests[0].input[0]["content"])
    assert blocks["memory changes"].splitlines() == [
        'created memory #1 about character #7: "Wren": Wren stole a purse.',
        'created memory #2 about character #7: "Wren": Wren stole a purse.',
    ]
    assert rig.stats.reflections["memories_merged"] == 1
