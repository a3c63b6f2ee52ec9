"""Log lines under journald carry syslog priorities, so ``journalctl -p err`` finds errors."""

from __future__ import annotations

import json
import logging

import pytest

from storyteller_daemon.app.logs import JournalFormatter, configure_logging, json_formatter
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


def test_json_lines_carry_level_logger_message_time_and_the_traceback() -> None:
    try:
        raise RuntimeError("boom")
    except RuntimeError as exc:
        line = json_formatter().format(_record(logging.ERROR, "turn crashed", exc))
    assert "\n" not in line
    value = json.loads(line)
    assert (value["level"], value["logger"], value["message"]) == (
        "ERROR",
        "storyteller",
        "turn crashed",
    )
    assert value["time"] and value["exc_info"].endswith("RuntimeError: boom")


def test_json_lines_under_journald_keep_the_priority_and_leave_the_time_to_it() -> None:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        configure_logging(LoggingConfig(format="json"), {"JOURNAL_STREAM": "8:1234"})
        line = root.handlers[0].format(_record(logging.WARNING, "slow model"))
        assert line.startswith("<4>{")
        value = json.loads(line[3:])
        assert value["message"] == "slow model" and "time" not in value
        configure_logging(LoggingConfig(format="json"), {})
        assert "time" in json.loads(root.handlers[0].format(_record(logging.INFO, "x")))
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
