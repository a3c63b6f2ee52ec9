"""``storyteller ais situation …`` and ``storyteller ais memory …``."""

from __future__ import annotations

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.storage.store import Store

base_cli = cli_fixture("Watcher", "Crier", name="base_cli")


@pytest.fixture
def cli(base_cli: Cli) -> Cli:
    """Watcher (#1) has situations #1-#3 and memories #1-#3; Crier (#2) has situation #4."""
    c = base_cli

    async def seed(store: Store) -> None:
        await store.situations.create(1, "Old feud", "Settled last winter.")
        await store.situations.create(1, "Smugglers", "Crates at night.", room_id=7)
        await store.situations.create(1, "Debt", "Mara owes the Syndicate.", character_id=5)
        await store.situations.update(1, 1, resolve=True)
        await store.situations.create(2, "Crier's own", "Not Watcher's.")
        await store.memories.create(1, 5, "Owes money", "To the Syndicate.")
        await store.memories.create(1, 6, "Sailor", "Came in on the Gull.")
        await store.memories.create(1, 5, "Nervous", "Avoids the watch.")

    c.with_store(seed)
    return c


def test_situation_list_puts_unresolved_first_and_can_hide_resolved(cli: Cli) -> None:
    listed = cli.json("ais", "situation", "list", "Watcher")
    assert [(s["id"], s["resolved"]) for s in listed] == [(2, False), (3, False), (1, True)]
    assert set(listed[0]) == {"id", "title", "text", "resolved", "scope", "created_on"}
    assert [s["scope"] for s in listed] == [
        {"kind": "room", "id": 7},
        {"kind": "character", "id": 5},
        {"kind": "universal", "id": None},
    ]
    assert [s["id"] for s in cli.json("ais", "situations", "list", "1", "--open")] == [2, 3]
    table = cli.ok("ais", "situation", "list", "Watcher")
    assert table.splitlines()[1].split() == ["Id", "Title", "Resolved", "Scope", "Created"]
    assert "Character #5" in table and "Room #7" in table and "Universal" in table


def test_situation_show(cli: Cli) -> None:
    shown = cli.json("ais", "situation", "show", "Watcher", "2")
    assert (shown["title"], shown["text"]) == ("Smugglers", "Crates at night.")
    text = cli.ok("ais", "situation", "show", "watcher", "3")
    assert text.startswith("Situation #3: Debt\nStoryteller: Watcher (#1)\nScope: Character #5\n")
    assert text.endswith("Mara owes the Syndicate.\n")


@pytest.mark.parametrize(
    ("situation", "message"),
    [
        ("abc", "'abc' is not a valid situation id; use a positive whole number."),
        ("99", "No situation with id 99 exists."),
        ("4", "No situation with id 4 exists."),
    ],
)
def test_situation_show_refuses_bad_unknown_and_foreign_ids(
    cli: Cli, situation: str, message: str
) -> None:
    assert cli.fails("ais", "situation", "show", "Watcher", situation) == message


def test_situation_scope_changes_and_refuses_no_change(cli: Cli) -> None:
    assert cli.ok("ais", "situation", "scope", "Watcher", "1", "char", "8") == (
        "Situation #1 of Watcher now has scope Character #8.\n"
    )
    cli.ok("ais", "situation", "scope", "Watcher", "3", "cell", "9")
    cli.ok("ais", "situation", "scope", "Watcher", "2", "global")
    scopes = {s["id"]: s["scope"] for s in cli.json("ais", "situation", "list", "Watcher")}
    assert scopes == {
        1: {"kind": "character", "id": 8},
        2: {"kind": "universal", "id": None},
        3: {"kind": "room", "id": 9},
    }
    assert cli.fails("ais", "situation", "scope", "Watcher", "3", "room", "9") == (
        "Situation #3 already has scope Room #9."
    )
    assert cli.fails("ais", "situation", "scope", "Watcher", "2", "universal") == (
        "Situation #2 already has scope Universal."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("1", "zone", "3"), "'zone' is not a scope; use none, character N or room N."),
        (("1", "character"), "Give the character id: scope character N."),
        (("1", "room", "x"), "'x' is not a valid room id; use a positive whole number."),
        (("1", "none", "3"), "Scope 'none' takes no id."),
        (("0", "none"), "'0' is not a valid situation id; use a positive whole number."),
        (("4", "room", "1"), "No situation with id 4 exists."),
    ],
)
def test_situation_scope_errors(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert cli.fails("ais", "situation", "scope", "Watcher", *args) == message


def test_memory_list_show_and_character_filter(cli: Cli) -> None:
    listed = cli.json("ais", "memory", "list", "Watcher")
    assert [(m["id"], m["character_id"]) for m in listed] == [(1, 5), (2, 6), (3, 5)]
    assert set(listed[0]) == {"id", "character_id", "title", "text", "created_on"}
    about = cli.json("ais", "memories", "list", "Watcher", "--character", "5")
    assert [m["title"] for m in about] == ["Owes money", "Nervous"]
    assert cli.json("ais", "memory", "list", "Crier") == []
    assert cli.json("ais", "memory", "show", "Watcher", "2")["text"] == "Came in on the Gull."
    text = cli.ok("ais", "memory", "show", "Watcher", "2")
    assert text.startswith("Memory #2: Sailor\nStoryteller: Watcher (#1)\nCharacter: #6\n")
    assert "Owes money" in cli.ok("ais", "memory", "list", "Watcher")
    assert cli.fails("ais", "memory", "list", "Watcher", "--character", "five") == (
        "'five' is not a valid character id; use a positive whole number."
    )


def test_memory_forget_deletes_it(cli: Cli) -> None:
    assert cli.ok("ais", "memory", "forget", "Watcher", "1") == (
        "Watcher forgot memory #1 (Owes money) about character #5.\n"
    )
    assert [m["id"] for m in cli.json("ais", "memory", "list", "Watcher")] == [2, 3]
    assert cli.fails("ais", "memory", "forget", "Watcher", "1") == "No memory with id 1 exists."
    assert cli.fails("ais", "memory", "forget", "Crier", "2") == "No memory with id 2 exists."
    assert cli.fails("ais", "memory", "show", "Watcher", "x") == (
        "'x' is not a valid memory id; use a positive whole number."
    )
