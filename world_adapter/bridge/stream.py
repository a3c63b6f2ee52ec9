"""The stream supervisor: one subscription that outlives its connections.

`BridgeSubscription` is what `BridgeWorldClient.subscribe` returns. It owns the cursor — the
last event it handed out — across disposable `BridgeConnection`s. When a connection breaks it
subscribes again on a new one after that cursor, so the game replays what was missed: at once
if the broken connection had delivered events, otherwise after a jittered, growing delay.
Close codes 4001/4002 end it with `FatalStreamError` (no retry); a gap reported by the game ends
it with `StreamGap`, which says where the game's stream continues.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from world_adapter.bridge.backoff import Backoff
from world_adapter.bridge.connection import BridgeConnection, BridgeStats
from world_adapter.bridge.errors import StreamGap
from world_adapter.bridge.messages import Subscribed
from world_adapter.errors import TransientStreamError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.replay import Gap

log = logging.getLogger(__name__)

Connector = Callable[[], Awaitable[BridgeConnection]]
Sleep = Callable[[float], Awaitable[None]]


class BridgeSubscription(AsyncIterator[WorldEvent]):
    """Events in a set of cells after a cursor, across reconnects, in cursor order, forever.

    Nothing connects until iteration starts. Leaving iteration by any exception — including
    cancellation of the task that iterates — closes the subscription and its connection.

    Args:
        connect: Opens a new authenticated connection.
        cells: The rooms to report.
        after: Resume after this cursor (None: from now on).
        backoff: Delays between failed attempts.
        sleep: Waits out a delay.
        stats: Counters shared with the client.
        on_close: Called once when the subscription closes.
    """

    def __init__(
        self,
        connect: Connector,
        cells: frozenset[int],
        after: Cursor | None,
        *,
        backoff: Backoff,
        sleep: Sleep,
        stats: BridgeStats,
        on_close: Callable[[BridgeSubscription], None] | None = None,
    ) -> None:
        self._connect_once = connect
        self._cells = frozenset(cells)
        self._cursor = after
        self._backoff = backoff
        self._sleep = sleep
        self.stats = stats
        self._on_close = on_close
        self._connection: BridgeConnection | None = None
        self._delivered_here = 0
        self._closed = False
        self.reconnects = 0
        """Connections replaced after they broke."""

    @property
    def cells(self) -> frozenset[int]:
        """The rooms this subscription reports."""
        return self._cells

    @property
    def cursor(self) -> Cursor | None:
        """The last event handed out (or the starting cursor before the first)."""
        return self._cursor

    async def __anext__(self) -> WorldEvent:
        if self._closed:
            raise StopAsyncIteration
        try:
            return await self._next_event()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """End the subscription and close its connection; further iteration stops at once."""
        if self._closed:
            return
        self._closed = True
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()
        if self._on_close is not None:
            self._on_close(self)

    async def _next_event(self) -> WorldEvent:
        while True:
            connection = self._connection or await self._subscribe()
            try:
                item = await connection.next_item()
            except TransientStreamError as exc:
                await self._drop(exc)
                continue
            if isinstance(item, Subscribed):
                continue
            if isinstance(item, Gap):
                self.stats.gaps += 1
                raise StreamGap(item.reason.value, item.after, item.resume_after)
            if self._already_seen(item.cursor):
                self.stats.duplicates += 1
                continue
            self._cursor = item.cursor
            self._delivered_here += 1
            return item

    def _already_seen(self, cursor: Cursor) -> bool:
        last = self._cursor
        return last is not None and cursor.epoch == last.epoch and cursor.seq <= last.seq

    async def _subscribe(self) -> BridgeConnection:
        while True:
            try:
                connection = await self._connect_once()
            except TransientStreamError as exc:
                await self._wait(exc)
                continue
            try:
                await connection.subscribe(self._cells, self._cursor)
            except TransientStreamError as exc:
                await connection.close()
                await self._wait(exc)
                continue
            self._connection = connection
            self._delivered_here = 0
            return connection

    async def _drop(self, error: TransientStreamError) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            await connection.close()
        self.reconnects += 1
        if self._delivered_here:
            # The connection worked: resume at once, and start the backoff count afresh.
            self._backoff.reset()
            log.info("bridge stream interrupted (%s); resuming after %s", error, self._cursor)
        else:
            await self._wait(error)

    async def _wait(self, error: TransientStreamError) -> None:
        delay = self._backoff.delay()
        log.warning("bridge stream: %s; retrying in %.1f s", error, delay)
        await self._sleep(delay)
