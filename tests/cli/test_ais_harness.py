"""Harness for the ``ais`` / ``aisr`` CLI tests, and the tests of the harness itself.

Every test gets a copy of one database migrated through ``storyteller db upgrade``, runs commands
in-process with typer's runner, and checks the CLI's error contract: a failing command exits 1,
prints nothing on stdout and exactly one ``error:`` line on stderr, and changes nothing in the
database.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from typer.testing import CliRunner, Result

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from storyteller_daemon.cli import app
from storyteller_daemon.cli import support as cli_common
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.storage.store import Store

T = TypeVar("T")

_TEMPLATES: dict[tuple[str, ...], Path] = {}


SQLITE_PREFIX = "sqlite+aiosqlite:///"


def sqlite_url(path: Path) -> str:
    """The async SQLite URL of a database file."""
    return SQLITE_PREFIX + str(path)


def template_database(factory: pytest.TempPathFactory, storytellers: tuple[str, ...] = ()) -> Path:
    """A database migrated through the CLI, holding `storytellers`; built once, copied per test."""
    if storytellers not in _TEMPLATES:
        path = factory.mktemp("template") / "template.db"
        runner = CliRunner()
        if storytellers:
            shutil.copyfile(template_database(factory), path)
        else:
            result = runner.invoke(app, ["--db", sqlite_url(path), "db", "upgrade"])
            assert result.exit_code == 0, result.output
        for name in storytellers:
            result = runner.invoke(app, ["--db", sqlite_url(path), "ais", "create", name])
            assert result.exit_code == 0, result.output
        _TEMPLATES[storytellers] = path
    return _TEMPLATES[storytellers]


@dataclass
class Cli:
    """Runs ``storyteller --db URL …`` in-process against one test database."""

    url: str
    runner: CliRunner

    def run(self, *args: str, input: str | bytes | None = None) -> Result:
        """Run a command and return typer's result, whatever it is."""
        return self.runner.invoke(app, ["--db", self.url, *args], input=input)

    def ok(self, *args: str, input: str | bytes | None = None) -> str:
        """Run a command that must succeed quietly on stderr; its stdout."""
        result = self.run(*args, input=input)
        assert result.exit_code == 0, f"{args} -> {result.exit_code}: {result.output}"
        assert result.stderr == ""
        return result.stdout

    def json(self, *args: str) -> Any:
        """Run a read command with ``--json`` and parse its output."""
        return json.loads(self.ok(*args, "--json"))

    def fails(self, *args: str, input: str | bytes | None = None, code: int = 65) -> str:
        """Run a command that must fail cleanly and change nothing; its one error message.

        `code` is its sysexits code: 65 (bad data) unless the test says otherwise."""
        before = self.snapshot()
        result = self.run(*args, input=input)
        assert result.exit_code == code, f"{args} -> {result.exit_code}: {result.output}"
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1, result.stderr
        assert lines[0].startswith("error: ")
        assert self.snapshot() == before
        return lines[0].removeprefix("error: ")

    def with_store(self, work: Callable[[Store], Awaitable[T]]) -> T:
        """Run `work` against the test database directly (for what no command creates)."""

        async def run() -> T:
            store = Store.open(self.url, clock=SystemClock())
            try:
                return await work(store)
            finally:
                await store.close()

        return asyncio.run(run())

    def snapshot(self) -> list[str]:
        """Every row of every table, as SQL: what a failed command must leave untouched (but
        the prog catalogue, which any command that asked the world keeps for later checks)."""
        with closing(sqlite3.connect(self.url.removeprefix(SQLITE_PREFIX))) as db:
            return [line for line in db.iterdump() if '"prog_catalogues"' not in line]

    def create(self, name: str) -> int:
        """Create a storyteller through the CLI; its id."""
        self.ok("ais", "create", name)
        return int(self.json("ais", "show", name)["id"])

    def show(self, ref: str | int) -> Any:
        """``ais show REF --json``."""
        return self.json("ais", "show", str(ref))


def fresh_cli(
    tmp_path: Path,
    factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    storytellers: tuple[str, ...] = (),
) -> Cli:
    """A `Cli` on a private copy of a migrated database that holds `storytellers` (ids 1, 2…)."""
    path = tmp_path / "storyteller.db"
    shutil.copyfile(template_database(factory, storytellers), path)
    # Wide enough that table cells never wrap, so assertions can look for whole values.
    monkeypatch.setattr(cli_common.console, "width", 200)
    return Cli(sqlite_url(path), CliRunner())


def use_catalogue(monkeypatch: pytest.MonkeyPatch, progs: list[ProgSignature] | None) -> None:
    """Make the world's prog catalogue `progs` (None: the world cannot be reached)."""

    async def catalogue(_cfg: object) -> list[ProgSignature] | None:
        return progs

    monkeypatch.setattr("storyteller_daemon.app.prog_catalogue", catalogue)


def text_prog(prog_id: int, name: str, *parameters: str, error: str = "") -> ProgSignature:
    """A prog taking Text parameters and returning Text."""
    text = ValueType(ProgType.TEXT)
    params = tuple(ProgParameter(p, text) for p in parameters)
    return ProgSignature(prog_id, name, params, text, compile_error=error)


def cli_fixture(*storytellers: str, name: str = "cli") -> Any:
    """A fixture giving each test a `fresh_cli` whose database holds `storytellers`."""

    @pytest.fixture(name=name)
    def fixture(
        tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
    ) -> Cli:
        return fresh_cli(tmp_path, tmp_path_factory, monkeypatch, storytellers)

    return fixture


cli = cli_fixture()


def test_each_test_database_is_a_migrated_private_copy(cli: Cli) -> None:
    assert "up to date" in cli.ok("db", "current")
    cli.ok("ais", "create", "Only Here")
    template = Cli(sqlite_url(_TEMPLATES[()]), CliRunner())
    assert cli.url != template.url
    assert cli.json("ais", "list") != []
    assert template.json("ais", "list") == []


def test_a_failing_command_is_one_error_line_on_stderr(cli: Cli) -> None:
    result = cli.run("ais", "show", "Nobody")
    assert (result.exit_code, result.stdout) == (65, "")
    assert result.stderr == "error: No storyteller with id or name 'Nobody' exists.\n"


def test_config_errors_exit_78_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "storyteller.toml"
    bad.write_text("[database]\nurl = 5\n")
    result = CliRunner().invoke(app, ["--config", str(bad), "ais", "list"])
    assert result.exit_code == 78
    assert len(result.stderr.splitlines()) == 1


def test_the_snapshot_sees_a_change_to_any_setting(cli: Cli) -> None:
    cli.ok("ais", "create", "Watcher")
    before = cli.snapshot()
    cli.ok("ais", "set", "Watcher", "speech-context", "window", "11m")
    assert cli.snapshot() != before
