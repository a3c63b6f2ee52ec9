"""``storyteller aisr``: reference documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.storage.store import Store

base_cli = cli_fixture("Watcher", "Crier", name="base_cli")


@pytest.fixture
def cli(base_cli: Cli) -> Cli:
    """Storytellers Watcher (#1) and Crier (#2); documents #1-#4 (see `seed`)."""
    c = base_cli

    async def seed(store: Store) -> None:
        docs = (
            ReferenceDocument(
                name="AI Storyteller Primer",
                folder="Storyteller",
                doc_type="Guide",
                keywords="storyteller,policy,operations",
                contents="Preserve continuity.",
            ),
            ReferenceDocument(
                name="Harbour Ward Factions",
                folder="World",
                doc_type="FactionBrief",
                keywords="harbour,ward,factions",
                contents="Dock Syndicate, Tidewatch.",
                restricted_to=frozenset({1}),
            ),
            ReferenceDocument(
                name="Skill - Pathing",
                folder="Skills",
                doc_type="Skill",
                keywords="skill,pathing",
                contents="Use landmarks.",
            ),
            ReferenceDocument(
                name="Crier Script",
                folder="World",
                doc_type="Script",
                restricted_to=frozenset({2, 9}),
            ),
        )
        for doc in docs:
            await store.references.create(doc)

    c.with_store(seed)
    return c


def names(cli: Cli, *args: str) -> list[str]:
    return [d["name"] for d in cli.json("aisr", *args)]


def test_create_uses_futuremud_defaults(cli: Cli) -> None:
    assert (
        cli.ok("aisr", "create", "Tide", "Tables")
        == "Created reference document #5 (Tide Tables).\n"
    )
    assert cli.json("aisr", "show", "tide tables") == {
        "id": 5,
        "name": "Tide Tables",
        "description": "A reference document",
        "folder": "General",
        "type": "General",
        "keywords": "",
        "visibility": "global",
        "restricted_to": [],
        "contents": "",
        "restricted_storytellers": [],
    }
    assert "#6 (Tide Charts)" in cli.ok("aisr", "new", "Tide Charts")
    assert cli.fails("aisr", "create", "TIDE TABLES") == (
        "A reference document named 'TIDE TABLES' already exists."
    )
    assert cli.fails("aisr", "create", "12") == (
        "A reference document name cannot be only digits; it would be read as an id."
    )


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ((), ["AI Storyteller Primer", "Harbour Ward Factions", "Skill - Pathing", "Crier Script"]),
        (("3",), ["Skill - Pathing"]),
        (("+harbour",), ["Harbour Ward Factions"]),
        (("-skill", "-primer"), ["Harbour Ward Factions", "Crier Script"]),
        (("folder:world",), ["Harbour Ward Factions", "Crier Script"]),
        (("type:faction",), ["Harbour Ward Factions"]),
        (("keyword:POLICY",), ["AI Storyteller Primer"]),
        (("keywords:ward",), ["Harbour Ward Factions"]),
        (("storyteller:Crier",), ["AI Storyteller Primer", "Skill - Pathing", "Crier Script"]),
        (("storyteller:1", "folder:world"), ["Harbour Ward Factions"]),
        (("dock tidewatch",), ["Harbour Ward Factions"]),
        (("dock", "landmarks"), []),
    ],
)
def test_list_filters_apply_in_sequence(
    cli: Cli, filters: tuple[str, ...], expected: list[str]
) -> None:
    assert names(cli, "list", *filters) == expected


def test_list_table_and_unknown_storyteller_filter(cli: Cli) -> None:
    table = cli.ok("aisr", "list")
    assert table.splitlines()[1].split() == [
        "Id",
        "Name",
        "Folder",
        "Type",
        "Keywords",
        "Visibility",
    ]
    assert "Restricted" in table and "Global" in table
    assert cli.fails("aisr", "list", "storyteller:Nobody") == (
        "No storyteller with id or name 'Nobody' exists."
    )


def test_show_names_the_allowed_storytellers(cli: Cli) -> None:
    text = cli.ok("aisr", "show", "Crier Script")
    assert "Visibility: Restricted\nVisible to: Crier (#2), #9 (no such storyteller)\n" in text
    assert text.startswith("Reference document #4: Crier Script\nFolder: World\nType: Script\n")
    shown = cli.json("aisr", "show", "4")
    assert shown["restricted_storytellers"] == [{"id": 2, "name": "Crier"}, {"id": 9, "name": None}]
    assert cli.fails("aisr", "show", "Nothing") == (
        "No reference document with id or name 'Nothing' exists."
    )


