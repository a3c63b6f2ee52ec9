"""Calm pacing decides when a pass asks the model: lively events (urgent kinds, bursts, scenes,
a full batch) at once, calm ones once the oldest waited the calm maximum; arrivals report a
burst once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.work import WorkItem, WorkState
from storyteller_daemon.runtime.pipeline.pacing import Scenes, pace

T0 = datetime(2026, 1, 1, tzinfo=UTC)
CFG = AttentionConfig(
    max_wait_seconds=12,
    calm_wait_factor=5,
    scene_events=3,
    scene_seconds=8,
    max_batch_events=10,
)


def item(n: int, at: float, room: int = 101, kind: str = "speech") -> WorkItem:
    return WorkItem(
        id=n,
        storyteller_id=1,
        source=f"bridge:e:{n}",
        kind=kind,
        turn_class="echo",
        room_id=room,
        payload="{}",
        state=WorkState.PENDING,
        received_at=T0 + timedelta(seconds=at),
    )


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_calm_events_wait_until_the_oldest_has_waited_the_calm_maximum() -> None:
    calm = [item(1, 0, room=101), item(2, 5, room=102), item(3, 9, room=103)]
    early = pace(calm, window="max_wait", now=at(12), hot=(), cfg=CFG)
    assert not early.ask and early.due == at(60)
    late = pace(calm, window="calm", now=at(60), hot=(), cfg=CFG)
    assert late.ask and late.why == "calm"


def test_lively_events_are_asked_about_at_once() -> None:
    calm = [item(1, 0, room=101), item(2, 5, room=102)]
    crime = pace([*calm, item(3, 10, kind="crime")], window="max_wait", now=at(12), hot=(), cfg=CFG)
    assert (crime.ask, crime.why) == (True, "urgent")
    listed = AttentionConfig(
        max_wait_seconds=12, calm_wait_factor=5, urgent_kinds=("crime", "speech")
    )
    assert pace(calm, window="quiet", now=at(12), hot=(), cfg=listed).why == "urgent"
    scene = pace(calm, window="max_wait", now=at(12), hot={102}, cfg=CFG)
    assert (scene.ask, scene.why) == (True, "scene")
    full = pace(
        [item(n, n, room=100 + n) for n in range(10)],
        window="max_wait",
        now=at(12),
        hot=(),
        cfg=CFG,
    )
    assert (full.ask, full.why) == (True, "full")
    for window in ("urgent", "backlog"):  # the window already says: ask what there is
        paced = pace(calm, window=window, now=at(12), hot=(), cfg=CFG)
        assert (paced.ask, paced.why, paced.due) == (True, window, None)


def test_a_burst_is_lines_in_quick_succession_in_one_room_going_on_now() -> None:
    fight = [item(1, 10, room=103), item(2, 12, room=103), item(3, 15, room=103)]
    burst = pace([item(9, 0, room=101), *fight], window="scene", now=at(16), hot=(), cfg=CFG)
    assert (burst.ask, burst.why) == (True, "burst")
    # The same lines spread over more than the span, or across rooms, are calm.
    spread = [item(1, 0, room=103), item(2, 5, room=103), item(3, 9, room=103)]
    assert not pace(spread, window="max_wait", now=at(12), hot=(), cfg=CFG).ask
    rooms = [item(1, 10, room=101), item(2, 12, room=102), item(3, 15, room=103)]
    assert not pace(rooms, window="max_wait", now=at(16), hot=(), cfg=CFG).ask
    # Calm lines that bunched up while they waited are no burst going on.
    assert not pace(fight, window="max_wait", now=at(40), hot=(), cfg=CFG).ask
    off = AttentionConfig(max_wait_seconds=12, calm_wait_factor=5, scene_events=0)
    assert not pace(fight, window="scene", now=at(16), hot=(), cfg=off).ask


def test_pacing_is_off_when_calm_events_may_wait_no_longer_than_a_window() -> None:
    assert AttentionConfig().calm_max_wait_seconds == 12  # off by default: one window
    assert AttentionConfig(calm_wait_factor=5).calm_max_wait_seconds == 60  # five of 12 s
    calm = [item(1, 0)]
    for cfg in (
        AttentionConfig(),
        AttentionConfig(max_wait_seconds=12, calm_wait_factor=1),
        AttentionConfig(max_wait_seconds=0),
        AttentionConfig(max_wait_seconds=12, one_call_per_event=True),
    ):
        paced = pace(calm, window="max_wait", now=at(12), hot=(), cfg=cfg)
        assert (paced.ask, paced.why) == (True, "max_wait")
    assert pace([], window="max_wait", now=at(12), hot=(), cfg=CFG).ask


def test_arrivals_report_a_burst_once_and_not_in_a_scene() -> None:
    scenes = Scenes()
    heard = [scenes.arrived(103, t, events=3, seconds=8) for t in (0, 2, 4, 5, 6)]
    assert heard == [False, False, True, False, False]  # counted once; then it starts over
    assert scenes.arrived(103, 7, events=3, seconds=8)  # three more: 5, 6, 7
    slow = [scenes.arrived(101, t, events=3, seconds=8) for t in (0, 5, 10, 15)]
    assert slow == [False, False, False, False]
    scenes.heat(104, until=100)
    assert [scenes.arrived(104, t, events=3, seconds=8) for t in (0, 1, 2)] == [False] * 3
    assert scenes.rooms(50) == {104}
    assert scenes.rooms(100) == frozenset()  # its time is up
    assert not scenes.arrived(None, 0, events=3, seconds=8)
    assert not scenes.arrived(105, 0, events=0, seconds=8)
