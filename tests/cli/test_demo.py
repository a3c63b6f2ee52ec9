"""`storyteller demo` end to end: packs, the offline stand-in, a full turn, the summary."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from storyteller_daemon.cli import app


def test_demo_shows_a_turn_and_a_summary(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["demo", "--seconds", "8", "--tick", "0.5", "--data-dir", str(tmp_path)],
        env={"OPENAI_API_KEY": None},
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "OFFLINE STAND-IN" in out and "not a language model" in out
    assert "loaded pack harbour-ward" in out
    assert "interested" in out
    assert "CreateSituation" in out and "EchoToRoom" in out
    assert "Maren Tidewell sees:" in out
    assert "demo summary" in out
    assert "Thief!" in out  # the situation the opening scene led to
    assert "loaded pack harbour-director" in out
    assert "CreateStoryPlan" in out and "director's plans" in out  # the director made a plan
    # The director acts on its own plan word for word (its echo step), and nothing the demo
    # does is refused by its policy (pacing scaled to the demo's time).
    assert 'The harbour bell rings out across the darkening water."}) ok' in out
    assert "refused" not in out
    assert (tmp_path / "demo.db").exists()
