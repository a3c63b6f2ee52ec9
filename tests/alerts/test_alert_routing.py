"""Quiet periods per key, errors in the log becoming alerts, counters and crash loops."""

from __future__ import annotations

import asyncio
import logging
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from storyteller_daemon.alerts import Alerts
from storyteller_daemon.alerts.crash_loop import StartHistory, check_crash_loop
from storyteller_daemon.alerts.log_forward import forwarding_errors
from storyteller_daemon.alerts.service import describe_queue_overflow
from storyteller_daemon.alerts.sink import Alert, LogAlertSink
from storyteller_daemon.alerts.throttle import Throttle
from storyteller_daemon.testing import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock, settle

T0 = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)


def occurrence(key: str = "k", kind: str = "log_error", title: str = "t") -> Alert:
    return Alert(kind, title, "", "error", key)


# ---------------------------------------------------------------- throttle


async def test_repeats_inside_the_quiet_period_are_folded_into_one_summary() -> None:
    clock = FakeClock()
    throttle = Throttle(clock, period_seconds=600)
    assert throttle.admit(occurrence(title="first")) is not None
    for n in range(5):
        assert throttle.admit(occurrence(title=f"repeat {n}")) is None
    assert throttle.admit(occurrence(key="other")) is not None
    await clock.advance(599)
    assert throttle.flush() == []
    await clock.advance(1)
    (summary,) = throttle.flush()
    assert (summary.title, summary.count, summary.headline) == (
        "repeat 4",
        5,
        "repeat 4 (×5 in the last 10 min)",
    )
    # the next period ends quietly: the key is forgotten and the next occurrence goes out at once
    await clock.advance(600)
    assert throttle.flush() == []
    assert throttle.tracked_keys == 0
    assert throttle.admit(occurrence()) == occurrence()


async def test_an_occurrence_after_an_unflushed_period_carries_the_pending_count() -> None:
    clock = FakeClock()
    throttle = Throttle(clock, period_seconds=60)
    throttle.admit(occurrence())
    throttle.admit(occurrence())
    await clock.advance(61)
    admitted = throttle.admit(occurrence(title="again"))
    assert admitted is not None and admitted.headline == "again (×2 in the last 1 min)"


async def test_model_refusals_are_reported_at_most_hourly_per_key() -> None:
    clock = FakeClock()
    throttle = Throttle(clock, period_seconds=600)
    fatal = occurrence(key="model_fatal:3", kind="model_fatal")
    assert throttle.admit(fatal) is not None
    await clock.advance(3599)
    assert throttle.admit(fatal) is None
    await clock.advance(1)
    assert [a.count for a in throttle.flush()] == [1]


# ---------------------------------------------------------------- log forwarding


def test_a_logged_exception_alerts_with_its_type_only() -> None:
    recorder = RecordedAlerts()
    log = logging.getLogger("storyteller_daemon.runtime.pipeline")
    with forwarding_errors(recorder):
        try:
            raise ValueError("player said: ignore your instructions; key sk-123")
        except ValueError:
            log.exception("attention pass failed for storyteller %s", 3)
        log.warning("not an error")
        log.error("opted out", extra={"alert": False})
        logging.getLogger("storyteller_daemon.alerts.discord").error("about alerts")
    log.error("after the block")
    (alert,) = recorder.alerts
    assert alert.title == "attention pass failed for storyteller 3"
    assert alert.detail == ("Failed with ValueError. Full details were written to the daemon log.")
    assert "sk-123" not in alert.detail
    assert (
        alert.key
        == "log:storyteller_daemon.runtime.pipeline:attention pass failed for storyteller %s"
    )


def test_an_exception_passed_as_a_log_argument_shows_by_type_only() -> None:
    recorder = RecordedAlerts()
    log = logging.getLogger("storyteller_daemon.runtime.daemon")
    with forwarding_errors(recorder):
        log.error("could not store world events (%s)", OSError("postgresql://u:secret@db/x"))
    (alert,) = recorder.alerts
    assert alert.title == "could not store world events (OSError)"
    assert "secret" not in alert.title + alert.detail


async def test_errors_logged_by_other_threads_are_handed_to_the_event_loop() -> None:
    recorder = RecordedAlerts()
    with forwarding_errors(recorder):
        await asyncio.to_thread(logging.getLogger("storyteller_daemon.storage").error, "disk full")
        await settle()
    assert [a.title for a in recorder.alerts] == ["disk full"]
    assert recorder.threads == [threading.get_ident()]


