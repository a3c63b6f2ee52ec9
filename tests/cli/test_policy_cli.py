"""``storyteller policy``: the kill switch from the command line, and the limits in force."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.cli import app
from storyteller_daemon.config import PolicyConfig


def test_kill_and_resume_flip_the_flag_the_daemon_reads(tmp_path: Path) -> None:
    db = tmp_path / "storyteller.db"
    runner = CliRunner()
    daemon_side = Policy(PolicyConfig(), lambda: 0.0, kill_file=tmp_path / "storyteller.kill")
    result = runner.invoke(app, ["--db", str(db), "policy", "kill"])
    assert result.exit_code == 0, result.output
    assert "kill switch on" in result.output and daemon_side.killed
    shown = runner.invoke(app, ["--db", str(db), "policy", "show", "--json"])
    assert json.loads(shown.stdout)["kill_switch"] is True
    result = runner.invoke(app, ["--db", str(db), "policy", "resume"])
    assert result.exit_code == 0 and not daemon_side.killed
    shown = runner.invoke(app, ["--db", str(db), "policy", "show", "--json"])
    limits = json.loads(shown.stdout)
    assert limits["kill_switch"] is False and limits["max_prog_calls_per_turn"] == 3


def test_without_a_file_to_flag_the_command_says_what_to_set() -> None:
    result = CliRunner().invoke(app, ["--db", "postgresql://st@db/st", "policy", "kill"])
    assert result.exit_code == 78
    assert "set [policy] kill_file" in result.output and "Traceback" not in result.output
