"""The console script itself: usage mistakes are one line with exit 2, like other errors."""

from __future__ import annotations

import subprocess
import sys

import pytest


def storyteller(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "storyteller_daemon", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("ais", "show"), "Missing argument 'REF'."),
        (("ais", "bogus"), "No such command 'bogus'."),
        (("db", "upgrade", "--bogus"), "No such option: --bogus"),
    ],
)
def test_usage_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    result = storyteller(*args)
    assert result.returncode == 64  # EX_USAGE
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: {message} (see --help)"]


def test_help_and_version_exit_zero() -> None:
    assert storyteller("--help").returncode == 0
    version = storyteller("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("storyteller ")
