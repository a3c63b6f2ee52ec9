"""Loading packs into a real database (SQLite and PostgreSQL): create, update, no-op, dry run."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.agent.tools.custom import build_custom_tool
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.interchange.packs.contents import Pack
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage import seeding
from storyteller_daemon.storage.seeding import Action, Change, load_pack, storyteller_differences
from storyteller_daemon.storage.store import Store
from world_adapter.sim import SimWorld

STEWARD = "Example Narrative Steward"
WATCH = "Harbour Ward Watch"


async def _load_both(store: Store) -> tuple[Pack, Pack]:
    steward, watch = read_pack("narrative-steward"), read_pack("harbour-ward")
    await load_pack(store.db, steward, clock=store.clock)
    await load_pack(store.db, watch, clock=store.clock)
    return steward, watch


def _assert_stored_as_parsed(stored: Storyteller, parsed: Storyteller) -> None:
    assert storyteller_differences(stored, parsed) == ()
    assert stored.paused == parsed.paused


async def test_both_packs_load_with_every_setting(store: Store) -> None:
    steward_pack, watch_pack = read_pack("narrative-steward"), read_pack("harbour-ward")

    first = await load_pack(store.db, steward_pack, clock=store.clock)
    second = await load_pack(store.db, watch_pack, clock=store.clock)

    assert [c.action for c in first.changes] == [Action.CREATE] * 13
    assert [c.action for c in second.changes] == [Action.CREATE] * 5
    _assert_stored_as_parsed(await store.storytellers.get(STEWARD), steward_pack.storytellers[0])
    _assert_stored_as_parsed(await store.storytellers.get(WATCH), watch_pack.storytellers[0])
    docs = {d.name: d for d in await store.references.list()}
    assert len(docs) == 16
    for pack_doc in steward_pack.documents + watch_pack.documents:
        stored = docs[pack_doc.document.name]
        assert replace(stored, id=None, restricted_to=frozenset()) == pack_doc.document


async def test_second_load_changes_nothing(store: Store) -> None:
    steward, watch = await _load_both(store)
    revisions = await store.storytellers.revisions()
    documents = await store.references.list()
    storytellers = await store.storytellers.list()

    again = [
        await load_pack(store.db, steward, clock=store.clock),
        await load_pack(store.db, watch, clock=store.clock),
    ]

    assert not any(report.changed for report in again)
    assert {c.action for report in again for c in report.changes} == {Action.UNCHANGED}
    assert await store.storytellers.revisions() == revisions
    assert await store.references.list() == documents
    assert await store.storytellers.list() == storytellers


async def test_dry_run_reports_the_diff_and_writes_nothing(
    store: Store, copy_pack: Callable[[str], Path], edit: Callable[[Path, str, str], None]
) -> None:
    pack_dir = copy_pack("harbour-ward")

    report = await load_pack(store.db, read_pack(pack_dir), dry_run=True, clock=store.clock)

    assert report.dry_run and report.changed
    assert report.changes[0] == Change("storyteller", WATCH, Action.CREATE)
    assert {c.action for c in report.changes} == {Action.CREATE}
    assert await store.storytellers.count() == 0
    assert await store.references.list() == []

    await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    revisions = await store.storytellers.revisions()
    edit(pack_dir / "pack.toml", 'attention = "gpt-5-nano"', 'attention = "gpt-5-mini"')
    edit(pack_dir / "references" / "02-harbour-ward-places.md", "Dawn:", "First light:")

    report = await load_pack(store.db, read_pack(pack_dir), dry_run=True, clock=store.clock)

    by_name = {c.name: c for c in report.changes}
    assert by_name[WATCH] == Change("storyteller", WATCH, Action.UPDATE, ("attention_model",))
    assert by_name["Harbour Ward Places"].fields == ("contents",)
    assert by_name["Harbour Ward People"].action is Action.UNCHANGED
    assert await store.storytellers.revisions() == revisions
    assert (await store.storytellers.get(WATCH)).attention_model == "gpt-5-nano"
    assert "Dawn:" in (await store.references.get("Harbour Ward Places")).contents


async def test_changed_prompt_file_updates_exactly_that_field(
    store: Store, copy_pack: Callable[[str], Path]
) -> None:
    pack_dir = copy_pack("narrative-steward")
    await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    before = await store.storytellers.get(STEWARD)
    prompt = pack_dir / "prompts" / "system.md"
    prompt.write_text(prompt.read_text(encoding="utf-8") + "\nPrefer short situation titles.\n")

    report = await load_pack(store.db, read_pack(pack_dir), clock=store.clock)

    assert report.changes[0] == Change("storyteller", STEWARD, Action.UPDATE, ("system_prompt",))
    assert all(c.action is Action.UNCHANGED for c in report.changes[1:])
    after = await store.storytellers.get(STEWARD)
    assert after.revision == before.revision + 1
    assert after.system_prompt.endswith("Prefer short situation titles.")
    assert replace(after, system_prompt="", revision=0) == replace(
        before, system_prompt="", revision=0
    )


async def test_restricted_documents_are_visible_only_to_their_storyteller(store: Store) -> None:
    await _load_both(store)
    steward = await store.storytellers.get(STEWARD)
    watch = await store.storytellers.get(WATCH)
    assert steward.id is not None and watch.id is not None

    for_steward = {d.name for d in await store.references.list(visible_to=steward.id)}
    for_watch = {d.name for d in await store.references.list(visible_to=watch.id)}

    watch_only = {"Harbour Watch Rules of Engagement", "Harbour Ward Undercurrents"}
    assert "Harbour Ward Factions" in for_steward
    assert "Harbour Ward Factions" not in for_watch
    assert watch_only <= for_watch
    assert not watch_only & for_steward
    assert {"Harbour Ward People", "AI Storyteller Primer"} <= for_steward & for_watch
    factions = await store.references.get("Harbour Ward Factions")
    assert factions.restricted_to == frozenset({steward.id})
    assert [d.name for d in await store.references.search("tidewatch", visible_to=watch.id)] == []
    assert [d.name for d in await store.references.search("tidewatch", visible_to=steward.id)] == [
        "Harbour Ward Factions"
    ]


async def test_reload_leaves_the_pause_state_alone(store: Store) -> None:
    pack = read_pack("harbour-ward")
    await load_pack(store.db, pack, clock=store.clock)
    watch = await store.storytellers.get(WATCH)
    assert watch.paused
    await store.storytellers.save(replace(watch, paused=False))

    report = await load_pack(store.db, pack, clock=store.clock)

    assert not report.changed
    assert not (await store.storytellers.get(WATCH)).paused


async def test_reload_repairs_edits_matching_names_case_insensitively(store: Store) -> None:
    pack = read_pack("harbour-ward")
    await load_pack(store.db, pack, clock=store.clock)
    people = await store.references.get("Harbour Ward People")
    await store.references.save(replace(people, name="harbour ward people", contents="gone"))
    watch = await store.storytellers.get(WATCH)
    await store.storytellers.save(replace(watch, heartbeats=frozenset(), speech_context_count=0))

    report = await load_pack(store.db, pack, clock=store.clock)

    by_name = {c.name: c for c in report.changes}
    assert by_name["Harbour Ward People"].fields == ("name", "contents")
    assert by_name[WATCH].fields == ("heartbeats", "speech_context_count")
    assert len(await store.references.list()) == 4
    assert (await store.references.get("Harbour Ward People")).contents == next(
        d.document.contents for d in pack.documents if d.document.name == "Harbour Ward People"
    )
    _assert_stored_as_parsed(
        replace(await store.storytellers.get(WATCH), paused=True), pack.storytellers[0]
    )


async def test_recreated_storyteller_gets_its_restricted_documents_back(store: Store) -> None:
    pack = read_pack("harbour-ward")
    await load_pack(store.db, pack, clock=store.clock)
    await store.storytellers.delete(WATCH)

    report = await load_pack(store.db, pack, clock=store.clock)

    by_name = {c.name: c for c in report.changes}
    assert by_name[WATCH].action is Action.CREATE
    assert by_name["Harbour Watch Rules of Engagement"].fields == ("restricted_to",)
    assert by_name["Harbour Ward People"].action is Action.UNCHANGED
    watch = await store.storytellers.get(WATCH)
    assert watch.id is not None
    rules = await store.references.get("Harbour Watch Rules of Engagement")
    assert rules.restricted_to == frozenset({watch.id})


async def test_a_failure_part_way_writes_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = 0
    real = seeding.insert_documents

    async def fail_after_two(
        session: AsyncSession, docs: Sequence[ReferenceDocument], now: datetime
    ) -> list[ReferenceDocument]:
        nonlocal written
        written = len(await real(session, docs[:2], now))
        raise RuntimeError("disk full")

    monkeypatch.setattr(seeding, "insert_documents", fail_after_two)

    with pytest.raises(RuntimeError, match="disk full"):
        await load_pack(store.db, read_pack("narrative-steward"), clock=store.clock)

    assert written == 2
    assert await store.storytellers.count() == 0
    assert await store.references.list() == []


async def test_a_pack_says_what_a_tools_texts_may_do_with_players_words(
    store: Store, copy_pack: Callable[[str], Path], edit: Callable[[Path, str, str], None]
) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / "pack.toml", 'returns = "Text"', 'returns = "Text"\ndictated = "quote"')
    await load_pack(store.db, read_pack(pack_dir), clock=store.clock)
    stored = await store.storytellers.get(WATCH)
    modes = {t.name: t.dictated for t in stored.custom_tools}
    assert modes == {
        "EchoToRoom": None,
        "SendTheWatch": "quote",
        "ShoutFromCrowd": None,
        "WhisperToCharacter": None,
    }
    assert not (await load_pack(store.db, read_pack(pack_dir), clock=store.clock)).changed
    progs = await SimWorld.harbour_town().progs()
    built = {t.name: build_custom_tool(t, progs).dictation for t in stored.custom_tools}
    assert built["SendTheWatch"] == {"*": "quote"} and built["EchoToRoom"] == {"*": "refuse"}
