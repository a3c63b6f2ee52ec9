"""``storyteller --help`` is printed back as typer printed it, under a key that holds everything
the text depends on, and never from a cache it cannot trust."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from storyteller_daemon.cli import help_cache


def _help(cache: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """A fresh ``storyteller ARGV`` (``--help`` by default) keeping what it keeps in `cache`."""
    environment = {k: v for k, v in os.environ.items() if k not in help_cache.ENVIRONMENT}
    environment.update(XDG_CACHE_HOME=str(cache), **env)
    return subprocess.run(
        [sys.executable, "-m", "storyteller_daemon", *(argv or ("--help",))],
        capture_output=True,
        text=True,
        env=environment,
        check=False,
    )


def _kept(cache: Path) -> list[Path]:
    return sorted((cache / "storyteller").glob("help-*.txt"))


def test_the_help_printed_back_is_byte_for_byte_what_typer_printed(tmp_path: Path) -> None:
    first = _help(tmp_path)
    assert first.returncode == 0 and "Usage:" in first.stdout and "ais" in first.stdout
    [kept] = _kept(tmp_path)
    assert kept.read_text(encoding="utf-8") == first.stdout
    again = _help(tmp_path)
    assert (again.returncode, again.stdout, again.stderr) == (0, first.stdout, "")


def test_what_the_text_depends_on_is_in_its_key(tmp_path: Path) -> None:
    narrow = _help(tmp_path, COLUMNS="60")
    wide = _help(tmp_path, COLUMNS="120")
    assert len(_kept(tmp_path)) == 2
    assert max(map(len, narrow.stdout.splitlines())) <= 60
    assert max(map(len, wide.stdout.splitlines())) > 60
    assert _help(tmp_path, COLUMNS="60").stdout == narrow.stdout  # each printed back as its own


def test_the_programs_name_is_in_the_key(tmp_path: Path) -> None:
    as_module = _help(tmp_path)
    script = Path(sys.executable).with_name("storyteller")
    as_script = subprocess.run(
        [str(script), "--help"],
        capture_output=True,
        text=True,
        env=dict(os.environ, XDG_CACHE_HOME=str(tmp_path)),
        check=False,
    )
    assert "python -m storyteller_daemon" in as_module.stdout
    assert as_script.returncode == 0 and "Usage: storyteller " in as_script.stdout
    assert len(_kept(tmp_path)) == 2


def test_only_the_roots_help_is_kept_and_a_failed_run_keeps_nothing(tmp_path: Path) -> None:
    assert _help(tmp_path, "db", "--help").returncode == 0
    assert _help(tmp_path, "--no-such-option").returncode != 0
    assert _kept(tmp_path) == []
    assert help_cache.key(["db", "--help"], io.StringIO()) is None
    assert help_cache.key(["--help", "--version"], io.StringIO()) is None


def test_a_cache_that_cannot_be_written_or_read_is_passed_over(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder", encoding="utf-8")  # the cache folder cannot be made
    done = _help(blocked)
    assert done.returncode == 0 and "Usage:" in done.stdout and done.stderr == ""
    assert _help(blocked).stdout == done.stdout


def test_a_changed_source_of_the_help_is_a_new_key(tmp_path: Path) -> None:
    for name in help_cache.SOURCES:
        (tmp_path / name).write_text("one", encoding="utf-8")
    before = help_cache.key(["--help"], io.StringIO(), sources=tmp_path)
    assert help_cache.key(["--help"], io.StringIO(), sources=tmp_path) == before
    (tmp_path / help_cache.SOURCES[0]).write_text("two", encoding="utf-8")
    assert help_cache.key(["--help"], io.StringIO(), sources=tmp_path) != before
