"""The README's commands run as shown: "Using it" against a fresh database from the example
configuration, the quick starts ("Quick start: Evennia", "Any other game") against the sim
world served over the bridge as the admin's game (the daemon itself, `run`, is left to its own
tests, and the game's own commands to the game)."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.testing.served_sim import served_sim

ROOT = Path(__file__).resolve().parents[1]


def _using_it(section: str = "Using it") -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(rf"## {re.escape(section)}\s.*?```sh\n(.*?)```", text, re.DOTALL)
    assert block, f"README has no '{section}' block"
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


GAME_URL = "ws://127.0.0.1:4010/storyteller"


def test_the_quick_starts_run_against_a_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evennia, other = _using_it("Quick start: Evennia"), _using_it("Any other game")
    assert evennia[0][:2] == ["bridge", "check"] and evennia[1][0] == "init"
    assert ["--config", "my-game/storyteller.toml", "doctor"] in evennia
    monkeypatch.chdir(tmp_path)  # an empty directory
    token = "readme-quick-start-token"
    outputs = {}
    with served_sim(token, game="My Game", steps=60) as game:
        runner = CliRunner()
        for words in [*evennia, *other]:
            if words[-1] == "run":
                continue
            words = [game.url if w == GAME_URL else w for w in words]
            result = runner.invoke(
                app, words, env={"STORYTELLER_BRIDGE_TOKEN": token, "OPENAI_API_KEY": ""}
            )
            assert result.exception is None or isinstance(result.exception, SystemExit), words
            may_fail = "doctor" in words  # no model key on this machine
            assert may_fail or result.exit_code == 0, (words, result.output)
            outputs[" ".join(words[2:] if words[0] == "--config" else words)] = result.output
    assert "0 failed" in outputs[f"bridge check {game.url}"]
    assert "101, 102" in outputs["world zones"] and "DispatchWatchman" in outputs["world progs"]
    doctor = outputs["doctor"].splitlines()
    assert [line.split()[0] for line in doctor if " fit " in line] == ["ok"]
    assert "Storyteller" in outputs["ais unpause My Game Storyteller"]
