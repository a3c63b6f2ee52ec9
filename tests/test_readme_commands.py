"""The README's "Using it" commands run as shown, against a fresh database from the example
configuration (the daemon itself, `run`, is left to its own tests)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app

ROOT = Path(__file__).resolve().parents[1]


def _using_it() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Using it\s+```sh\n(.*?)```", text, re.DOTALL)
    assert block, "README has no 'Using it' block"
    lines = []
    for line in block.group(1).splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == ".venv/bin/storyteller":
            lines.append(words[1:])
    return lines


def test_the_readme_commands_run_as_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copy(ROOT / "config.example.toml", tmp_path / "storyteller.toml")
    text = (tmp_path / "storyteller.toml").read_text(encoding="utf-8")
    url = f"sqlite+aiosqlite:///{tmp_path / 'storyteller.db'}"
    text = re.sub(r'(?m)^url = "sqlite[^"]*"', f'url = "{url}"', text, count=1)
    (tmp_path / "storyteller.toml").write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the README relies on ./storyteller.toml
    commands = _using_it()
    assert ["db", "upgrade"] in commands and len(commands) >= 10
    runner = CliRunner()
    outputs = {}
    for words in commands:
        if words == ["run"]:
            continue
        result = runner.invoke(app, words, env={"OPENAI_API_KEY": ""})
        # a command that fails must fail as an exit with one line, never an exception
        assert result.exception is None or isinstance(result.exception, SystemExit), words
        may_fail = words[0] == "doctor" or words[:2] == ["runs", "show"]  # no key; no run 12
        assert may_fail or result.exit_code == 0, (words, result.output)
        outputs[" ".join(words)] = result.output
    search = next(v for k, v in outputs.items() if k.startswith("aisr search"))
    assert "No matching" not in search  # the example finds something in the example data
