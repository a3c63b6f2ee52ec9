"""``--json`` on the commands that print data: stable shapes a script can read."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from storyteller_daemon.cli import app


def test_seed_list_db_current_and_doctor_print_json(tmp_path: Path) -> None:
    db = str(tmp_path / "st.db")
    runner = CliRunner()
    packs = json.loads(runner.invoke(app, ["seed", "list", "--json"]).stdout)
    assert {p["name"] for p in packs} >= {"harbour-ward", "narrative-steward"}
    harbour = next(p for p in packs if p["name"] == "harbour-ward")
    assert harbour["storytellers"] == ["Harbour Ward Watch"] and harbour["documents"] == 4

    before = json.loads(runner.invoke(app, ["--db", db, "db", "current", "--json"]).stdout)
    assert before["current"] is None and before["up_to_date"] is False
    assert runner.invoke(app, ["--db", db, "db", "upgrade"]).exit_code == 0
    after = json.loads(runner.invoke(app, ["--db", db, "db", "current", "--json"]).stdout)
    assert after == {"current": after["head"], "head": after["head"], "up_to_date": True}

    result = runner.invoke(app, ["--db", db, "doctor", "--json"], env={"OPENAI_API_KEY": ""})
    findings = json.loads(result.stdout)
    assert {f["check"] for f in findings} >= {"config", "database", "model"}
    assert all(set(f) == {"check", "ok", "detail", "fix"} for f in findings)
    assert result.exit_code == (0 if all(f["ok"] for f in findings) else 1)


def test_seed_load_prints_its_report_as_json(tmp_path: Path) -> None:
    db = str(tmp_path / "st.db")
    runner = CliRunner()
    assert runner.invoke(app, ["--db", db, "db", "upgrade"]).exit_code == 0
    line = ["--db", db, "seed", "load", "harbour-ward", "--json"]
    dry = json.loads(runner.invoke(app, [*line, "--dry-run"]).stdout)
    assert dry["pack"] == "harbour-ward" and dry["dry_run"] is True
    assert {c["action"] for c in dry["changes"]} == {"create"}
    assert {
        "kind": "storyteller",
        "name": "Harbour Ward Watch",
        "action": "create",
        "fields": [],
    } in (dry["changes"])
    done = json.loads(runner.invoke(app, line).stdout)
    assert done["dry_run"] is False and done["changes"] == dry["changes"]
    again = json.loads(runner.invoke(app, line).stdout)
    assert {c["action"] for c in again["changes"]} == {"unchanged"}
