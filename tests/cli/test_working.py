"""Slow steps show a spinner on a terminal and nothing on a pipe."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from storyteller_daemon.cli import support as common


def test_off_a_terminal_nothing_is_written(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=out, force_terminal=False))
    with common.working("loading a pack"):
        pass
    assert out.getvalue() == ""


def test_on_a_terminal_the_step_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(common, "err_console", Console(file=out, force_terminal=True))
    with common.working("loading a pack"):
        pass
    assert "loading a pack" in out.getvalue()
