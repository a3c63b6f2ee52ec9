"""Conformance checks of the event stream: subscriptions, resuming without loss, gaps.

A subscription is confirmed with its rooms and the head; ``after: null`` sends nothing at or
before the head; two subscriptions from one cursor see the same events, in order and from the
subscribed rooms only, and resuming from the middle gives exactly the rest; a cursor of a
foreign epoch gets an ``epoch`` gap resuming in the game's own epoch.
"""

from __future__ import annotations

import secrets

from world_adapter.bridge.checks.context import CheckContext, CheckSkipped
from world_adapter.bridge.probe import CheckFailed
from world_adapter.events import Cursor, WorldEvent
from world_adapter.replay import Gap, GapReason

RESUME_SAMPLE = 20


class ReplayChecks(CheckContext):
    """The checks of subscriptions, replay and gaps."""

    async def subscribe(self) -> str:
        cells = await self._cells_or_skip()
        probe = await self._session_probe()
        try:
            subscribed = await probe.subscribe(cells, None)
        finally:
            await probe.ws.close()
        if sorted(subscribed.cells) != cells:
            raise CheckFailed("subscribed does not repeat the subscription's cells")
        return f"{len(cells)} rooms, head {subscribed.head}"

    async def from_now(self) -> str:
        """``after: null`` means from now on: nothing at or before the head is sent."""
        cells = await self._cells_or_skip()
        probe = await self._session_probe()
        seen = 0
        try:
            subscribed = await probe.subscribe(cells, None)
            head = subscribed.head
            while seen < RESUME_SAMPLE:
                item = await probe.next_stream_frame(self._idle)
                if item is None:
                    break
                if isinstance(item, Gap):
                    raise CheckFailed(
                        f"a subscription from now on began with a gap ({item.reason})"
                    )
                if item.cursor.epoch == head.epoch and item.cursor.seq <= head.seq:
                    raise CheckFailed(
                        f"after null sent {item.cursor}, at or before the head {head}"
                    )
                seen += 1
        finally:
            await probe.ws.close()
        return f"no event at or before the head; {seen} new event(s) while listening"

    async def _read_events(
        self, cells: list[int], after: Cursor, count: int, *, gap_ok: bool
    ) -> tuple[list[WorldEvent], Cursor]:
        """Up to `count` events after `after` (fewer if the game goes quiet), and the start."""
        probe = await self._session_probe()
        events: list[WorldEvent] = []
        start = after
        try:
            await probe.subscribe(cells, after)
            while len(events) < count:
                item = await probe.next_stream_frame(self._idle)
                if item is None:
                    break
                if isinstance(item, Gap):
                    if not gap_ok or events:
                        raise CheckFailed(f"unexpected gap ({item.reason}) after {item.after}")
                    start = item.resume_after
                    continue
                events.append(item)
        finally:
            await probe.ws.close()
        return events, start

    async def resume(self) -> str:
        cells = await self._cells_or_skip()
        assert self._welcome is not None
        head = self._welcome.head
        first_after = Cursor(head.epoch, max(0, head.seq - 5 * RESUME_SAMPLE))
        reference, start = await self._read_events(cells, first_after, RESUME_SAMPLE, gap_ok=True)
        if len(reference) < 2:
            raise CheckSkipped("fewer than 2 events in the buffer; make something happen first")
        seqs = [e.cursor.seq for e in reference]
        if seqs != sorted(set(seqs)) or any(e.cell_id not in cells for e in reference):
            raise CheckFailed(f"events out of order, repeated or from other rooms: {seqs}")
        again, _ = await self._read_events(cells, start, len(reference), gap_ok=False)
        if [e.cursor for e in again] != [e.cursor for e in reference]:
            raise CheckFailed("two subscriptions from the same cursor saw different events")
        middle = len(reference) // 2
        rest, _ = await self._read_events(
            cells, reference[middle - 1].cursor, len(reference) - middle, gap_ok=False
        )
        if rest != reference[middle:]:
            raise CheckFailed(
                f"resuming after {reference[middle - 1].cursor} did not give exactly the rest"
            )
        return f"{len(reference)} events replayed twice and resumed from the middle, none lost"

    async def foreign_epoch(self) -> str:
        cells = await self._cells_or_skip()
        probe = await self._session_probe()
        foreign = Cursor("conformance-" + secrets.token_hex(6), 1)
        try:
            await probe.subscribe(cells, foreign)
            gap = await probe.expect(Gap, "a gap")
        finally:
            await probe.ws.close()
        assert self._welcome is not None
        if gap.reason is not GapReason.EPOCH or gap.after != foreign:
            raise CheckFailed(f"gap reason {gap.reason} after {gap.after}; expected epoch")
        if gap.resume_after.epoch != self._welcome.head.epoch:
            raise CheckFailed(f"the gap resumes in epoch {gap.resume_after.epoch!r}")
        return f"gap (epoch), resuming after {gap.resume_after}"
