"""Admin commands that only read the database work when the game cannot be reached."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from storyteller_daemon.cli import app


def test_ais_show_works_without_the_worlds_token(tmp_path: Path) -> None:
    config = tmp_path / "storyteller.toml"
    config.write_text(
        f"""
[database]
url = "sqlite+aiosqlite:///{tmp_path / "st.db"}"

[world]
kind = "bridge"
url = "ws://127.0.0.1:9/storyteller"
token_env = "STORYTELLER_TEST_UNSET_TOKEN"
""",
        encoding="utf-8",
    )
    runner = CliRunner()
    for command in (["db", "upgrade"], ["seed", "load", "harbour-ward"]):
        assert runner.invoke(app, ["--config", str(config), *command]).exit_code == 0
    shown = runner.invoke(app, ["--config", str(config), "ais", "show", "Harbour Ward Watch"])
    assert shown.exit_code == 0, shown.output
    assert "Validity: unknown (world unreachable)" in shown.output
    data = runner.invoke(
        app, ["--config", str(config), "ais", "show", "Harbour Ward Watch", "--json"]
    )
    assert data.exit_code == 0 and json.loads(data.stdout)["catalogue_known"] is False
