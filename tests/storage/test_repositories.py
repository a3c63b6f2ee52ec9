"""Repositories on real SQLite and real PostgreSQL: lifecycles, constraints, search."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.storytellers import (
    CustomTool,
    EventKind,
    Heartbeat,
    ReasoningEffort,
)
from storyteller_daemon.errors import (
    ConflictError,
    NotFoundError,
    StorageError,
    ValidationError,
)
from storyteller_daemon.storage.store import Store


async def test_storyteller_round_trips_every_setting(store: Store) -> None:
    st = await store.storytellers.create("Harbour Watch")
    assert st.paused and st.revision == 1
    changed = replace(
        st,
        description="Watches the docks",
        model="gpt-5-mini",
        time_model="gpt-5-nano",
        attention_model=None,
        reasoning_effort=ReasoningEffort.HIGH,
        time_reasoning_effort=ReasoningEffort.LOW,
        attention_reasoning_effort=ReasoningEffort.MINIMAL,
        system_prompt="sys",
        time_system_prompt="time sys",
        attention_prompt="att",
        subscriptions=frozenset({EventKind.SPEECH, EventKind.CRIME, EventKind.STATE}),
        heartbeats=frozenset({Heartbeat.TEN_MINUTES, Heartbeat.HOUR}),
        status_progs=((Heartbeat.TEN_MINUTES, "HarbourWatchStatus"),),
        player_info_prog="HarbourPlayerProfile",
        paused=False,
        speech_context_count=5,
        speech_context_window=timedelta(minutes=3),
        custom_tools=(
            CustomTool(
                "ShoutFromCrowd", "shout", "CrowdShout", True, (("Room", "r"), ("Text", "t"))
            ),
            CustomTool("EchoToRoom", "echo", "11", False, (("Room", "where"),)),
        ),
        surveillance=st.surveillance.toggled("zone", 1)
        .toggled("include", 201)
        .toggled("exclude", 108),
    )
    saved = await store.storytellers.save(changed)
    again = await store.storytellers.get("harbour WATCH")
    assert again == saved
    assert again.revision == 2
    assert again.tool("echotoroom") is not None
    assert [t.name for t in again.custom_tools] == ["EchoToRoom", "ShoutFromCrowd"]
    assert again.tool("ShoutFromCrowd").parameter_descriptions == (("Room", "r"), ("Text", "t"))  # type: ignore[union-attr]
    assert again.surveillance.cells({1: [101, 108]}) == {101, 201}
    assert (await store.storytellers.revisions()) == {again.id: 2}
    # The listing reads plain rows, not the ORM objects `get` reads: the same storytellers.
    other = await store.storytellers.create("Other Watch", replace(again, name="Other Watch"))
    plain = await store.storytellers.create("Plain")
    assert await store.storytellers.list() == [
        again,
        await store.storytellers.get(other.id),  # type: ignore[arg-type]
        plain,
    ]


async def test_pause_unpause_toggles_paused_state(store: Store) -> None:
    st = await store.storytellers.create("P")
    st = await store.storytellers.save(replace(st, paused=False))
    assert not (await store.storytellers.get(st.id)).paused  # type: ignore[arg-type]
    st = await store.storytellers.save(replace(st, paused=True))
    assert (await store.storytellers.get("p")).paused


async def test_names_are_unique_case_insensitively(store: Store) -> None:
    first = await store.storytellers.create("Harbour Watch")
    with pytest.raises(ConflictError, match="already exists"):
        await store.storytellers.create("HARBOUR watch")
    other = await store.storytellers.create("Other")
    with pytest.raises(ConflictError):
        await store.storytellers.save(replace(other, name="harbour watch"))
    # a rename to a different case of its own name is allowed
    await store.storytellers.save(replace(first, name="HARBOUR WATCH"))
    with pytest.raises(NotFoundError, match="No storyteller"):
        await store.storytellers.get("Nobody")


async def test_clone_copies_settings_paused_and_delete_cascades(store: Store) -> None:
    st = await store.storytellers.create("Source")
    st = await store.storytellers.save(
        replace(st, paused=False, custom_tools=(CustomTool("A", "d", "p", False, (("X", "x"),)),))
    )
    await store.situations.create(st.id, "thread", "text")  # type: ignore[arg-type]
    copy = await store.storytellers.clone("source", "Copy")
    assert copy.paused and copy.id != st.id
    assert copy.custom_tools == st.custom_tools
    assert await store.situations.list(copy.id) == []  # type: ignore[arg-type]

    await store.memories.create(st.id, 1001, "m", "t")  # type: ignore[arg-type]
    await store.storytellers.delete(st.id)  # type: ignore[arg-type]
    assert await store.situations.list(st.id) == []  # type: ignore[arg-type]
    assert await store.memories.list(st.id) == []  # type: ignore[arg-type]
    # ids are never reused, so a stale restriction cannot leak to a newcomer
    newcomer = await store.storytellers.create("Newcomer")
    assert newcomer.id is not None and newcomer.id > copy.id  # type: ignore[operator]


async def test_duplicate_tool_names_are_rejected_and_nothing_is_written(store: Store) -> None:
    st = await store.storytellers.create("T")
    tools = (CustomTool("A", "", "p"), CustomTool("a", "", "q"))
    with pytest.raises(ValidationError, match="share a name"):
        await store.storytellers.save(replace(st, custom_tools=tools, description="changed"))
    assert (await store.storytellers.get(st.id)).description == st.description  # type: ignore[arg-type]


async def test_situation_update_and_resolve_updates_lifecycle_state(store: Store) -> None:
    st = await store.storytellers.create("S")
    sid = st.id
    assert sid is not None
    sit = await store.situations.create(sid, "Brawl", "At the quay", room_id=101)
    assert sit.room_id == 101 and not sit.resolved
    sit = await store.situations.update(sid, sit.id, title="Brawl over", text="Calm now")
    assert (sit.title, sit.text, sit.room_id) == ("Brawl over", "Calm now", 101)
    sit = await store.situations.update(sid, sit.id, character_id=1001)
    assert (sit.character_id, sit.room_id) == (1001, None)
    sit = await store.situations.update(sid, sit.id, resolve=True)
    assert sit.resolved
    # resolved situations stay readable; they are never deleted
    assert (await store.situations.get(sid, sit.id)).resolved


async def test_situation_set_scope_updates_scope_state(store: Store) -> None:
    st = await store.storytellers.create("S")
    sid = st.id
    assert sid is not None
    sit = await store.situations.create(sid, "t", "")
    assert (await store.situations.set_scope(sid, sit.id, 55, None)).character_id == 55
    s2 = await store.situations.set_scope(sid, sit.id, None, 102)
    assert (s2.character_id, s2.room_id) == (None, 102)
    s3 = await store.situations.set_scope(sid, sit.id, None, None)
    assert s3.scope_label == "Universal"
    with pytest.raises(ValidationError, match="not both"):
        await store.situations.set_scope(sid, sit.id, 1, 2)
    with pytest.raises(NotFoundError, match="No situation with id 999 exists."):
        await store.situations.get(sid, 999)


async def test_database_enforces_single_scope(store: Store) -> None:
    st = await store.storytellers.create("S")
    with pytest.raises(StorageError):
        async with store.db.session() as session:
            await session.execute(
                text(
                    "INSERT INTO situations (storyteller_id, title, text, created_on, resolved, "
                    "scope_character_id, scope_room_id) "
                    "VALUES (:s, 't', '', CURRENT_TIMESTAMP, false, 1, 2)"
                ),
                {"s": st.id},
            )


async def test_situations_of_another_storyteller_are_invisible(store: Store) -> None:
    a = await store.storytellers.create("A")
    b = await store.storytellers.create("B")
    sit = await store.situations.create(a.id, "mine", "")  # type: ignore[arg-type]
    with pytest.raises(NotFoundError):
        await store.situations.get(b.id, sit.id)  # type: ignore[arg-type]


async def test_open_for_trigger_keeps_the_newest_and_applies_scope(store: Store) -> None:
    st = await store.storytellers.create("N")
    sid = st.id
    assert sid is not None
    for i in range(30):
        await store.situations.create(sid, f"s{i}", "")
    scoped = await store.situations.create(sid, "room thread", "", room_id=101)
    other_room = await store.situations.create(sid, "elsewhere", "", room_id=102)
    block = await store.situations.open_for_trigger(sid, room_id=None, character_ids=(), limit=25)
    assert len(block) == 25
    assert block[-1].id == other_room.id  # newest last; the oldest five are left out
    assert "s0" not in [s.title for s in block]
    in_room = await store.situations.open_for_trigger(sid, room_id=101, character_ids=(), limit=25)
    assert scoped.id in [s.id for s in in_room]
    assert other_room.id not in [s.id for s in in_room]


async def test_memory_update_memory_updates_lifecycle_state_and_forget_deletes(
    store: Store,
) -> None:
    st = await store.storytellers.create("M")
    sid = st.id
    assert sid is not None
    mem = await store.memories.create(sid, 1001, "Owes money", "To Agna")
    mem = await store.memories.update(sid, mem.id, "Paid up", "Settled")
    assert (mem.title, mem.text) == ("Paid up", "Settled")
    await store.memories.create(sid, 1001, "Second", "")
    await store.memories.create(sid, 1002, "Other", "")
    assert await store.memories.counts_by_character(sid) == {1001: 2, 1002: 1}
    await store.memories.forget(sid, mem.id)
    with pytest.raises(NotFoundError, match=f"No memory with id {mem.id} exists."):
        await store.memories.update(sid, mem.id, "again", "")
    assert [m.title for m in await store.memories.list(sid, 1001)] == ["Second"]
    with pytest.raises(ValidationError):
        await store.memories.create(sid, 1001, "  ", "blank title")


async def test_reference_documents_search_and_visibility(store: Store) -> None:
    st = await store.storytellers.create("Reader")
    assert st.id is not None
    await store.references.create(
        ReferenceDocument(
            name="Harbour Ward Factions",
            keywords="harbour,ward,factions,politics",
            contents="The Dock Syndicate, the Lantern Circle and the Tidewatch.",
            restricted_to=frozenset({st.id}),
        )
    )
    await store.references.create(
        ReferenceDocument(name="Primer", contents="Keep continuity across harbour situations.")
    )
    await store.references.create(ReferenceDocument(name="Astronomy", contents="Stars and tides."))

    everything = await store.references.search("")
    assert len(everything) == 3
    hits = await store.references.search("harbour politics")
    assert [d.name for d in hits] == ["Harbour Ward Factions"]
    assert await store.references.search("harbour astronomy") == []
    # FTS stemming finds plurals; substring floor finds word fragments
    assert "Harbour Ward Factions" in [d.name for d in await store.references.search("syndicates")]
    assert [d.name for d in await store.references.search("ndicat")] == ["Harbour Ward Factions"]
    # ranked: the name/keyword match comes before a contents-only match
    assert [d.name for d in await store.references.search("harbour")][0] == "Harbour Ward Factions"
    # visibility: another storyteller does not see the restricted document
    other = await store.storytellers.create("Other")
    assert [d.name for d in await store.references.search("harbour", visible_to=other.id)] == [
        "Primer"
    ]
    # query syntax in user text is inert
    assert await store.references.search('"; DROP TABLE x; --') == []
    assert await store.references.search("NEAR(AND OR*") == []


async def test_reference_index_follows_updates_and_deletes(store: Store) -> None:
    doc = await store.references.create(ReferenceDocument(name="Note", contents="lighthouse"))
    assert [d.name for d in await store.references.search("lighthouse")] == ["Note"]
    await store.references.save(replace(doc, contents="customs house"))
    assert await store.references.search("lighthouse") == []
    assert [d.name for d in await store.references.search("customs")] == ["Note"]
    await store.references.delete("note")
    assert await store.references.search("customs") == []
    with pytest.raises(ConflictError):
        await store.references.create(ReferenceDocument(name="A"))
        await store.references.create(ReferenceDocument(name="a"))


async def test_a_stale_save_is_refused(store: Store) -> None:
    st = await store.storytellers.create("Contested")
    first = await store.storytellers.save(replace(st, description="admin one"))
    with pytest.raises(ConflictError, match="changed by someone else"):
        await store.storytellers.save(replace(st, description="admin two"))
    assert (await store.storytellers.get(st.id)).description == "admin one"  # type: ignore[arg-type]
    assert first.revision == 2


async def test_digest_is_replaced_on_each_save(store: Store) -> None:
    st = await store.storytellers.create("Digester")
    assert st.id is not None
    assert await store.digests.latest(st.id) is None
    at = datetime(2026, 1, 1, tzinfo=UTC)
    await store.digests.save(Digest(st.id, "First.", "f1", "run-1", at))
    saved = await store.digests.save(Digest(st.id, "Second.", "f2", "run-2", at))
    assert await store.digests.latest(st.id) == saved
    assert (saved.text, saved.fingerprint, saved.run_key) == ("Second.", "f2", "run-2")
