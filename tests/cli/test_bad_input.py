"""Every command, given bad input, answers with one line and an exit code; never a traceback.

The command tree is walked from the app itself, so a new command is covered the day it is
added. Each required argument gets hostile values in turn (an unknown id, text with NUL and
quotes, a very long string); commands without arguments get an unknown option. Commands that
serve or run until stopped are left to their own tests.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from storyteller_daemon.cli import app

LONG_RUNNING = {("run",), ("demo",), ("sim", "serve"), ("bench", "pipeline"), ("bench", "search"),
                ("bench", "stream"), ("bench", "cli")}  # fmt: skip
HOSTILE = ("99999", "x\x00' OR 1=1 --", "y" * 3000)
REF_GROUPS = {("ais", "set"): "Harbour Ward Watch", ("aisr", "set"): "01-harbour-ward-people"}
EXIT_CODES = {64, 65, 69, 73, 78}  # sysexits.h only


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    subs = getattr(command, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from _commands(sub, (*path, name))
    else:
        yield path, command


COMMANDS = [
    (path, command)
    for path, command in _commands(typer.main.get_command(app))
    if path not in LONG_RUNNING
]


def _line(path: tuple[str, ...], command: Any, value: str) -> list[str]:
    args = list(path)
    for group, ref in REF_GROUPS.items():
        if path[: len(group)] == group:
            args.insert(len(group), ref)
    required = [p for p in command.params if "Argument" in type(p).__name__ and p.required]
    if not required:
        return [*args, "--no-such-option"]
    return args + [value] * sum(p.nargs if p.nargs > 0 else 1 for p in required)


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bad-input")
    path = root / "storyteller.toml"
    path.write_text(f'[database]\nurl = "sqlite+aiosqlite:///{root / "st.db"}"\n', "utf-8")
    runner = CliRunner()
    for line in (["db", "upgrade"], ["seed", "load", "harbour-ward"]):
        assert runner.invoke(app, ["--config", str(path), *line]).exit_code == 0
    return path


@pytest.mark.parametrize("value", HOSTILE, ids=["unknown-id", "nul-and-quotes", "long"])
def test_no_command_prints_a_traceback(config: Path, value: str) -> None:
    runner = CliRunner()
    problems = []
    for path, command in COMMANDS:
        line = ["--config", str(config), *_line(path, command, value)]
        result = runner.invoke(app, line, env={"OPENAI_API_KEY": ""})
        output = result.output
        if "Traceback" in output or (
            result.exception is not None and not isinstance(result.exception, SystemExit)
        ):
            problems.append(f"{' '.join(path)}: {type(result.exception).__name__}: {output[-300:]}")
        elif result.exit_code not in EXIT_CODES | {0}:
            problems.append(f"{' '.join(path)}: exit {result.exit_code}")
    assert problems == []
