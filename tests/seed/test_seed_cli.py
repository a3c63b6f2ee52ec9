"""``storyteller seed list`` and ``storyteller seed load`` through the real command line."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from storyteller_daemon.cli import app
from storyteller_daemon.cli import support as cli_common
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.storage.store import Store

runner = CliRunner()


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tables one row per line, so assertions can read whole names."""
    monkeypatch.setattr(cli_common.console, "width", 200)


@pytest.fixture
def cli_db(tmp_path: Path) -> str:
    """A migrated SQLite database, created through the CLI."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"
    upgraded = runner.invoke(app, ["--db", url, "db", "upgrade"])
    assert upgraded.exit_code == 0, upgraded.output
    return url


def _seed(url: str, *args: str) -> Result:
    return runner.invoke(app, ["--db", url, "seed", *args])


def _contents(url: str) -> tuple[dict[str, int], list[str]]:
    """Storyteller revisions by name, and document names, read straight from the database."""

    async def read() -> tuple[dict[str, int], list[str]]:
        store = Store.open(url, clock=SystemClock())
        try:
            storytellers = {st.name: st.revision for st in await store.storytellers.list()}
            return storytellers, [d.name for d in await store.references.list()]
        finally:
            await store.close()

    return asyncio.run(read())


def test_seed_help_lists_the_commands() -> None:
    result = runner.invoke(app, ["seed", "--help"])
    assert result.exit_code == 0
    assert "list" in result.output and "load" in result.output
    assert "--dry-run" in runner.invoke(app, ["seed", "load", "--help"]).output


def test_list_shows_packs_storytellers_and_document_counts() -> None:
    result = runner.invoke(app, ["seed", "list"])

    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    steward = next(line for line in lines if "narrative-steward" in line)
    watch = next(line for line in lines if "harbour-ward" in line)
    assert "Example Narrative Steward" in steward and " 12 " in steward
    assert "Harbour Ward Watch" in watch and " 4 " in watch
    assert " sim " in watch and " unsaid " in steward  # the world each was written for


def test_list_reports_a_broken_pack_without_failing(tmp_path: Path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "pack.toml").write_text("[pack]\n")

    result = runner.invoke(app, ["seed", "list", "--seed-dir", str(tmp_path)])

    assert result.exit_code == 0
    assert "invalid:" in result.output and "pack.description" in result.output


def test_load_twice_then_no_changes(cli_db: str) -> None:
    first = _seed(cli_db, "load", "harbour-ward")
    after_first = _contents(cli_db)
    second = _seed(cli_db, "load", "harbour-ward")

    assert first.exit_code == 0, first.output
    assert "pack harbour-ward: created 5, updated 0, unchanged 0" in first.output
    assert second.exit_code == 0, second.output
    assert second.output.strip() == "pack harbour-ward: no changes"
    assert _contents(cli_db) == after_first
    assert after_first[0] == {"Harbour Ward Watch": 1}
    assert len(after_first[1]) == 4


def test_dry_run_prints_the_diff_and_writes_nothing(cli_db: str) -> None:
    result = _seed(cli_db, "load", "narrative-steward", "--dry-run")

    assert result.exit_code == 0, result.output
    assert "would create 13" in result.output and "nothing written" in result.output
    row = next(line for line in result.output.splitlines() if "Example Narrative Steward" in line)
    assert "storyteller" in row and "create" in row
    assert _contents(cli_db) == ({}, [])


def test_dry_run_names_the_changed_fields(
    cli_db: str, copy_pack: Callable[[str], Path], edit: Callable[[Path, str, str], None]
) -> None:
    pack_dir = copy_pack("harbour-ward")
    assert _seed(cli_db, "load", str(pack_dir)).exit_code == 0
    edit(pack_dir / "prompts" / "heartbeat.md", "A quiet round is a good round.", "Rest.")
    edit(pack_dir / "pack.toml", "include = [201]", "include = [201, 202]")

    result = _seed(cli_db, "load", str(pack_dir), "--dry-run")

    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "Harbour Ward Watch" in line)
    assert "update" in row and "time_system_prompt, surveillance" in row
    assert "would update 1, unchanged 4" in result.output
    assert _contents(cli_db)[0] == {"Harbour Ward Watch": 1}


@pytest.mark.parametrize(
    ("file", "old", "new", "where"),
    [
        (
            "pack.toml", "echo_only = true", "echo_only = true\nrepeat = 2",
            'storyteller["Harbour Ward Watch"].tools["ShoutFromCrowd"].repeat: unknown key',
        ),
        (
            "pack.toml", 'attention = "low"', 'attention = "tiny"',
            "pack.toml: storyteller[\"Harbour Ward Watch\"].effort.attention: 'tiny' is not",
        ),
        (
            "references/04-harbour-ward-undercurrents.md",
            'restricted_to = ["Harbour Ward Watch"]', 'restricted_to = ["The Tidewatch"]',
            "04-harbour-ward-undercurrents.md: restricted_to: 'The Tidewatch' is not a storyteller",
        ),
        (
            "pack.toml", 'name = "SendTheWatch"', 'name = "PlayerInformation"',
            'tools["PlayerInformation"].name: Tool name \'PlayerInformation\' collides',
        ),
    ],
    ids=["unknown-key", "bad-effort", "unknown-restricted-to", "builtin-tool-name"],
)  # fmt: skip
def test_invalid_pack_exits_78_names_file_and_key_and_writes_nothing(
    cli_db: str,
    copy_pack: Callable[[str], Path],
    edit: Callable[[Path, str, str], None],
    file: str,
    old: str,
    new: str,
    where: str,
) -> None:
    pack_dir = copy_pack("harbour-ward")
    edit(pack_dir / file, old, new)

    result = _seed(cli_db, "load", str(pack_dir))

    assert result.exit_code == 78
    assert where in " ".join(result.stderr.split())
    assert _contents(cli_db) == ({}, [])


def test_unknown_pack_names_the_packs_available(cli_db: str) -> None:
    result = _seed(cli_db, "load", "harbor-ward")

    assert result.exit_code == 78
    assert "packs available: harbour-director, harbour-ward, narrative-steward" in result.stderr


def test_load_refuses_an_unmigrated_database(tmp_path: Path) -> None:
    result = _seed(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}", "load", "harbour-ward")

    assert result.exit_code == 78  # EX_CONFIG: run db upgrade
    assert "storyteller db upgrade" in result.stderr
