"""The intake watchdog's rule: activity without progress for a while is a stall, said once.

The daemon wiring (health, alert, recovery) is tested in test_daemon.py."""

from __future__ import annotations

from storyteller_daemon.runtime.daemon.intake_watch import Change, IntakeWatch
from world_adapter.events import Cursor

STALL = 120.0


def test_activity_without_progress_is_a_stall_once_and_progress_ends_it() -> None:
    activity = [0]
    watch = IntakeWatch(lambda: activity[0], STALL)
    assert watch.look(0.0) is Change.NONE  # not started
    watch.progress(Cursor("e", 1), 0.0)
    activity[0] = 5
    assert watch.look(STALL - 1) is Change.NONE  # not long enough
    assert watch.look(STALL) is Change.STALLED
    assert watch.stalled is not None and watch.stalled.activity == 5
    assert watch.stalled.cursor == Cursor("e", 1)
    assert watch.look(STALL * 3) is Change.NONE  # said once
    assert watch.progress(Cursor("e", 1), STALL * 3) is Change.NONE  # the same cursor: no
    assert watch.progress(Cursor("e", 2), STALL * 3) is Change.RESUMED
    assert watch.stalled is None


def test_a_quiet_world_never_stalls() -> None:
    watch = IntakeWatch(lambda: 7, STALL)
    watch.progress(None, 0.0)
    assert watch.look(STALL * 100) is Change.NONE


def test_busy_intake_that_moves_is_no_stall() -> None:
    activity = [0]
    watch = IntakeWatch(lambda: activity[0], STALL)
    for second in range(0, 1000, 10):
        activity[0] += 3
        watch.progress(Cursor("e", second), float(second))
        assert watch.look(float(second) + 5) is Change.NONE
