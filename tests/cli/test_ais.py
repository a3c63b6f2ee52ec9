"""``storyteller ais``: list, create, show, delete, clone, pause, unpause, refsearch."""

from __future__ import annotations

import json

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.storage.store import Store

cli = cli_fixture()


def test_create_prints_the_id_and_starts_paused_with_futuremud_defaults(cli: Cli) -> None:
    out = cli.ok("ais", "create", "Harbour", "Watcher")
    assert out == "Created storyteller #1 (Harbour Watcher); it starts paused.\n"
    shown = cli.show(1)
    assert shown["name"] == "Harbour Watcher"
    assert shown["paused"] is True
    assert shown["subscriptions"] == {"room": True, "speech": False, "crime": False, "state": False}
    assert shown["heartbeats"] == {"5m": False, "10m": False, "30m": False, "1h": False}
    assert shown["scopes"]["time"] == {
        "model": "gpt-5",
        "model_setting": None,
        "reasoning": "medium",
        "reasoning_setting": None,
    }
    assert shown["scopes"]["attention"]["reasoning"] == "low"
    assert shown["speech_context"] == {"count": 0, "window_seconds": 600.0}
    assert shown["time_system_prompt"] is None
    assert (shown["custom_tools"], shown["situations"]) == ([], [])


def test_new_is_an_alias_of_create(cli: Cli) -> None:
    assert "#1 (Crier)" in cli.ok("ais", "new", "Crier")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("harbour watcher", "A storyteller named 'harbour watcher' already exists."),
        ("   ", "A storyteller needs a non-blank name."),
        ("42", "A storyteller name cannot be only digits; it would be read as an id."),
    ],
)
def test_create_refuses_taken_blank_and_numeric_names(cli: Cli, name: str, message: str) -> None:
    cli.create("Harbour Watcher")
    assert cli.fails("ais", "create", name) == message


def test_list_applies_filters_in_sequence(cli: Cli) -> None:
    for name in ("Harbour Watcher", "Harbour Crier", "Market Gossip"):
        cli.create(name)

    def names(*filters: str) -> list[str]:
        return [s["name"] for s in cli.json("ais", "list", *filters)]

    assert names() == ["Harbour Watcher", "Harbour Crier", "Market Gossip"]
    assert names("harbour") == ["Harbour Watcher", "Harbour Crier"]
    assert names("+HARBOUR", "-crier") == ["Harbour Watcher"]
    assert names("-harbour") == ["Market Gossip"]
    assert names("2") == ["Harbour Crier"]
    assert names("2", "watcher") == []


def test_list_json_keys_and_table_columns(cli: Cli) -> None:
    cli.create("Harbour Watcher")
    (entry,) = cli.json("ais", "list")
    assert set(entry) == {"id", "name", "model", "paused", "subscriptions", "heartbeats"}
    table = cli.ok("ais", "list")
    header = table.splitlines()[1].split()
    assert header == [
        "Id",
        "Name",
        "Model",
        "Paused",
        "Room",
        "Speech",
        "Crime",
        "State",
        "5m",
        "10m",
        "30m",
        "1h",
    ]
    assert "Harbour Watcher" in table
    assert cli.ok("ais", "list", "nothing-matches") == "No storytellers to show.\n"


def test_show_text_names_every_section_and_the_fallbacks(cli: Cli) -> None:
    cli.create("Harbour Watcher")
    text = cli.ok("ais", "show", "HARBOUR WATCHER")
    for line in (
        "Storyteller #1: Harbour Watcher",
        "Paused: yes",
        "Event model: gpt-5, reasoning medium (falls back to the default, medium)",
        "Time model: gpt-5 (falls back to the event model), reasoning medium "
        "(falls back to the event reasoning)",
        "Attention model: gpt-5 (falls back to the event model), reasoning low "
        "(falls back to the default, low)",
        "Events: room yes, speech no, crime no, state no",
        "Heartbeats: 5m no, 10m no, 30m no, 1h no",
        "Speech context: off (0 events; window 10m)",
        "Status progs: 5m none, 10m none, 30m none, 1h none",
        "Player information prog: none",
        "Surveillance: nothing (no zones or rooms)",
        "Time system prompt: (falls back to the system prompt)",
        "Custom tools: none",
        "No situations to show.",
    ):
        assert line + "\n" in text
    assert "Attention prompt:\n  Decide for each event" in text
    assert "System prompt:\n  You are an AI storyteller" in text


def test_show_prints_markup_like_text_literally(cli: Cli) -> None:
    cli.create("Watcher")
    cli.ok("ais", "set", "Watcher", "description", "[bold]not bold[/] [/oops]")
    assert "  [bold]not bold[/] [/oops]\n" in cli.ok("ais", "show", "Watcher")


def test_unknown_storyteller_fails_for_every_verb(cli: Cli) -> None:
    message = "No storyteller with id or name 'Nobody' exists."
    for args in (
        ("show", "Nobody"),
        ("delete", "Nobody", "--yes"),
        ("clone", "Nobody", "X"),
        ("pause", "Nobody"),
        ("refsearch", "Nobody", "x"),
        ("set", "Nobody", "model", "gpt-5"),
    ):
        assert cli.fails("ais", *args) == message