def test_the_log_sink_writes_every_alert_at_its_severity(caplog: pytest.LogCaptureFixture) -> None:
    sink = LogAlertSink()
    with caplog.at_level(logging.INFO):
        sink.alert("budget", "80% of the day's budget spent", "USD 4 of 5", severity="warning")
        sink.alert("crash_loop", "restarting", severity="critical")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.WARNING, "alert [budget]: 80% of the day's budget spent — USD 4 of 5"),
        (logging.CRITICAL, "alert [crash_loop]: restarting"),
    ]


def test_alerts_logged_by_the_log_sink_are_not_forwarded_again() -> None:
    recorder = RecordedAlerts()
    with forwarding_errors(recorder):
        LogAlertSink().alert("model_fatal", "refused", severity="error")
    assert recorder.alerts == []


# ---------------------------------------------------------------- counters


async def test_a_growing_overflow_counter_alerts_once_per_growth() -> None:
    recorder = RecordedAlerts()
    counts = {"Watch": 2}
    alerts = Alerts(clock=FakeClock(), log_sink=recorder)
    alerts.watch_counter("queue_overflow", lambda: counts, describe_queue_overflow)
    alerts.check_counters()
    assert recorder.alerts == []  # what happened before the watch started is not news
    counts["Watch"] = 5
    counts["Pier"] = 1
    alerts.check_counters()
    alerts.check_counters()
    assert [(a.key, a.title) for a in recorder.alerts] == [
        ("queue_overflow:Watch", "Watch: 3 trigger(s) dropped because its work queue was full"),
        ("queue_overflow:Pier", "Pier: 1 trigger(s) dropped because its work queue was full"),
    ]
    assert alerts.raised == {"queue_overflow": 2}


async def test_counters_are_read_on_the_clock_and_once_more_at_shutdown() -> None:
    recorder = RecordedAlerts()
    clock = FakeClock()
    counts = {"Watch": 0}
    alerts = Alerts(clock=clock, log_sink=recorder, watch_seconds=30)
    alerts.watch_counter("queue_overflow", lambda: counts, describe_queue_overflow)
    async with alerts.running(grace_seconds=0):
        await settle()  # the watch is waiting on the clock
        counts["Watch"] = 1
        await clock.advance(30)
        assert len(recorder.alerts) == 1
        counts["Watch"] = 4
    assert [a.title.split(":")[1] for a in recorder.alerts] == [
        " 1 trigger(s) dropped because its work queue was full",
        " 3 trigger(s) dropped because its work queue was full",
    ]


def test_a_plain_reporter_serves_callers_that_only_have_a_message() -> None:
    recorder = RecordedAlerts()
    report = Alerts(clock=FakeClock(), log_sink=recorder).reporter("budget")
    report("warning", "budget: all storytellers has spent $16.00 of its $20.00 daily budget (80 %)")
    report("fatal", "budget: all storytellers reached its daily budget")
    assert [(a.kind, a.severity, a.key) for a in recorder.alerts] == [
        (
            "budget",
            "warning",
            "budget:budget: all storytellers has spent $16.00 of its $20.00 daily budget (80 %)",
        ),
        ("budget", "error", "budget:budget: all storytellers reached its daily budget"),
    ]


# ---------------------------------------------------------------- crash loops


def test_three_starts_within_five_minutes_raise_one_crash_loop_alert(tmp_path: Path) -> None:
    history = StartHistory(tmp_path / "state" / "start-history.json")
    recorder = RecordedAlerts()
    assert not check_crash_loop(history, T0, recorder)
    assert not check_crash_loop(history, T0 + timedelta(minutes=6), recorder)
    assert not check_crash_loop(history, T0 + timedelta(minutes=8), recorder)
    assert check_crash_loop(history, T0 + timedelta(minutes=10), recorder)
    (alert,) = recorder.alerts
    assert alert.title == "The storyteller daemon has started 3 times in the last 5 min"
    assert alert.severity == "critical"
    assert "journalctl -u storyteller" in alert.detail
    assert len(history.read()) == 4


def test_a_damaged_or_unwritable_history_never_stops_the_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "start-history.json"
    path.write_text("{not json", encoding="utf-8")
    assert not check_crash_loop(StartHistory(path), T0, RecordedAlerts())
    assert "cannot read the start history" in caplog.text
    assert StartHistory(path).read() == [T0]

    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    unwritable = StartHistory(blocker / "start-history.json")  # its parent is a file
    assert not check_crash_loop(unwritable, T0, RecordedAlerts())
    assert "cannot write the start history" in caplog.text


def test_the_history_keeps_only_recent_starts(tmp_path: Path) -> None:
    history = StartHistory(tmp_path / "h.json")
    for minute in range(30):
        history.record(T0 + timedelta(minutes=minute))
    starts = history.read()
    assert len(starts) == 20
    assert starts[-1] == T0 + timedelta(minutes=29)
