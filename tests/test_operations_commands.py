"""The operations guide's admin commands (the `stctl …` lines) run as shown, against a fresh
database from the production configuration in deploy/ (the database and the state directory
moved to a temporary directory, the seed directory to the checkout's) and the sim world served
over the bridge as the admin's game."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.testing.served_sim import served_sim

ROOT = Path(__file__).resolve().parents[1]
INSTALLED_SEED = "/opt/storyteller/seed"
STATE_DIRECTORY = "/var/lib/storyteller"
TOKEN = "operations-guide-token"


def guide_commands(state_directory: Path) -> list[list[str]]:
    """Every `stctl` line of the guide's shell blocks, in order, continuation lines joined."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL):
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["stctl"]:
                commands.append(
                    [
                        w.replace(INSTALLED_SEED, str(ROOT / "seed")).replace(
                            STATE_DIRECTORY, str(state_directory)
                        )
                        for w in words[1:]
                    ]
                )
    return commands


def test_the_operations_guide_commands_run_as_shown(tmp_path: Path) -> None:
    with served_sim(TOKEN, game="My Game") as game:
        config = (ROOT / "deploy" / "storyteller.toml").read_text(encoding="utf-8")
        url = f"sqlite+aiosqlite:///{tmp_path / 'storyteller.db'}"
        config, found = re.subn(r'(?m)^url = "sqlite[^"]*"', f'url = "{url}"', config, count=1)
        assert found == 1, "deploy/storyteller.toml names no SQLite database"
        config, found = re.subn(r'(?m)^url = "ws://[^"]*"', f'url = "{game.url}"', config, count=1)
        assert found == 1, "deploy/storyteller.toml names no game"
        (tmp_path / "storyteller.toml").write_text(config, encoding="utf-8")
        commands = guide_commands(tmp_path)
        assert ["db", "upgrade"] in commands and len(commands) >= 10
        # The guide creates the database before anything reads it; its first `ais list` shows the
        # stctl wrapper in use. Run the schema upgrade first, then everything in the guide's order.
        ordered = [c for c in commands if c == ["db", "upgrade"]]
        ordered += [c for c in commands if c != ["db", "upgrade"]]
        runner = CliRunner()
        outputs: dict[str, str] = {}
        env = {"OPENAI_API_KEY": "", "DISCORD_WEBHOOK_URL": "", "STORYTELLER_BRIDGE_TOKEN": TOKEN}
        for words in ordered:
            line = ["--config", str(tmp_path / "storyteller.toml"), *words]
            result = runner.invoke(app, line, env=env)
            assert result.exception is None or isinstance(result.exception, SystemExit), words
            # doctor reports the missing API key and webhook of this test machine as problems
            assert words[0] == "doctor" or result.exit_code == 0, (words, result.output)
            outputs[shlex.join(words)] = result.output
    assert "101, 102" in outputs["world zones"] and "DispatchWatchman" in outputs["world progs"]
    doctor = outputs["doctor"]
    assert "ok       fit" in doctor and "My Game has" in doctor  # the pack fits the game
    shown = outputs["ais show 'My Game Storyteller'"]
    assert "office-crime" in shown and "foghorn" in shown and "gulls" not in shown
    assert "My Game Storyteller" in outputs["ais list"]
