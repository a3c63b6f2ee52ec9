"""Calm pacing decides when a pass asks the model: lively events (urgent kinds, bursts, scenes,
a full batch) at once, calm ones while the storyteller's allowance has a request in hand, else
once the oldest waited the calm maximum or the allowance fills again; arrivals report a burst
once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.work import WorkItem, WorkState
from storyteller_daemon.runtime.pipeline.pacing import Allowance, Scenes, pace

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
    assert AttentionConfig().calm_max_wait_seconds == 120  # ten windows of 12 s by default
    assert AttentionConfig(calm_wait_factor=1).calm_max_wait_seconds == 12  # one: off
    calm = [item(1, 0)]
    for cfg in (
        AttentionConfig(calm_wait_factor=1),
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


def test_calm_events_are_asked_as_their_window_closes_while_the_allowance_has_a_request() -> None:
    calm = [item(1, 0, room=101), item(2, 5, room=102)]
    spare = pace(calm, window="quiet", now=at(12), hot=(), cfg=CFG, spare=True, refill_in=0)
    assert (spare.ask, spare.why) == (True, "quiet")
    # Over the allowance they wait for its next request, or the calm maximum if sooner.
    soon = pace(calm, window="quiet", now=at(12), hot=(), cfg=CFG, refill_in=20)
    assert (soon.ask, soon.due) == (False, at(32))
    late = pace(calm, window="quiet", now=at(12), hot=(), cfg=CFG, refill_in=500)
    assert (late.ask, late.due) == (False, at(60))
    # Once the calm maximum is reached they go, allowance or not.
    assert pace(calm, window="calm", now=at(60), hot=(), cfg=CFG, refill_in=500).ask


def test_an_allowance_starts_full_every_request_empties_it_by_one_and_time_refills_it() -> None:
    bucket, rate = Allowance(), 60.0  # one a minute; a full bucket holds ten minutes: 10
    assert bucket.level(0, rate) == 10 and bucket.refill_in(0, rate) == 0
    for n in range(10):
        assert bucket.spare(float(n), rate)
        bucket.spend(float(n), rate)
    assert not bucket.spare(10, rate)
    assert bucket.refill_in(10, rate) == pytest.approx(50)  # 9 s of refill in hand already
    bucket.spend(11, rate)  # a lively request with none in hand: it goes, the bucket stays at 0
    assert bucket.level(11, rate) == 0 and bucket.refill_in(11, rate) == pytest.approx(60)
    assert bucket.spare(71, rate)
    assert bucket.level(10_000, rate) == 10  # never more than ten minutes' worth
    off = Allowance()
    assert not off.spare(0, 0) and off.refill_in(0, 0) is None
    off.spend(0, 0)
    assert off.tokens is None
    assert Allowance().level(0, 3) == 1  # a slow rate still holds one request
