"""Log lines under journald carry syslog priorities, so ``journalctl -p err`` finds errors."""

from __future__ import annotations

import logging

import pytest

from storyteller_daemon.cli.run import JournalFormatter, configure_logging
from storyteller_daemon.config import LoggingConfig


def _record(level: int, message: str, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord("storyteller", level, __file__, 1, message, None, info)


@pytest.mark.parametrize(
    ("level", "prefix"),
    [
        (logging.DEBUG, "<7>"),
        (logging.INFO, "<6>"),
        (logging.WARNING, "<4>"),
        (logging.ERROR, "<3>"),
        (logging.CRITICAL, "<2>"),
    ],
)
def test_each_level_has_its_syslog_priority(level: int, prefix: str) -> None:
    line = JournalFormatter().format(_record(level, "something happened"))
    assert line.startswith(prefix) and line.endswith("storyteller: something happened")


def test_every_line_of_a_traceback_keeps_the_error_priority() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        text = JournalFormatter().format(_record(logging.ERROR, "turn crashed", exc))
    lines = text.splitlines()
    assert len(lines) > 2 and all(line.startswith("<3>") for line in lines)
    assert lines[-1] == "<3>RuntimeError: boom"


def test_the_formatter_is_chosen_by_journal_stream() -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        configure_logging(LoggingConfig(), {"JOURNAL_STREAM": "8:1234"})
        assert isinstance(root.handlers[0].formatter, JournalFormatter)
        configure_logging(LoggingConfig(), {})
        assert not isinstance(root.handlers[0].formatter, JournalFormatter)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
