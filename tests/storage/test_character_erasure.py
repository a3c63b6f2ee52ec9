"""Exporting and erasing a character who appears everywhere, on both backends.

Osric Vell (a player in the sim world's harbour town) speaks in the tavern, is spoken to, is
judged and remembered by two storytellers (memories with edits, one forgotten), has a situation
scoped to him, a turn whose record holds his words, his description and the memory written
about him, a work item and inbox events, a parked call and a counted prog call naming him, and
a digest that mentions him. Maren Tidewell's data sits beside his and must come through
untouched. After the erasure a search over every column of every table, as the database itself
reports them (not a list kept here), finds none of his texts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, inspect, text

from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.approvals import ApprovalState, ParkedCall, PolicyAction
from storyteller_daemon.domain.character_data import ERASED, EXPORTED, subject
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.redaction import MARKER
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.work import NewWork
from storyteller_daemon.runs import encode_trigger
from storyteller_daemon.storage.approvals import ApprovalRepository
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.inbox import InboxRepository
from storyteller_daemon.storage.policy_actions import PolicyActionRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.events import Cursor, Speech
from world_adapter.sim import SimWorld
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, OSRIC, TAVERN = 1001, 1002, 103
OSRIC_SHEET = next(c for c in HARBOUR_TOWN_PEOPLE if c.id == OSRIC)
OSRIC_SAYS = 'Bring the zanthrope ledger to the "Gull" cellar at midnight.\nTell nobody.'
MAREN_SAYS = "Pay me back, you owe me twelve crowns and a net."
MEMORY = ("Wants the zanthrope ledger", 'Asked for the ledger in the "Gull" cellar; secretive.')
SITUATION = ("Midnight at the cellar", "Osric Vell set a cellar meeting about a ledger.")
GOSSIP = ("Owes a debt", "Osric Vell owes Maren twelve crowns from dice.")
GOSSIP_LATER = "Osric Vell owes Maren fifteen crowns after the dice game went sour."
FORGOTTEN = ("Loaded bones", "Osric cheats at dice with a pair of loaded bones.")
RUMOUR = "Osric was seen lurking near the cellar door after dark."
MAREN_MEMORY = ("Net mender", "Maren mends nets for the whole quay, cheaply.")
REGULARS = "Osric Vell drinks at the Drowned Lantern; the harbourmaster distrusts him."

OSRIC_TEXTS = [
    OSRIC_SAYS,
    OSRIC_SHEET.name,
    OSRIC_SHEET.short_description,
    OSRIC_SHEET.full_description,
    *MEMORY,
    *SITUATION,
    *GOSSIP,
    GOSSIP_LATER,
    *FORGOTTEN,
    RUMOUR,
    "zanthrope",
    "loaded bones",
    "Osric",
]


def speech(seq: int, speaker: int, name: str, words: str, **target: Any) -> Speech:
    return Speech(
        cursor=Cursor("harbour-1", seq),
        cell_id=TAVERN,
        zone_id=1,
        occurred_at=T0 + timedelta(seconds=seq),
        speaker_id=speaker,
        speaker_name=name,
        text=words,
        **target,
    )


OSRIC_SPEAKS = speech(1, OSRIC, OSRIC_SHEET.name, OSRIC_SAYS)
MAREN_SPEAKS = speech(
    2,
    MAREN,
    "Maren Tidewell",
    MAREN_SAYS,
    target_id=OSRIC,
    target_kind="character",
    target_description=OSRIC_SHEET.short_description,
)


@dataclass
class Town:
    """The storytellers and rows the tests look at."""

    watch: int
    gossip: int
    maren_memory: int
    maren_approval: int


async def record_osric_turn(store: Store, storyteller_id: int) -> None:
    """A turn on Osric's speech: the model looks him up, remembers him, opens his situation."""
    clock = FakeClock(T0)
    model = ScriptedModel(
        calls(
            ("PlayerInformation", {"Id": OSRIC}),
            ("CreateMemory", {"Id": OSRIC, "Title": MEMORY[0], "Details": MEMORY[1]}),
            ("CreateSituation", {"Title": SITUATION[0], "Description": SITUATION[1]}),
        ),
        calls(("Noop", {})),
    )
    runner = turn_runner(store, SimWorld.harbour_town(), model, clock=clock)
    st = await store.storytellers.get(storyteller_id)
    trigger = replace(Trigger.from_event(OSRIC_SPEAKS), attention_reason="a secret meeting")
    outcome = await runner.run_turn(st, trigger)
    assert outcome.outcome == "completed"
    [situation] = await store.situations.list(storyteller_id)
    await store.situations.set_scope(storyteller_id, situation.id, OSRIC, None)