def _seed_narrative(cli: Cli, storyteller_id: int) -> None:
    async def seed(store: Store) -> None:
        await store.situations.create(storyteller_id, "Smugglers", "Crates at night.")
        await store.memories.create(storyteller_id, 5, "Owes money", "To the Syndicate.")

    cli.with_store(seed)


def test_delete_needs_yes_then_removes_situations_and_memories(cli: Cli) -> None:
    ident = cli.create("Doomed")
    keeper = cli.create("Keeper")
    _seed_narrative(cli, ident)
    _seed_narrative(cli, keeper)
    assert cli.fails("ais", "delete", "Doomed") == (
        f"Storyteller #{ident} (Doomed) has 1 situation(s) and 1 memory(ies); "
        "add --yes to delete them all."
    )
    out = cli.ok("ais", "delete", "doomed", "--yes")
    assert (
        out == f"Deleted storyteller #{ident} (Doomed) with its 1 situation(s) and 1 memory(ies).\n"
    )
    assert [s["name"] for s in cli.json("ais", "list")] == ["Keeper"]

    async def leftovers(store: Store) -> tuple[int, int, int, int]:
        return (
            len(await store.situations.list(ident)),
            len(await store.memories.list(ident)),
            len(await store.situations.list(keeper)),
            len(await store.memories.list(keeper)),
        )

    assert cli.with_store(leftovers) == (0, 0, 1, 1)


def test_clone_copies_settings_paused_without_situations(cli: Cli) -> None:
    ident = cli.create("Original")
    cli.ok("ais", "set", "Original", "model", "--scope", "time", "gpt-5-mini")
    cli.ok("ais", "set", "Original", "subscribe", "speech")
    cli.ok("ais", "set", "Original", "surveillance", "zone", "100")
    cli.ok("ais", "unpause", "Original")
    _seed_narrative(cli, ident)
    out = cli.ok("ais", "clone", "Original", "The", "Copy")
    assert out == f"Cloned storyteller #{ident} (Original) as #2 (The Copy); it starts paused.\n"
    original, copy = cli.show("Original"), cli.show("The Copy")
    assert copy["paused"] is True and copy["situations"] == []
    ignored = {"id", "name", "paused", "situations", "revision", "created_on"}
    assert {k: v for k, v in copy.items() if k not in ignored} == {
        k: v for k, v in original.items() if k not in ignored
    }
    assert cli.fails("ais", "clone", "Original", "the copy") == (
        "A storyteller named 'the copy' already exists."
    )


def test_pause_unpause_toggles_paused_state(cli: Cli) -> None:
    """Ported from FutureMUD's Pause_Unpause_TogglesPausedState."""
    cli.create("Steward")
    cli.ok("ais", "unpause", "Steward")
    assert cli.show("Steward")["paused"] is False
    assert cli.ok("ais", "pause", "Steward") == "Storyteller Steward is now paused.\n"
    assert cli.show("Steward")["paused"] is True
    assert cli.ok("ais", "unpause", "Steward") == "Storyteller Steward is now unpaused.\n"
    assert cli.show("Steward")["paused"] is False
    # every change is in the audit log, newest first
    audit = json.loads(cli.ok("audit", "list", "--json"))
    assert [e["action"] for e in audit] == ["resume", "pause", "resume"]


def test_pausing_twice_or_unpausing_twice_is_an_error(cli: Cli) -> None:
    cli.create("Steward")
    assert cli.fails("ais", "pause", "Steward") == "Storyteller Steward is already paused."
    cli.ok("ais", "unpause", "Steward")
    assert cli.fails("ais", "unpause", "Steward") == "Storyteller Steward is already unpaused."


def test_refsearch_lists_only_visible_matching_documents(cli: Cli) -> None:
    mine, other = cli.create("Mine"), cli.create("Other")

    async def seed(store: Store) -> None:
        await store.references.create(
            ReferenceDocument(name="Harbour Factions", keywords="harbour,factions")
        )
        await store.references.create(
            ReferenceDocument(name="Harbour Secrets", restricted_to=frozenset({other}))
        )
        await store.references.create(
            ReferenceDocument(name="Private Harbour Notes", restricted_to=frozenset({mine}))
        )
        await store.references.create(ReferenceDocument(name="Market Prices"))

    cli.with_store(seed)
    found = cli.json("ais", "refsearch", "Mine", "harbour")
    assert sorted(d["name"] for d in found) == ["Harbour Factions", "Private Harbour Notes"]
    assert set(found[0]) == {
        "id",
        "name",
        "description",
        "folder",
        "type",
        "keywords",
        "visibility",
        "restricted_to",
    }
    assert len(cli.json("ais", "references", "Mine")) == 3
    table = cli.ok("ais", "refsearch", "Mine", "harbour", "factions")
    assert "Harbour Factions" in table and "Private" not in table
