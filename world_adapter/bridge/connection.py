"""One WebSocket to a game: handshake, frames, pings, silence detection and request futures.

A `BridgeConnection` never retries. When anything goes wrong it records one typed error —
`TransientStreamError` (`StreamTimeout` for silence) or `FatalStreamError` for close codes 4001
and 4002 — and every later call raises it; whoever holds the connection closes it, throws it
away and opens another (`BridgeSubscription`, `BridgeWorldClient`). It owns two tasks, a reader
and a pinger, and `close()` ends both. aiohttp's exceptions stop here. The hello and welcome
exchange and the classification of close codes are in `handshake`; what the game asks of the
daemon (invocations, admin commands) is answered by `game_calls`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import aiohttp

from world_adapter.bridge.errors import RemoteError
from world_adapter.bridge.game_calls import AdminHandler, GameCalls, HandlerLookup
from world_adapter.bridge.handshake import close_quietly, closed_error, handshake
from world_adapter.bridge.messages import (
    MAX_FRAME_BYTES,
    MAX_IN_FLIGHT_REQUESTS,
    Admin,
    CloseCode,
    Error,
    ErrorCode,
    EventFrame,
    Frame,
    Ping,
    Pong,
    Request,
    Result,
    Subscribe,
    Subscribed,
    Welcome,
    frame_type,
)
from world_adapter.bridge.timing import BridgeClock, BridgeTimings, wait_or_timeout
from world_adapter.bridge.wire import (
    READ_LIMIT_BYTES,
    BadFrame,
    cut_texts,
    encode_frame,
    frame_bytes,
    parse_frame,
)
from world_adapter.errors import StreamError, StreamTimeout, TransientStreamError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.invocations import (
    GameInvocation,
)
from world_adapter.replay import Gap

log = logging.getLogger(__name__)

StreamItem = Subscribed | Gap | WorldEvent
ITEM_BUFFER = 1024
"""Stream items held for a slow consumer before the reader stops reading (back-pressure)."""
_LOGGED_BAD_FRAMES = 10
_FAILED: Final = object()


@dataclass
class BridgeStats:
    """Counters that outlive connections (one object per client)."""

    connections: int = 0
    bad_frames: int = 0
    """Frames from the game that were not valid (each answered with an error frame)."""
    peer_errors: int = 0
    """Error frames from the game about the daemon's own frames."""
    late_answers: int = 0
    """Answers to requests the daemon had given up on."""
    stale_frames: int = 0
    """Events of a replaced subscription, ignored."""
    duplicates: int = 0
    """Events at or before the subscription's cursor, dropped."""
    gaps: int = 0
    oversize_frames: int = 0
    """Frames over the protocol's size limit: events kept with their texts cut, others refused."""
    event_frames: int = 0
    """Event frames read (delivered, stale or duplicate alike)."""

    @property
    def activity(self) -> int:
        """Frames read and connections made: grows while the game is sending, whatever became of
        the frames (the daemon's intake watchdog compares it with what got stored)."""
        return self.connections + self.event_frames + self.bad_frames + self.oversize_frames


