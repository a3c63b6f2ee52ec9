"""``storyteller eval``: a pack's scenarios against the stand-in, its report, JUnit and exit."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from lxml import etree
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.eval_results import EvalResult
from storyteller_daemon.interchange.packs.files import SEED_DIR
from storyteller_daemon.storage.store import Store

SCHEMA = Path(__file__).parents[1] / "data" / "evals" / "junit.xsd"
# The stand-in attends to watch words ("thief"): a scenario wanting it ignored fails.
WRONG = """
name = "a cry of thief is ignored"
[[events]]
at = "0s"
action = "say"
character = 1001
room = 101
text = "Thief! Stop him!"
expect = "ignore"
"""


@pytest.fixture
def pack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """harbour-ward with its thief scenario only, run from a directory with no configuration."""
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "harbour-ward"
    shutil.copytree(SEED_DIR / "harbour-ward", target)
    for file in (target / "scenarios").glob("*.toml"):
        if file.name != "thief-on-the-quay.toml":
            file.unlink()
    return target


def test_passing_scenarios_exit_zero_with_a_table(pack: Path) -> None:
    result = CliRunner().invoke(app, ["eval", str(pack)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "1 scenarios of harbour-ward against offline stand-in" in result.output
    assert "a cry of thief on the quay opens a situation" in result.output
    assert "event 1 (say) is attended" in result.output and "1/1" in result.output
    assert "passed: 1 scenarios passed, 0 failed, 0 skipped" in result.output


def test_a_failing_scenario_shows_its_transcript_and_exits_one(pack: Path) -> None:
    (pack / "scenarios" / "wrong.toml").write_text(WRONG, encoding="utf-8")
    junit = pack.parent / "eval.xml"
    result = CliRunner().invoke(
        app, ["eval", str(pack), "--repeat", "2", "--junit", str(junit)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 1, result.output
    assert "FAILED a cry of thief is ignored (run 1 of 2):" in result.output
    assert "event 1 (say) is ignored: got attended" in result.output
    # the throw-away run's transcript, as `storyteller runs show` prints it
    assert "Run #" in result.output and "CreateSituation" in result.output
    assert "FAILED: 1 scenarios passed, 1 failed, 0 skipped" in result.output
    schema = etree.XMLSchema(etree.parse(str(SCHEMA)))
    document = etree.parse(str(junit))
    schema.assertValid(document)
    assert document.getroot().get("failures") == "1"


def test_json_glob_and_threshold(pack: Path) -> None:
    (pack / "scenarios" / "wrong.toml").write_text(WRONG, encoding="utf-8")
    only = CliRunner().invoke(app, ["eval", str(pack), "--scenario", "thief-*", "--json"])
    assert only.exit_code == 0, only.output
    data = json.loads(only.output)
    assert [s["name"] for s in data["scenarios"]] == [
        "a cry of thief on the quay opens a situation"
    ]
    lenient = CliRunner().invoke(app, ["eval", str(pack), "--threshold", "0", "--json"])
    assert lenient.exit_code == 0 and json.loads(lenient.output)["counts"]["failed"] == 0
    none = CliRunner().invoke(app, ["eval", str(pack), "--scenario", "nothing*"])
    assert none.exit_code == 1
    assert "pack harbour-ward has no scenarios matching 'nothing*'" in none.output


def test_a_model_that_cannot_be_used_is_one_line(pack: Path) -> None:
    # Only the stand-in runs without a configuration.
    bare = CliRunner().invoke(app, ["eval", str(pack), "--model", "configured"])
    assert bare.exit_code == 78 and "no configuration" in bare.output
    config = pack.parent / "storyteller.toml"
    config.write_text(
        '[database]\nurl = "sqlite+aiosqlite:///unused.db"\n'
        '[model]\napi_key_env = "STORYTELLER_EVAL_TEST_NO_KEY"\n',
        encoding="utf-8",
    )
    for model, problem in (
        ("gpt-5", "'gpt-5' is not stand-in, configured or ENDPOINT/MODEL"),
        ("configured", "the configuration has no model"),
        ("default/gpt-5-mini", "STORYTELLER_EVAL_TEST_NO_KEY is not set"),
    ):
        result = CliRunner().invoke(app, ["eval", str(pack), "--model", model])
        assert result.exit_code == 78, result.output
        assert problem in result.output and "Traceback" not in result.output
        assert len(result.output.strip().splitlines()) == 1


def test_results_are_kept_in_the_configured_database(pack: Path) -> None:
    db = pack.parent / "kept.db"
    url = f"sqlite+aiosqlite:///{db}"
    unmigrated = CliRunner().invoke(app, ["--db", url, "eval", str(pack)])
    assert unmigrated.exit_code == 0, unmigrated.output
    assert "the results were not kept" in unmigrated.output and "db upgrade" in unmigrated.output
    assert CliRunner().invoke(app, ["--db", url, "db", "upgrade"]).exit_code == 0
    for _ in range(2):
        assert CliRunner().invoke(app, ["--db", url, "eval", str(pack)]).exit_code == 0
    assert CliRunner().invoke(app, ["--db", url, "eval", str(pack), "--no-keep"]).exit_code == 0

    async def read() -> tuple[dict[str, list[EvalResult]], int]:
        store = Store.open(url, clock=SystemClock())
        try:
            return await store.eval_results.latest(), len(
                await store.eval_results.rounds("Harbour Ward Watch")
            )
        finally:
            await store.close()

    latest, rounds = asyncio.run(read())
    (kept,) = latest["Harbour Ward Watch"]
    assert (kept.scenario, kept.passed, kept.pack) == (
        "a cry of thief on the quay opens a situation",
        True,
        "harbour-ward",
    )
    assert "offline stand-in" in kept.model
    assert rounds == 2  # --no-keep kept nothing
