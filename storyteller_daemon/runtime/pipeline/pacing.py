"""Calm pacing: when an attention pass asks the model, and when calm events wait for the next.

A busy world sends a storyteller new lines all the time, nearly all of them nothing to it. A
window that closes every ``max_wait_seconds`` then costs one request per ``max_wait_seconds``
however little it holds, so on a busy stream the request rate is set by the window, not by
what happens. A pass therefore asks at once only when what the model must judge (after rules,
repeats and the verdict memory) is lively:

* an urgent kind (``urgent_kinds``, crimes), a full batch, or a window that had to look at the
  backlog at once (a resume, a failed request, the last batch full);
* an event in a *scene*: a room where the storyteller attended to something within
  ``scene_hold_seconds`` (its new events close the window within ``scene_wait_seconds``), or
  where ``scene_events`` new events came within ``scene_seconds`` (a fight, an argument: lines
  in quick succession in one room);
* or the storyteller is under its allowance (`Allowance`): fewer attention requests lately
  than ``calm_requests_per_hour`` allows, so a quiet world's lines are judged as their window
  closes;
* or the oldest has waited ``calm_wait_factor`` × ``max_wait_seconds`` (two minutes by
  default).

Otherwise the events stay pending and ride with the next request (at the latest when the
allowance has a request in hand again): one request then judges minutes of calm lines instead
of one request each window. ``calm_wait_factor = 1`` turns pacing off (every window asks).
Arrivals tell the lane about scenes too (`Scenes.arrived`), so a burst is looked at when it
forms, not when the window closes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.work import WorkItem

ALWAYS_LIVELY = frozenset({"crime"})
"""Kinds asked about at once whatever ``urgent_kinds`` lists."""
ASKS_AT_ONCE = frozenset({"urgent", "backlog"})
"""Window closings (`attention.WINDOW_*`) after which a pass asks whatever it holds."""


@dataclass
class Scenes:
    """A lane's scenes: rooms recently attended to, and each room's recent arrivals.

    Times are the daemon clock's monotonic seconds.
    """

    hot: dict[int, float] = field(default_factory=dict)
    """Room → until when it counts as a scene."""
    recent: dict[int, deque[float]] = field(default_factory=dict)
    """Room → arrival times of its latest events (at most ``scene_events`` kept)."""

    def heat(self, room: int, until: float) -> None:
        """The room is a scene until `until`."""
        self.hot[room] = max(until, self.hot.get(room, until))

    def is_hot(self, room: int | None, now: float) -> bool:
        """Whether `room` is a scene at `now`."""
        if room is None:
            return False
        until = self.hot.get(room)
        if until is None:
            return False
        if until <= now:
            del self.hot[room]
            return False
        return True

    def rooms(self, now: float) -> frozenset[int]:
        """The rooms that are scenes at `now`."""
        return frozenset(room for room in list(self.hot) if self.is_hot(room, now))

    def arrived(self, room: int | None, now: float, *, events: int, seconds: float) -> bool:
        """Note an event of `room` arriving at `now`; True when it makes a new burst (`events`
        arrivals within `seconds` in a room that is no scene yet). A burst counts once: the
        room's arrivals start over."""
        if room is None or events <= 0 or self.is_hot(room, now):
            return False
        times = self.recent.setdefault(room, deque(maxlen=events))
        times.append(now)
        if len(self.recent) > 256:  # forget rooms that went quiet
            for stale in [r for r, t in self.recent.items() if now - t[-1] > seconds]:
                del self.recent[stale]
        if len(times) >= events and now - times[0] <= seconds:
            times.clear()
            return True
        return False


ALLOWANCE_MINUTES = 10.0
"""A storyteller's allowance holds this many minutes of ``calm_requests_per_hour``: what a
quiet storyteller has in hand."""


