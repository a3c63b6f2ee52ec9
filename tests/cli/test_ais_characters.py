"""``storyteller ais memory history``, ``ais character export|erase`` and ``audit list``."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.storage.store import Store
from world_adapter.events import Cursor, Speech

base_cli = cli_fixture("Watcher", "Crier", name="base_cli")
MARA, PIP = 5, 6
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MARA_SAYS = "I buried the silver under the third piling."
EXPORT_KEYS = [
    "character_id",
    "exported_at",
    "storytellers",
    "memories",
    "memory_history",
    "situations",
    "speech",
    "events",
    "approvals",
    "policy_actions",
    "runs",
    "digests",
    "mentions",
    "texts",
]


def line(seq: int, speaker: int, name: str, words: str, target: int | None = None) -> Speech:
    return Speech(
        cursor=Cursor("e", seq),
        cell_id=7,
        zone_id=1,
        occurred_at=T0,
        speaker_id=speaker,
        speaker_name=name,
        text=words,
        target_id=target,
        target_kind="character" if target else None,
        target_description="a wiry woman in oilskins" if target else None,
    )


@pytest.fixture
def cli(base_cli: Cli) -> Cli:
    """Mara (#5) is remembered by Watcher (#1, memory #1, changed) and Crier (#2, memory #2),
    says something and is spoken to; Pip (#6) has memory #3."""

    async def seed(store: Store) -> None:
        debt = await store.memories.create(1, MARA, "Owes money", "Mara owes the Syndicate.")
        await store.memories.update(1, debt.id, "Owes money", "Mara owes the Syndicate forty.")
        await store.memories.create(2, MARA, "Digs at night", "Mara buries things by the pier.")
        await store.memories.create(1, PIP, "Sailor", "Pip came in on the Gull.")
        await store.situations.create(1, "Buried silver", "Under a piling.", character_id=MARA)
        await store.speech.record_many(
            [
                line(1, MARA, "Mara Quill", MARA_SAYS),
                line(2, PIP, "Pip", "Where is the silver, then?", target=MARA),
            ]
        )

    base_cli.with_store(seed)
    return base_cli


def test_memory_history_shows_each_change_of_a_memory(cli: Cli) -> None:
    shown = cli.ok("ais", "memory", "history", "Watcher", "1")
    assert "History of Watcher's memory #1" in shown
    assert "created" in shown and "updated" in shown and "admin" in shown
    assert "Owes money: Mara owes the Syndicate. → Owes money: Mara owes the Syndicate forty." in (
        " ".join(shown.split())
    )
    [created, updated] = cli.json("ais", "memory", "history", "Watcher", "1")
    assert (created["action"], created["title_before"], created["text_after"]) == (
        "created",
        None,
        "Mara owes the Syndicate.",
    )
    assert updated["text_before"] == "Mara owes the Syndicate."
    assert set(updated) == {
        "id",
        "storyteller_id",
        "memory_id",
        "character_id",
        "action",
        "actor",
        "at",
        "title_before",
        "text_before",
        "title_after",
        "text_after",
        "from_player",
    }


def test_memory_history_of_a_character_and_of_a_forgotten_memory(cli: Cli) -> None:
    cli.ok("ais", "memory", "forget", "Watcher", "1")
    edits = cli.json("ais", "memory", "history", "Watcher", "--character", str(MARA))
    assert [(e["memory_id"], e["action"]) for e in edits] == [
        (1, "created"),
        (1, "updated"),
        (1, "forgotten"),
    ]
    assert (
        cli.json("ais", "memory", "history", "Crier", "--character", str(MARA))[0]["memory_id"] == 2
    )
    assert "No history of Watcher's memory #9 to show." in cli.ok(
        "ais", "memory", "history", "Watcher", "9"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "Give a memory ID or --character N, not both."),
        (("1", "--character", "5"), "Give a memory ID or --character N, not both."),
        (("x",), "'x' is not a valid memory id; use a positive whole number."),
        (("--character", "0"), "'0' is not a valid character id; use a positive whole number."),
    ],
)
def test_memory_history_refuses_bad_input(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert cli.fails("ais", "memory", "history", "Watcher", *args) == message


def test_export_prints_everything_held_and_is_audited(cli: Cli, tmp_path: Path) -> None:
    exported = json.loads(cli.ok("ais", "character", "export", str(MARA), "--actor", "ada"))
    assert list(exported) == EXPORT_KEYS
    assert exported["storytellers"] == [{"id": 1, "name": "Watcher"}, {"id": 2, "name": "Crier"}]
    assert [m["title"] for m in exported["memories"]] == ["Owes money", "Digs at night"]
    assert [s["role"] for s in exported["speech"]] == ["speaker", "target"]
    assert exported["speech"][0]["message"] == MARA_SAYS
    assert [s["title"] for s in exported["situations"]] == ["Buried silver"]
    assert len(exported["memory_history"]) == 3
    out = tmp_path / "mara.json"
    said = cli.ok("ais", "characters", "export", str(MARA), "--output", str(out))
    assert said.startswith(f"Wrote what is held about character #{MARA} to {out} (2 memories")
    assert json.loads(out.read_text(encoding="utf-8"))["memories"] == exported["memories"]
    entries = cli.json("audit", "list")
    assert [(e["actor"], e["action"], e["subject"]) for e in entries][-1] == (
        "ada",
        "character.export",
        "character 5",
    )
    assert entries[0]["detail"]["memories"] == 2
    assert MARA_SAYS not in json.dumps(entries)
    assert cli.json("audit", "list", "--character", str(PIP)) == []
    assert "character.export" in cli.ok("audit", "list")


def test_erase_asks_first_and_a_no_changes_nothing(cli: Cli) -> None:
    before = cli.snapshot()
    result = cli.run("ais", "character", "erase", str(MARA), input="n\n")
    assert (result.exit_code, result.stdout.strip()) == (1, "n")  # the runner echoes the answer
    assert "Would delete: 2 memory(ies), 3 memory history entry(ies)" in result.stderr
    assert "Erase all of this about character #5? [y/N]" in result.stderr
    assert result.stderr.endswith("error: Nothing about character #5 was erased.\n")
    assert cli.snapshot() == before


def test_erase_after_a_yes_deletes_redacts_and_audits(cli: Cli) -> None:
    result = cli.run("ais", "character", "erase", str(MARA), "--also", "Mara", input="y\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f" y\nCharacter #{MARA}: ")  # the runner echoes the answer
    assert "Deleted: 2 memory(ies), 3 memory history entry(ies), 1 situation(s) scoped" in (
        " ".join(result.stdout.split())
    )
    assert "speech_history.target_description" in result.stdout
    assert [m["id"] for m in cli.json("ais", "memory", "list", "Watcher")] == [3]
    assert cli.json("ais", "memory", "history", "Watcher", "--character", str(MARA)) == []
    exported = json.loads(cli.ok("ais", "character", "export", str(MARA), "--also", "Mara"))
    assert all(exported[k] == [] for k in EXPORT_KEYS if isinstance(exported[k], list))
    [exported_entry, erased_entry] = cli.json("audit", "list", "--character", str(MARA))
    assert erased_entry["action"] == "character.erase"
    assert erased_entry["detail"]["deleted"]["memories"] == 2
    assert exported_entry["action"] == "character.export"


def test_erase_dry_run_and_json(cli: Cli) -> None:
    before = cli.snapshot()
    report = cli.json("ais", "character", "erase", str(MARA), "--dry-run")
    assert report["dry_run"] is True and report["deleted"]["memories"] == 2
    assert report["reclaimed"] == "dry run: nothing was changed"
    assert cli.snapshot() == before
    report = cli.json("ais", "character", "erase", str(MARA), "--yes")
    assert list(report) == [
        "character_id",
        "dry_run",
        "texts",
        "deleted",
        "redacted",
        "rejected_approvals",
        "fts_rebuilt",
        "reclaimed",
    ]
    assert report["dry_run"] is False and report["reclaimed"] == "vacuumed"
    assert "character_memories_fts" in report["fts_rebuilt"]


def test_erasing_someone_nobody_holds_anything_about(cli: Cli) -> None:
    assert cli.ok("ais", "character", "erase", "99") == (
        "Nothing is held about character #99; nothing to erase.\n"
    )
    assert cli.fails("ais", "character", "erase", "x9", "--yes") == (
        "'x9' is not a valid character id; use a positive whole number."
    )
    assert cli.fails("audit", "list", "--limit", "0") == "--limit must be a positive number, not 0."


def test_export_to_a_file_that_cannot_be_written_is_not_audited(cli: Cli, tmp_path: Path) -> None:
    where = tmp_path / "missing" / "mara.json"
    message = cli.fails("ais", "character", "export", str(MARA), "--output", str(where))
    assert message == f"Cannot write {where}: No such file or directory."