async def build_town(store: Store) -> Town:
    created = await store.storytellers.create("Harbour Watch")
    prompt = f"Keep an eye on {OSRIC_SHEET.name} in the tavern."
    watch = (await store.storytellers.save(replace(created, system_prompt=prompt))).id
    gossip = (await store.storytellers.create("Tavern Gossip")).id
    assert watch is not None and gossip is not None
    await InboxRepository(store.db, store.clock).store_events(
        "harbour", [OSRIC_SPEAKS, MAREN_SPEAKS]
    )
    await store.speech.record_many([OSRIC_SPEAKS, MAREN_SPEAKS])
    payload = json.dumps(encode_trigger(Trigger.from_event(OSRIC_SPEAKS)), ensure_ascii=False)
    await BacklogRepository(store.db, store.clock).add(
        [NewWork(watch, "harbour:harbour-1:1", "speech", "speech", TAVERN, payload)]
    )
    await record_osric_turn(store, watch)
    debt = await store.memories.create(gossip, OSRIC, *GOSSIP, importance=7)
    await store.memories.update(gossip, debt.id, GOSSIP[0], GOSSIP_LATER)
    cheat = await store.memories.create(gossip, OSRIC, *FORGOTTEN)
    await store.memories.forget(gossip, cheat.id)
    maren = await store.memories.create(gossip, MAREN, *MAREN_MEMORY)
    await store.situations.create(watch, "Tavern rumours", RUMOUR, room_id=TAVERN)
    await store.references.create(ReferenceDocument("Tavern regulars", contents=REGULARS))
    await store.digests.save(
        Digest(watch, f"{OSRIC_SHEET.name} met a stranger; Maren mended nets.", "f1", "r1", T0)
    )
    await store.digests.save(Digest(gossip, "A quiet week on the quay.", "f2", "r2", T0))
    approvals = ApprovalRepository(store.db)
    for key, target in (("call-for-him", OSRIC), ("call-for-her", MAREN)):
        await approvals.park(
            ParkedCall(
                key=key,
                storyteller_id=watch,
                tool="EchoToRoom",
                arguments=json.dumps({"Target": target, "Text": "A hooded figure waits."}),
                turn_key="st1:event:harbour-1:1",
                trigger="Character Speaks",
                room_id=TAVERN,
                created_at=T0,
                expires_at=T0 + timedelta(days=30),
            )
        )
    [maren_call] = [a for a in await approvals.list() if a.key == "call-for-her"]
    await PolicyActionRepository(store.db).add(
        PolicyAction(watch, "EchoToRoom", T0, OSRIC, frozenset({TAVERN}), frozenset({OSRIC, MAREN}))
    )
    return Town(watch, gossip, maren.id, maren_call.id)


# ---------------------------------------------------------------------- searching everything