class BridgeConnection:
    """An open, authenticated connection; build it with `BridgeConnection.open`."""

    def __init__(
        self,
        ws: aiohttp.ClientWebSocketResponse,
        welcome: Welcome,
        *,
        clock: BridgeClock,
        timings: BridgeTimings,
        stats: BridgeStats,
        invocations: HandlerLookup | None = None,
        admin: AdminHandler | None = None,
    ) -> None:
        self._ws = ws
        self._calls = GameCalls(self._send, invocations, admin)
        self.welcome = welcome
        self._clock = clock
        self._timings = timings
        self.stats = stats
        self._items: asyncio.Queue[Any] = asyncio.Queue(ITEM_BUFFER)
        self._pending: dict[str, asyncio.Future[Any]] = {}
        self._in_flight = asyncio.Semaphore(MAX_IN_FLIGHT_REQUESTS)
        self._send_lock = asyncio.Lock()
        self._failure: StreamError | None = None
        self._closing = False
        self._awaiting_subscribed = False
        self._last_heard = clock.monotonic()
        self._counter = 0
        self._bad_logged = 0
        self._reader = asyncio.create_task(self._read(), name="bridge-reader")
        self._pinger = asyncio.create_task(self._keep_alive(), name="bridge-pinger")

    @classmethod
    async def open(
        cls,
        session: aiohttp.ClientSession,
        url: str,
        token: str,
        *,
        clock: BridgeClock,
        timings: BridgeTimings,
        stats: BridgeStats,
        client_name: str = "storyteller",
        invocations: HandlerLookup | None = None,
        admin: AdminHandler | None = None,
    ) -> BridgeConnection:
        """Connect to `url` and complete the handshake.

        Raises:
            FatalStreamError: If the game refuses the token or the protocol version.
            TransientStreamError: If the game cannot be reached or the handshake fails
                otherwise.
        """
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
            # that arrives as the connect fails, and a retry loop would then never stop.
            async with asyncio.timeout(timings.connect_seconds):
                # Frames up to READ_LIMIT_BYTES are read even when over the protocol's limit, so
                # one oversize event cannot close the connection and be resent forever.
                ws = await session.ws_connect(url, max_msg_size=READ_LIMIT_BYTES, autoping=True)
        except aiohttp.WSServerHandshakeError as exc:
            raise TransientStreamError(
                f"{url} did not accept a WebSocket (HTTP {exc.status})"
            ) from exc
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            detail = str(exc) or type(exc).__name__
            raise TransientStreamError(f"cannot connect to {url}: {detail}") from exc
        try:
            welcome = await handshake(ws, token, client_name, clock, timings)
        except BaseException:
            await close_quietly(ws, CloseCode.NORMAL, timings.close_seconds)
            raise
        stats.connections += 1
        return cls(
            ws,
            welcome,
            clock=clock,
            timings=timings,
            stats=stats,
            invocations=invocations,
            admin=admin,
        )

    # ------------------------------------------------------------------ use

    @property
    def failure(self) -> StreamError | None:
        """Why the connection is unusable, or None while it works."""
        return self._failure

    async def subscribe(self, cells: Iterable[int], after: Cursor | None) -> None:
        """Ask for events in `cells` after `after`; they arrive through `next_item`.

        Raises:
            TransientStreamError: If the connection is broken.
        """
        self._raise_if_failed()
        self._awaiting_subscribed = True
        await self._send(Subscribe(tuple(sorted(set(cells))), after))

    async def next_item(self) -> StreamItem:
        """The next ``subscribed``, ``gap`` or event of the subscription, in order.

        Raises:
            StreamError: Once the connection is broken (after every item received before).
        """
        if self._items.empty():
            self._raise_if_failed()
        item = await self._items.get()
        if item is _FAILED:
            self._raise_if_failed()
        assert isinstance(item, Subscribed | Gap | WorldEvent)
        return item

    async def request(self, method: str, params: dict[str, Any], seconds: float) -> Any:
        """Send a request and return the game's ``result`` value.

        Raises:
            RemoteError: If the game answered with an error frame.
            TimeoutError: If no answer came within `seconds` on the clock.
            FrameTooLarge: If the request is over the frame size limit.
            StreamError: If the connection is or becomes broken.
        """
        self._raise_if_failed()
        async with self._in_flight:
            self._counter += 1
            request_id = f"r-{self._counter}"
            answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = answer
            try:
                await self._send(Request(request_id, method, params))
                return await wait_or_timeout(answer, self._clock, seconds)
            finally:
                self._pending.pop(request_id, None)
                answer.cancel()

    async def send(self, frame: Frame) -> None:
        """Send a frame the game does not answer (an invocation's outcome).

        Raises:
            TransientStreamError: If the connection is or becomes broken.
            FrameTooLarge: If the frame is over the size limit.
        """
        self._raise_if_failed()
        await self._send(frame)

    async def report_bad_frame(self, message: str) -> None:
        """Count a frame whose content was wrong and tell the game (an error frame)."""
        await self._bad_frame(BadFrame(message))

    async def close(self, code: int = CloseCode.NORMAL, reason: str = "") -> None:
        """End the tasks and close the socket; safe to call more than once."""
        current = asyncio.current_task()
        others = [t for t in (self._reader, self._pinger) if t is not current]
        if self._closing:  # another caller is closing: wait for it to finish
            await asyncio.gather(*others, return_exceptions=True)
            return
        self._closing = True
        self._fail(TransientStreamError("the daemon closed the connection"))
        if self._pinger is not current:
            self._pinger.cancel()
        # Closing the socket first ends a pending receive cleanly; cancelling the reader while
        # it waits would make aiohttp drop the connection without sending our close code.
        await close_quietly(self._ws, code, self._timings.close_seconds, reason)
        for task in others:
            task.cancel()
        calls = self._calls.cancel()
        await asyncio.gather(*others, *calls, return_exceptions=True)

    # ------------------------------------------------------------------ internals

    def _raise_if_failed(self) -> None:
        if self._failure is not None:
            raise self._failure

    def _fail(self, error: StreamError) -> None:
        if self._failure is not None:
            return
        self._failure = error
        for answer in self._pending.values():
            if not answer.done():
                answer.set_exception(error)
        try:
            self._items.put_nowait(_FAILED)
        except asyncio.QueueFull:
            pass  # the consumer finds the failure once it has drained the queue

    async def _send(self, frame: Frame) -> None:
        text = encode_frame(frame)
        async with self._send_lock:
            try:
                await self._ws.send_str(text)
            except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
                error = TransientStreamError(f"cannot send to the game: {exc}")
                self._fail(error)
                raise error from exc

    async def _read(self) -> None:
        try:
            while True:
                message = await self._ws.receive()
                self._last_heard = self._clock.monotonic()
                if message.type is aiohttp.WSMsgType.TEXT:
                    await self._on_text(message.data)
                elif message.type is aiohttp.WSMsgType.BINARY:
                    await self._bad_frame(BadFrame("Binary frames are not allowed; send text."))
                elif message.type is aiohttp.WSMsgType.ERROR:
                    problem = self._ws.exception() or message.data
                    self._fail(TransientStreamError(f"connection failed: {problem}"))
                    return
                else:  # CLOSE, CLOSING, CLOSED
                    reason = message.extra if message.type is aiohttp.WSMsgType.CLOSE else ""
                    self._fail(closed_error(self._ws.close_code, reason or ""))
                    return
        except StreamError as exc:
            self._fail(exc)
        except (aiohttp.ClientError, OSError) as exc:
            self._fail(TransientStreamError(f"connection failed: {exc}"))
        except Exception as exc:  # a bug here must still end the connection visibly
            log.exception("the bridge reader failed")
            self._fail(TransientStreamError(f"the bridge reader failed: {type(exc).__name__}"))

    async def _on_text(self, text: str) -> None:
        try:
            frame = parse_frame(text)
        except BadFrame as exc:
            await self._bad_frame(exc)
            return
        if len(text) > MAX_FRAME_BYTES // 4 and frame_bytes(text) > MAX_FRAME_BYTES:
            self.stats.oversize_frames += 1
            if not isinstance(frame, EventFrame):
                await self._bad_frame(BadFrame(f"Frame is over {MAX_FRAME_BYTES} bytes."))
                return
            log.warning(
                "event %s from the game is over %d bytes; kept with its texts cut",
                frame.event.cursor,
                MAX_FRAME_BYTES,
            )
            frame = EventFrame(cut_texts(frame.event))
        if isinstance(frame, EventFrame | Gap):
            self.stats.event_frames += isinstance(frame, EventFrame)
            if self._awaiting_subscribed:
                self.stats.stale_frames += 1  # from the subscription this one replaced
                return
            await self._items.put(frame.event if isinstance(frame, EventFrame) else frame)
        elif isinstance(frame, Subscribed):
            self._awaiting_subscribed = False
            await self._items.put(frame)
        elif isinstance(frame, Ping):
            await self._send(Pong(frame.nonce))
        elif isinstance(frame, Result | Error) and frame.id is not None:
            self._answer(frame)
        elif isinstance(frame, Error):
            self.stats.peer_errors += 1
            log.warning("the game reports a problem with the daemon's frames: %s", frame.message)
        elif isinstance(frame, GameInvocation):
            await self._calls.invoke(frame)
        elif isinstance(frame, Request):
            await self._bad_frame(BadFrame("The daemon answers no requests.", frame.id))
        elif isinstance(frame, Admin):
            await self._calls.admin(frame)
        elif not isinstance(frame, Pong):  # a pong needs nothing: hearing it was the point
            await self._bad_frame(BadFrame(f"A {frame_type(frame)} frame is not expected now."))

    def _answer(self, frame: Result | Error) -> None:
        assert frame.id is not None
        answer = self._pending.get(frame.id)
        if answer is None or answer.done():
            self.stats.late_answers += 1
        elif isinstance(frame, Result):
            answer.set_result(frame.result)
        else:
            answer.set_exception(RemoteError(frame.code.value, frame.message))

    async def _bad_frame(self, problem: BadFrame) -> None:
        self.stats.bad_frames += 1
        if self._bad_logged < _LOGGED_BAD_FRAMES:
            self._bad_logged += 1
            log.warning("bad frame from the game (answered with an error): %s", problem)
        await self._send(Error(ErrorCode.BAD_FRAME, str(problem), problem.request_id))

    async def _keep_alive(self) -> None:
        pings = 0
        while True:
            await self._clock.sleep(self._timings.ping_seconds)
            silent = self._clock.monotonic() - self._last_heard
            if silent >= self._timings.silence_seconds:
                self._fail(StreamTimeout(f"nothing from the game for {silent:g} seconds"))
                await self.close(CloseCode.SILENT, "silent")
                return
            pings += 1
            try:
                await self._send(Ping(f"p-{pings}"))
            except TransientStreamError:
                return  # recorded by _send; the holder sees it on its next call
