"""docs/evals.md: its scenario is the one the harbour-ward pack ships (which the suite holds
against the stand-in), its error line is what the parser says, and its commands use only the
options `storyteller eval` has."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.interchange.packs.scenarios import read_scenario

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "evals.md").read_text(encoding="utf-8")
SHIPPED = ROOT / "seed" / "harbour-ward" / "scenarios" / "thief-on-the-quay.toml"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, re.DOTALL)


def test_the_walkthrough_scenario_is_the_shipped_one() -> None:
    (example,) = _blocks("toml")
    assert example == SHIPPED.read_text(encoding="utf-8")
    assert read_scenario(SHIPPED, ["Harbour Ward Watch"]).name in DOC


def test_the_error_line_is_the_parsers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    copy = tmp_path / "seed" / "harbour-ward" / "scenarios" / SHIPPED.name
    copy.parent.mkdir(parents=True)
    copy.write_text(SHIPPED.read_text(encoding="utf-8").replace('"0s"', '"soon"'), "utf-8")
    with pytest.raises(ConfigError) as caught:
        read_scenario(copy.relative_to(tmp_path))
    assert f"error: {caught.value}" in _blocks("text")[0]


def test_the_commands_use_only_the_options_eval_has() -> None:
    help_text = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).output
    lines = [
        line.split("#")[0].strip()
        for block in _blocks("sh")
        for line in block.splitlines()
        if line.strip()
    ]
    assert len(lines) == 7
    for line in lines:
        words = shlex.split(line)
        assert words[0] == "storyteller" and "eval" in words
        for option in (w for w in words[words.index("eval") :] if w.startswith("--")):
            assert option in help_text, f"{option} in {line!r}"
