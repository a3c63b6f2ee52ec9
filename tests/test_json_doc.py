"""docs/json.md gives each `--json` command's shape; each one is run against a demo database
and must print exactly the documented keys."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^\| `storyteller (?P<command>[^`]+)` \| `(?P<shape>[^`]+)` \|", re.MULTILINE)


def documented() -> list[tuple[list[str], str]]:
    text = (ROOT / "docs" / "json.md").read_text(encoding="utf-8")
    return [(shlex.split(m["command"]), m["shape"]) for m in ROW.finditer(text)]


def shape(value: Any) -> str:
    """`{a, b}` for an object, `[{a, b}]` for a list of them (its first element)."""
    if isinstance(value, list):
        assert value, "an empty list shows no keys: the demo must have data for this command"
        return f"[{shape(value[0])}]"
    assert isinstance(value, dict)
    return "{" + ", ".join(value) + "}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("json-demo")
    line = ["demo", "--seconds", "4", "--tick", "0.5", "--data-dir", str(data)]
    result = CliRunner().invoke(app, line, env={"OPENAI_API_KEY": None})
    assert result.exit_code == 0, result.output
    return data / "demo.db"


def test_the_document_covers_the_read_commands() -> None:
    commands = {" ".join(c[:2]) for c, _ in documented()}
    assert {"ais list", "ais show", "aisr list", "runs list", "costs --json", "doctor --json"} <= (
        commands
    )


@pytest.mark.parametrize(("command", "documented_shape"), documented(), ids=lambda v: str(v))
def test_each_command_prints_the_documented_keys(
    demo: Path, command: list[str], documented_shape: str
) -> None:
    result = CliRunner().invoke(app, ["--db", str(demo), *command], env={"OPENAI_API_KEY": ""})
    assert result.exit_code in (0, 1), result.output  # doctor exits 1 without a key
    assert shape(json.loads(result.stdout)) == documented_shape
