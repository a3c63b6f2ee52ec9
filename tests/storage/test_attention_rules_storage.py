"""Attention rules on the storyteller row, on real SQLite and real PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import text

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.attention_rules import AttentionRule, RuleAction
from storyteller_daemon.domain.storytellers import CustomTool
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.store import Store
from storyteller_daemon.storage.storytellers import rules_from_json, rules_to_json

BELL = AttentionRule(
    "hour-bell",
    RuleAction.IGNORE,
    kinds=frozenset({"room_echo"}),
    pattern=r"^the harbour bell tolls\b",
)
OFFICE = AttentionRule(
    "office-crime",
    RuleAction.ATTEND,
    kinds=frozenset({"crime", "speech"}),
    rooms=frozenset({108, 7}),
    cooldown=timedelta(minutes=5),
)


async def test_a_new_storyteller_has_no_rules(store: Store) -> None:
    st = await store.storytellers.create("Watcher")
    assert st.attention_rules == ()
    assert (await store.storytellers.get("watcher")).attention_rules == ()


async def test_rules_round_trip_in_order_and_bump_the_revision(store: Store) -> None:
    st = await store.storytellers.create("Watcher")
    saved = await store.storytellers.save(replace(st, attention_rules=(OFFICE, BELL)))
    assert saved.revision == st.revision + 1
    again = await store.storytellers.get("Watcher")
    assert again.attention_rules == (OFFICE, BELL)
    assert (await store.storytellers.revisions()) == {st.id: saved.revision}

    fewer = await store.storytellers.save(replace(again, attention_rules=(BELL,)))
    assert fewer.revision == saved.revision + 1
    assert (await store.storytellers.get("Watcher")).attention_rules == (BELL,)


async def test_clone_copies_the_rules(store: Store) -> None:
    st = await store.storytellers.create("Watcher")
    await store.storytellers.save(replace(st, attention_rules=(BELL, OFFICE)))
    copy = await store.storytellers.clone("Watcher", "Second Watcher")
    assert copy.attention_rules == (BELL, OFFICE)


async def test_duplicate_rule_names_are_refused_and_nothing_is_written(store: Store) -> None:
    st = await store.storytellers.create("Watcher")
    twin = replace(OFFICE, name=BELL.name)
    with pytest.raises(ValidationError, match="rule names must be unique"):
        await store.storytellers.save(
            replace(st, description="changed", attention_rules=(BELL, twin))
        )
    unchanged = await store.storytellers.get("Watcher")
    assert (unchanged.revision, unchanged.attention_rules) == (st.revision, ())
    assert unchanged.description == st.description


async def test_a_row_from_before_the_migration_reads_as_no_rules(db_url: str) -> None:
    db = Database(db_url, clock=None)
    try:
        await db.upgrade("0005")
        async with db.engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO storytellers (name, name_key, description, model, system_prompt,"
                    " attention_prompt, subscribe_room, subscribe_speech, subscribe_crime,"
                    " subscribe_state, heartbeat_5m, heartbeat_10m, heartbeat_30m, heartbeat_1h,"
                    " paused, speech_context_count, speech_context_window_ms, revision,"
                    " created_on, updated_on) VALUES ('Old', 'old', '', 'gpt-5', '', '', true,"
                    " false, false, false, false, false, false, false, true, 0, 600000, 3,"
                    " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
                )
            )
        await db.upgrade()
        store = Store(db, SystemClock())
        old = await store.storytellers.get("Old")
        assert (old.attention_rules, old.revision) == ((), 3)
        saved = await store.storytellers.save(replace(old, attention_rules=(BELL,)))
        assert (await store.storytellers.get("old")).attention_rules == (BELL,)
        assert saved.revision == 4
    finally:
        await db.close()


def test_the_stored_form_is_a_json_array_in_rule_order() -> None:
    stored = rules_to_json((OFFICE, BELL))
    assert stored.startswith('[{"name":"office-crime","action":"attend"')
    assert '"rooms":[7,108]' in stored and '"cooldown_ms":300000' in stored
    assert rules_from_json(stored) == (OFFICE, BELL)
    assert rules_from_json("[]") == rules_from_json(None) == ()


@pytest.mark.parametrize(
    "stored",
    [
        "not json",
        '{"name": "x"}',
        '[{"name": "Bad Name", "action": "ignore"}]',
        '[{"name": "x", "action": "maybe"}]',
        '[{"name": "x", "action": "ignore", "kinds": ["weather"]}]',
        '[{"name": "x", "action": "ignore", "pattern": "("}]',
        '[{"action": "ignore"}]',
        '[{"name": "x", "action": "ignore", "cooldown_ms": 1e300}]',
        '[{"name": "x", "action": "ignore", "rooms": ["a"]}]',
        '["x"]',
    ],
)
def test_an_unreadable_stored_rule_is_left_out_rather_than_failing_the_read(stored: str) -> None:
    assert rules_from_json(stored) == ()


def test_readable_rules_survive_an_unreadable_neighbour() -> None:
    stored = rules_to_json((BELL,))[:-1] + ',{"name":"x","action":"maybe"}]'
    assert rules_from_json(stored) == (BELL,)


async def test_downgrading_past_the_rules_keeps_every_storytellers_other_data(
    db_url: str,
) -> None:
    db = Database(db_url, clock=None)
    try:
        await db.upgrade()
        store = Store(db, SystemClock())
        st = await store.storytellers.create("Watcher")
        tool = CustomTool("Shout", "shout", "12")
        await store.storytellers.save(replace(st, custom_tools=(tool,), attention_rules=(BELL,)))

        await db.downgrade("0005")
        async with db.engine.connect() as conn:
            counts = [
                (await conn.execute(text(f"SELECT COUNT(*) FROM {table}"))).scalar_one()
                for table in ("storytellers", "custom_tools")
            ]
        assert counts == [1, 1]

        await db.upgrade()
        again = await store.storytellers.get("Watcher")
        assert (again.attention_rules, again.custom_tools) == ((), (tool,))
    finally:
        await db.close()
