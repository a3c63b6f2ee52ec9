"""Pacing at the policy point: each storyteller's own limits on how often it acts on the game.

A storyteller's `domain.direction.Pacing` is data; this module keeps the counts its rules read
and checks a prog call against them, each refusal naming its rule:

* ``quiet_hours``: no actions between the quiet hours' start and end (UTC);
* ``room_gap``: at least ``room_gap_seconds`` between two of its actions in one room;
* ``daily_allowance``: at most ``daily_actions`` actions in any 24 hours;
* ``intensity``: intensity rises by ``intensity_per_action`` with each action and by
  ``intensity_per_event`` with each event of its turns, and halves every
  ``intensity_half_life_minutes``; once it reaches ``intensity_peak`` the storyteller is in its
  *relax* phase and may not act until intensity has fallen to ``intensity_relax`` (Left 4 Dead's
  build-up, peak and relax).

The actions counted are the prog calls that ran (restored from the policy's journal after a
restart); events are counted as turns start, and only in memory. `report` gives the state for
the run record.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.direction import Pacing

QUIET_HOURS = "quiet_hours"
ROOM_GAP = "room_gap"
DAILY_ALLOWANCE = "daily_allowance"
INTENSITY = "intensity"
DAY_SECONDS = 86_400.0


@dataclass
class _Tally:
    """One storyteller's counts."""

    actions: deque[float] = field(default_factory=deque)
    rooms: dict[int, float] = field(default_factory=dict)
    pulses: list[tuple[float, int, int]] = field(default_factory=list)
    """(when, actions, events): what raised intensity, weighed by the pacing when read."""
    relaxing: bool = False


class PacingState:
    """The counts pacing reads, on the policy's monotonic clock."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._tallies: dict[int, _Tally] = {}

    def _tally(self, storyteller_id: int) -> _Tally:
        return self._tallies.setdefault(storyteller_id, _Tally())

    def acted(self, storyteller_id: int, rooms: Iterable[int], at: float) -> None:
        """Count an action that ran at `at` (monotonic seconds) in `rooms`."""
        tally = self._tally(storyteller_id)
        tally.actions.append(at)
        for room in rooms:
            tally.rooms[room] = max(at, tally.rooms.get(room, at))
        tally.pulses.append((at, 1, 0))

    def events(self, storyteller_id: int, count: int) -> None:
        """Count the events of a turn that starts now."""
        if count:
            self._tally(storyteller_id).pulses.append((self._clock.monotonic(), 0, count))

    def intensity(self, storyteller_id: int, pacing: Pacing) -> float:
        """Intensity now: every action and event, halved for each half-life since."""
        now = self._clock.monotonic()
        half_life = pacing.intensity_half_life_minutes * 60.0
        tally = self._tally(storyteller_id)
        # A day's worth is kept whatever the half-life, so a changed setting reads them all.
        tally.pulses = [p for p in tally.pulses if now - p[0] < DAY_SECONDS]
        return float(
            sum(
                (a * pacing.intensity_per_action + e * pacing.intensity_per_event)
                * 0.5 ** ((now - t) / half_life)
                for t, a, e in tally.pulses
            )
        )

    def check(
        self, storyteller_id: int, pacing: Pacing, rooms: Iterable[int], wall: datetime
    ) -> tuple[str, str] | None:
        """The (rule, reason) refusing an action now, or None when pacing allows it."""
        if pacing.quiet_at(wall):
            return QUIET_HOURS, f"it is within the quiet hours {pacing.quiet_hours} UTC"
        now = self._clock.monotonic()
        tally = self._tally(storyteller_id)
        if pacing.room_gap_seconds:
            for room in sorted(rooms):
                last = tally.rooms.get(room)
                if last is not None and now - last < pacing.room_gap_seconds:
                    return ROOM_GAP, (
                        f"it acted in room #{room} {now - last:.0f} s ago; at least "
                        f"{pacing.room_gap_seconds} s between actions in one room"
                    )
        if pacing.daily_actions:
            while tally.actions and now - tally.actions[0] >= DAY_SECONDS:
                tally.actions.popleft()
            if len(tally.actions) >= pacing.daily_actions:
                return DAILY_ALLOWANCE, (
                    f"it has used its allowance of {pacing.daily_actions} actions a day"
                )
        if pacing.intensity_peak:
            level = self.intensity(storyteller_id, pacing)
            if tally.relaxing and level <= pacing.intensity_relax:
                tally.relaxing = False
            elif not tally.relaxing and level >= pacing.intensity_peak:
                tally.relaxing = True
            if tally.relaxing:
                return INTENSITY, (
                    f"intensity {level:.2f} passed its peak {pacing.intensity_peak:g}; it relaxes "
                    f"until intensity falls to {pacing.intensity_relax:g}"
                )
        return None

    def report(self, storyteller_id: int, pacing: Pacing, wall: datetime) -> dict[str, Any]:
        """The pacing state now, for the run record."""
        tally = self._tally(storyteller_id)
        now = self._clock.monotonic()
        level = self.intensity(storyteller_id, pacing)
        if tally.relaxing:
            phase = "relax"
        elif pacing.intensity_peak and level >= pacing.intensity_peak:
            phase = "peak"
        else:
            phase = "build-up"
        return {
            "intensity": round(level, 3),
            "phase": phase,
            "actions_last_day": sum(1 for t in tally.actions if now - t < DAY_SECONDS),
            "daily_actions": pacing.daily_actions,
            "quiet": pacing.quiet_at(wall),
        }