def test_set_text_fields(cli: Cli, tmp_path: Path) -> None:
    assert cli.ok("aisr", "set", "3", "folder", "Skill", "Books") == (
        "Document #3 folder is now: Skill Books\n"
    )
    cli.ok("aisr", "set", "3", "type", "Manual")
    cli.ok("aisr", "set", "3", "keyword", "paths,routes")
    cli.ok("aisr", "set", "3", "desc", "How", "to", "path.")
    cli.ok("aisr", "set", "3", "name", "Pathing", "Manual")
    source = tmp_path / "contents.md"
    source.write_text("# Pathing\nUse landmarks first.\n", encoding="utf-8")
    assert cli.ok("aisr", "set", "Pathing Manual", "contents", "--file", str(source)) == (
        "Document #3 has new contents (31 characters).\n"
    )
    shown = cli.json("aisr", "show", "3")
    assert (shown["name"], shown["folder"], shown["type"]) == (
        "Pathing Manual",
        "Skill Books",
        "Manual",
    )
    assert (shown["keywords"], shown["description"]) == ("paths,routes", "How to path.")
    assert shown["contents"] == "# Pathing\nUse landmarks first.\n"
    cli.ok("aisr", "set", "3", "text", "-", input="Piped.")
    assert cli.json("aisr", "show", "3")["contents"] == "Piped."
    assert cli.fails("aisr", "set", "3", "name", "harbour ward factions") == (
        "A reference document named 'harbour ward factions' already exists."
    )
    assert cli.fails("aisr", "set", "3", "content") == (
        "Give the contents either as text or with --file, not both or neither."
    )


def test_storyteller_toggles_the_allow_list(cli: Cli) -> None:
    assert cli.ok("aisr", "set", "1", "restrict", "Crier") == (
        "Document #1 is now visible to storyteller Crier.\n"
    )
    assert names(cli, "list", "storyteller:Watcher") == ["Harbour Ward Factions", "Skill - Pathing"]
    assert cli.ok("aisr", "set", "1", "storyteller", "2") == (
        "Storyteller Crier is no longer in document #1's allow-list. It is global again.\n"
    )
    assert cli.json("aisr", "show", "1")["visibility"] == "global"
    assert cli.fails("aisr", "set", "1", "storyteller", "Nobody") == (
        "No storyteller with id or name 'Nobody' exists."
    )


def test_storytellers_clear_makes_a_document_global_once(cli: Cli) -> None:
    assert cli.ok("aisr", "set", "4", "restrictions", "clear") == (
        "Document #4 is now visible to every storyteller.\n"
    )
    assert cli.json("aisr", "show", "4")["restricted_to"] == []
    assert cli.fails("aisr", "set", "4", "storytellers", "clear") == (
        "Document #4 is already visible to every storyteller."
    )
    assert cli.fails("aisr", "set", "2", "storytellers", "wipe") == (
        "'wipe' is not an action; use: storytellers clear."
    )


def test_delete_needs_yes_and_clone_keeps_visibility(cli: Cli) -> None:
    assert cli.fails("aisr", "delete", "2") == (
        "Not deleting reference document #2 (Harbour Ward Factions) without --yes."
    )
    assert cli.ok("aisr", "clone", "2", "Harbour", "Ward", "Copy") == (
        "Cloned reference document #2 (Harbour Ward Factions) as #5 (Harbour Ward Copy).\n"
    )
    assert cli.json("aisr", "show", "5")["restricted_to"] == [1]
    assert cli.ok("aisr", "delete", "harbour ward factions", "--yes") == (
        "Deleted reference document #2 (Harbour Ward Factions).\n"
    )
    assert "Harbour Ward Factions" not in names(cli, "list")
    assert cli.fails("aisr", "clone", "5", "Skill - Pathing") == (
        "A reference document named 'Skill - Pathing' already exists."
    )


def test_search_ranks_matches_and_respects_visibility(cli: Cli) -> None:
    assert names(cli, "search", "harbour") == ["Harbour Ward Factions"]
    assert sorted(names(cli, "search", "world")) == ["Crier Script", "Harbour Ward Factions"]
    assert names(cli, "search", "world", "--storyteller", "Crier") == ["Crier Script"]
    assert names(cli, "search", "landmarks", "pathing") == ["Skill - Pathing"]
    assert "Skill - Pathing" in cli.ok("aisr", "search", "landmarks")
    assert cli.fails("aisr", "search", "x", "--storyteller", "Nobody") == (
        "No storyteller with id or name 'Nobody' exists."
    )