def file_bytes(path: Path) -> bytes:
    """A SQLite database's file and write-ahead log, as bytes."""
    wal = path.with_name(path.name + "-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def _forms(value: str) -> set[str]:
    """A text as stored: plain, on one line, and JSON-escaped once and twice (lower case)."""
    forms = {value, " ".join(value.split())}
    for form in list(forms):
        once = json.dumps(form)[1:-1]
        forms |= {once, json.dumps(once)[1:-1]}
    return {f.lower() for f in forms}


async def columns_holding(store: Store, values: list[str]) -> list[tuple[str, str, str]]:
    """(table, column, value) for every value found in any column of any table the database
    has (reflected, FTS shadow tables included), compared in lower case."""

    def layout(connection: Any) -> dict[str, list[str]]:
        found = inspect(connection)
        return {t: [c["name"] for c in found.get_columns(t)] for t in found.get_table_names()}

    sqlite = store.db.dialect == "sqlite"
    hits = []
    async with store.db.engine.connect() as connection:
        tables = await connection.run_sync(layout)
        for table, columns in tables.items():
            for column in columns:
                as_text = f'lower(CAST("{column}" AS TEXT))'
                if sqlite:
                    where = f'instr({as_text}, :v) > 0 OR instr(CAST("{column}" AS BLOB), :b) > 0'
                else:
                    where = f"strpos({as_text}, :v) > 0"
                query = text(f'SELECT count(*) FROM "{table}" WHERE {where}')
                for value in values:
                    for form in _forms(value):
                        params = {"v": form, "b": form.encode()}
                        if await connection.scalar(query, params):
                            hits.append((table, column, value))
    return sorted(set(hits))


async def json_documents(store: Store) -> list[str]:
    """Every stored JSON document that may name a character by id."""
    queries = [
        "SELECT payload FROM event_inbox",
        "SELECT payload FROM work_items",
        "SELECT record FROM runs",
        "SELECT arguments FROM policy_approvals",
    ]
    async with store.db.engine.connect() as connection:
        return [v for q in queries for v in (await connection.scalars(text(q))).all()]


# ---------------------------------------------------------------------- the tests


async def test_the_export_holds_everything_about_the_character(store: Store) -> None:
    town = await build_town(store)
    record = await store.characters.export(OSRIC, actor="ada", also=["Osric"])
    assert record.storytellers == {town.watch: "Harbour Watch", town.gossip: "Tavern Gossip"}
    assert sorted(m.title for m in record.memories) == sorted([MEMORY[0], GOSSIP[0]])
    debt = next(m for m in record.memories if m.title == GOSSIP[0])
    assert (debt.text, debt.importance, debt.provenance.from_player) == (GOSSIP_LATER, 7, False)
    turn_memory = next(m for m in record.memories if m.title == MEMORY[0])
    assert turn_memory.provenance.from_player and turn_memory.provenance.run
    assert [e.action.value for e in record.memory_history] == [
        "created",
        "created",
        "updated",
        "created",
        "forgotten",
    ]
    assert [(s.title, s.character_id) for s in record.situations] == [(SITUATION[0], OSRIC)]
    assert [(line.speaker_id, line.target_id) for line in record.speech] == [
        (OSRIC, None),
        (MAREN, OSRIC),
    ]
    assert sorted((e.source, e.row_id) for e in record.events) == [
        ("backlog", 1),
        ("inbox", 1),
        ("inbox", 2),
    ]
    assert [(a.key, a.state) for a in record.approvals] == [("call-for-him", ApprovalState.PENDING)]
    assert [a.player_id for a in record.policy_actions] == [OSRIC]
    [run] = record.runs
    assert run.kind == "turn" and run.storyteller_name == "Harbour Watch"
    assert "record.prompt" in run.where
    assert any(w.startswith("record.tape") for w in run.where)
    assert [d.storyteller_id for d in record.digests] == [town.watch]
    mentioned = {(m.table, m.column) for m in record.mentions}
    assert ("situations", "text") in mentioned  # the rumour, by his first name
    assert ("character_memories", "text") in mentioned
    [audit] = await store.audit.list()
    assert (audit.actor, audit.action, audit.subject) == ("ada", EXPORTED, subject(OSRIC))
    assert audit.detail["memories"] == 2 and audit.detail["runs"] == 1


async def test_erasing_leaves_no_trace_of_the_characters_texts(store: Store) -> None:
    town = await build_town(store)
    before = await columns_holding(store, OSRIC_TEXTS)
    tables_before = {table for table, _, _ in before}
    assert {"runs", "event_inbox", "work_items", "speech_history"} <= tables_before
    assert {"character_memories", "memory_edits", "situations", "storyteller_digests"} <= (
        tables_before
    )
    assert [d.name for d in await store.references.search("Osric")] == ["Tavern regulars"]
    maren_before = await _marens_data(store, town)
    revision = (await store.storytellers.get(town.watch)).revision

    report = await store.characters.erase(OSRIC, actor="ada", also=["Osric"])

    assert await columns_holding(store, OSRIC_TEXTS) == []
    assert report.deleted == {
        "memories": 2,
        "memory_history": 5,
        "situations": 1,
        "speech": 1,
        "digests": 1,
    }
    assert report.redacted["speech_history.target_id"] == 1
    assert report.redacted["runs.record"] == 1
    assert report.redacted["situations.text"] == 1
    assert report.rejected_approvals == 1
    assert report.reclaimed.startswith("vacuumed")
    for document in await json_documents(store):
        json.loads(document)  # still valid
        assert not re.search(rf"(?<!\d){OSRIC}(?!\d)", document), document
    assert await _marens_data(store, town) == maren_before
    watch = await store.storytellers.get(town.watch)  # a running daemon reloads it
    assert (watch.system_prompt, watch.revision) == (
        f"Keep an eye on {MARKER} in the tavern.",
        revision + 1,
    )
    # the search indexes follow the redacted document
    assert await store.references.search("Osric") == []
    [regulars] = await store.references.search("harbourmaster distrusts")
    assert (
        regulars.contents
        == f"{MARKER} drinks at the Drowned Lantern; the harbourmaster distrusts him."
    )
    pending = await InboxRepository(store.db, store.clock).pending("harbour")  # still read back
    assert [p.event.involved_character_ids for p in pending] == [{0}, {MAREN, 0}]
    osric_call = next(
        a for a in await ApprovalRepository(store.db).list() if a.key == "call-for-him"
    )
    assert (osric_call.state, osric_call.decided_by) == (ApprovalState.REJECTED, "ada")
    [erased] = await store.audit.list(action=ERASED)
    assert erased.subject == subject(OSRIC) and erased.detail["deleted"]["memories"] == 2
    assert not any(v.lower() in json.dumps(erased.detail).lower() for v in OSRIC_TEXTS)


async def test_after_an_erasure_the_export_finds_nothing(store: Store) -> None:
    await build_town(store)
    await store.characters.erase(OSRIC, actor="ada", also=["Osric"])
    record = await store.characters.export(OSRIC, actor="ada", also=["Osric"])
    assert record.counts == dict.fromkeys(record.counts, 0)
    assert [e.action for e in await store.audit.list()] == [EXPORTED, ERASED]


async def test_a_dry_run_reports_and_changes_nothing(store: Store) -> None:
    await build_town(store)
    before = await columns_holding(store, OSRIC_TEXTS)
    report = await store.characters.erase(OSRIC, actor="ada", dry_run=True)
    assert report.dry_run and report.deleted["memories"] == 2
    assert report.reclaimed == "dry run: nothing was changed"
    assert await columns_holding(store, OSRIC_TEXTS) == before
    assert await store.audit.list() == []


async def _marens_data(store: Store, town: Town) -> dict[str, Any]:
    approvals = {a.key: a for a in await ApprovalRepository(store.db).list()}
    async with store.db.engine.connect() as connection:
        maren_inbox = await connection.scalar(text("SELECT payload FROM event_inbox WHERE seq = 2"))
        maren_line = await connection.scalar(
            text(f"SELECT message FROM speech_history WHERE speaker_id = {MAREN}")
        )
    return {
        "memory": await store.memories.get(town.gossip, town.maren_memory),
        "line": maren_line,
        "inbox": json.loads(maren_inbox)["text"],
        "approval": approvals["call-for-her"],
        "digest": await store.digests.latest(town.gossip),
    }


async def test_the_swept_tables_are_every_table_the_database_has(store: Store) -> None:
    from storyteller_daemon.storage.sweep import swept_tables

    def names(connection: Any) -> set[str]:
        return set(inspect(connection).get_table_names())

    async with store.db.engine.connect() as connection:
        reflected = await connection.run_sync(names)
    fts = {t for t in reflected if "_fts" in t}
    assert {t.name for t in swept_tables()} == reflected - fts - {"alembic_version"}


@pytest.mark.parametrize("character_id", [0, -3])
async def test_a_character_id_must_be_positive(sqlite_store: Store, character_id: int) -> None:
    from storyteller_daemon.errors import ValidationError

    with pytest.raises(ValidationError, match="positive"):
        await sqlite_store.characters.erase(character_id, actor="ada")


async def test_on_sqlite_the_files_keep_no_copy_of_the_erased_text(
    sqlite_store: Store, sqlite_url: str
) -> None:
    await build_town(sqlite_store)
    path = Path(sqlite_url.split("///", 1)[1])

    def raw() -> bytes:
        return file_bytes(path)

    assert b"zanthrope" in raw()
    report = await sqlite_store.characters.erase(OSRIC, actor="ada", also=["Osric"])
    assert {"character_memories_fts", "reference_documents_fts"} <= set(report.fts_rebuilt)
    async with sqlite_store.db.session() as session:
        listed = await session.execute(
            text("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%fts5%'")
        )
        for name in listed.scalars().all():  # each index agrees with its table
            await session.execute(
                text(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")
            )
    await sqlite_store.close()
    assert b"zanthrope" not in raw().lower()
    assert b"osric" not in raw().lower()
    assert MARKER.encode() in raw()


async def test_on_sqlite_text_deleted_before_the_erasure_goes_too(
    sqlite_store: Store, sqlite_url: str
) -> None:
    """Text deleted earlier on a connection that left deleted bytes in place (an inbox event
    pruned) is gone from the file after an erasure (its VACUUM), though nothing named it."""
    await sqlite_store.db.engine.dispose()

    def keep_deleted_bytes(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA secure_delete = OFF")
        cursor.close()

    event.listen(sqlite_store.db.engine.sync_engine, "connect", keep_deleted_bytes)
    inbox = InboxRepository(sqlite_store.db, sqlite_store.clock)
    [stored] = await inbox.store_events("old", [replace(MAREN_SPEAKS, text="The qwyxzzle crate.")])
    await inbox.mark_dispatched([stored.id])
    assert await inbox.prune("old", keep=0) == 1
    await sqlite_store.speech.record(OSRIC_SPEAKS)
    path = Path(sqlite_url.split("///", 1)[1])
    await sqlite_store.db.engine.dispose()  # the log checkpointed into the file
    assert b"qwyxzzle" in file_bytes(path)
    await sqlite_store.characters.erase(OSRIC, actor="ada")
    await sqlite_store.close()
    assert b"qwyxzzle" not in file_bytes(path)