@dataclass
class Allowance:
    """A storyteller's allowance of attention requests: a token bucket that
    ``calm_requests_per_hour`` fills, up to `ALLOWANCE_MINUTES` of it, and every request
    empties by one (a lively request goes whether or not one is in hand). Calm events wait only
    while it is empty. Times are the daemon clock's monotonic seconds; it starts full.
    """

    tokens: float | None = None
    """Requests in hand at `at` (None: full, none asked yet)."""
    at: float = 0.0

    @staticmethod
    def size(rate: float) -> float:
        """Requests a full allowance holds at `rate` per hour (at least one)."""
        return max(1.0, rate * ALLOWANCE_MINUTES / 60.0)

    def level(self, now: float, rate: float) -> float:
        """Requests in hand at `now` (0 when `rate` is 0: no allowance)."""
        if rate <= 0:
            return 0.0
        if self.tokens is None:
            return self.size(rate)
        return min(self.size(rate), self.tokens + (now - self.at) * rate / 3600.0)

    def spare(self, now: float, rate: float) -> bool:
        """Whether a request is in hand at `now`."""
        return self.level(now, rate) >= 1.0 - 1e-9

    def refill_in(self, now: float, rate: float) -> float | None:
        """Seconds until a request is in hand (0: now; None: never, `rate` is 0)."""
        if rate <= 0:
            return None
        if self.spare(now, rate):
            return 0.0
        return (1.0 - self.level(now, rate)) * 3600.0 / rate

    def spend(self, now: float, rate: float) -> None:
        """A request was asked at `now`."""
        if rate > 0:
            self.tokens, self.at = max(0.0, self.level(now, rate) - 1.0), now


@dataclass(frozen=True)
class Pace:
    """A pass's decision about the events the model would judge.

    Attributes:
        ask: ask now (else they wait).
        why: why it asks: the window's closing (`attention.WINDOW_*`) when pacing had no
            say or the allowance had a request in hand, else ``full``, ``urgent``,
            ``burst``, ``scene`` or ``calm`` (the oldest waited `calm_max_wait_seconds`, or
            waited for the allowance).
        due: when not asking, when the oldest must be asked at the latest.
    """

    ask: bool
    why: str
    due: datetime | None = None


def paces(cfg: AttentionConfig) -> bool:
    """Whether calm events may wait longer than a window (`calm_wait_factor` above 1)."""
    return cfg.calm_max_wait_seconds > cfg.max_wait_seconds and not cfg.one_call_per_event


def pace(
    asked: Sequence[WorkItem],
    *,
    window: str,
    now: datetime,
    hot: Collection[int],
    cfg: AttentionConfig,
    spare: bool = False,
    refill_in: float | None = None,
) -> Pace:
    """Whether a pass asks the model about `asked` now, and why (see the module docstring).

    Args:
        asked: the pending events the model would judge (rules and memory left them).
        window: why the pass's window closed (`attention.WINDOW_*`).
        now: the daemon clock's time.
        hot: the rooms that are scenes now.
        cfg: the pacing settings.
        spare: the storyteller's allowance has a request in hand (`Allowance.spare`).
        refill_in: seconds until it has one (`Allowance.refill_in`; None: never).
    """
    if not asked or window in ASKS_AT_ONCE or not paces(cfg):
        return Pace(True, window)
    if len(asked) >= cfg.max_batch_events:
        return Pace(True, "full")
    if any(i.kind in ALWAYS_LIVELY or i.kind in cfg.urgent_kinds for i in asked):
        return Pace(True, "urgent")
    if _bursts(asked, cfg.scene_events, cfg.scene_seconds, now):
        return Pace(True, "burst")
    if any(i.room_id is not None and i.room_id in hot for i in asked):
        return Pace(True, "scene")
    due = min(i.received_at for i in asked) + timedelta(seconds=cfg.calm_max_wait_seconds)
    if now >= due:
        return Pace(True, "calm")
    if spare:
        return Pace(True, window)
    if refill_in is not None:
        due = min(due, now + timedelta(seconds=refill_in))
    return Pace(False, "calm", due=due)


def _bursts(
    asked: Sequence[WorkItem], events: int, seconds: float, now: datetime
) -> frozenset[int]:
    """Rooms with `events` of `asked` arriving within `seconds`, the last of them within
    `seconds` of `now`: a burst going on, not calm lines that happened to bunch up while
    they waited (none when `events` is 0)."""
    if events <= 0:
        return frozenset()
    by_room: dict[int, list[datetime]] = {}
    for item in asked:
        if item.room_id is not None:
            by_room.setdefault(item.room_id, []).append(item.received_at)
    span = timedelta(seconds=seconds)
    found = set()
    for room, times in by_room.items():
        times.sort()
        if any(
            times[i + events - 1] - times[i] <= span and now - times[i + events - 1] <= span
            for i in range(len(times) - events + 1)
        ):
            found.add(room)
    return frozenset(found)
