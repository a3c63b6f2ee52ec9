"""One daemon connection to a world server, from hello to close.

`ServerSession` runs the handshake (hello within the host's time, token, protocol version),
answers pings, request frames (every `WorldClient` query, by its method spec) and bad frames,
and streams a subscription's events from the host's `EventBuffer`, with a gap when the
subscriber's cursor or a slow socket falls behind it. It can be cut without a close frame, as
the server's fault injection does. What it needs of the server that accepted it is `SessionHost`
(`world_server.WorldServer` is one); it logs under the server's logger.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from world_adapter.bridge.messages import (
    CAUSABLE_KINDS,
    CAUSE_EVENT,
    PROTOCOL_VERSION,
    CloseCode,
    Error,
    ErrorCode,
    EventFrame,
    Frame,
    Hello,
    Ping,
    Pong,
    Request,
    Result,
    Subscribe,
    Subscribed,
    Welcome,
    frame_type,
)
from world_adapter.bridge.methods import method
from world_adapter.bridge.timing import BridgeClock, wait_or_timeout
from world_adapter.bridge.wire import (
    BadFrame,
    FrameTooLarge,
    encode_frame,
    parse_frame,
    short_message,
)
from world_adapter.codec import CodecError, encode
from world_adapter.errors import WorldCommandError
from world_adapter.event_buffer import EventBuffer
from world_adapter.invocations import GameInvocation, InvocationAnswer, InvocationOutcome
from world_adapter.protocol import WorldClient

log = logging.getLogger("world_adapter.bridge.world_server")

_CHUNK = 256  # events copied from the buffer per step, so appends never wait on a slow socket


@dataclass
class ServerStats:
    """What the server has seen, for tests and logs."""

    connections: int = 0
    refused: int = 0
    """Connections closed during the handshake (bad token, version, or no hello)."""
    bad_frames: int = 0
    requests: int = 0
    events_sent: int = 0
    cuts: int = 0


class SessionHost(Protocol):
    """What a session needs of the server that accepted its connection."""

    @property
    def world(self) -> WorldClient:
        """The world whose queries requests are answered from."""
        ...

    @property
    def buffer(self) -> EventBuffer:
        """The world's events, held for subscriptions."""
        ...

    @property
    def game(self) -> str:
        """The name sent in welcome."""
        ...

    @property
    def handshake_seconds(self) -> float:
        """How long a new connection may take to send hello."""
        ...

    @property
    def clock(self) -> BridgeClock:
        """Times the handshake."""
        ...

    @property
    def cut_every(self) -> int | None:
        """Abort each connection after this many events (fault injection)."""
        ...

    @property
    def cause_event(self) -> Callable[[str], None] | None:
        """Makes one event of a kind happen (``cause_event`` requests), if the game can."""
        ...

    @property
    def stats(self) -> ServerStats:
        """Counts the session adds to."""
        ...

    def check_token(self, token: str) -> bool:
        """Whether `token` is the secret."""
        ...

    def answered(self, answer: InvocationAnswer) -> None:
        """The daemon answered an invocation."""
        ...

    async def outcome_arrived(self, outcome: InvocationOutcome) -> None:
        """The daemon reported how an invocation's turn ended."""
        ...

    async def note_subscription(self) -> None:
        """Count a handled subscribe frame."""
        ...


class ServerSession:
    """One client connection to `server`."""

    def __init__(self, server: SessionHost, ws: web.WebSocketResponse, request: web.Request):
        self._server = server
        self._ws = ws
        self._request = request
        self._send_lock = asyncio.Lock()
        self._stream: asyncio.Task[None] | None = None
        self._events_sent = 0

    async def handshake(self) -> bool:
        """Wait for a valid hello and answer welcome; False (connection closed) otherwise."""
        receive = asyncio.ensure_future(self._ws.receive())
        try:
            message = await wait_or_timeout(
                receive, self._server.clock, self._server.handshake_seconds
            )
        except TimeoutError:
            # Closing ends the pending receive cleanly (cancelling it first would make aiohttp
            # drop the connection without our close code).
            await self.close(CloseCode.HANDSHAKE, "no hello in time")
            return False
        finally:
            receive.cancel()
            await asyncio.gather(receive, return_exceptions=True)
        if message.type is not WSMsgType.TEXT:
            await self.close(CloseCode.HANDSHAKE, "the first frame must be a text hello")
            return False
        try:
            hello = parse_frame(message.data)
        except BadFrame:
            hello = None
        if not isinstance(hello, Hello):
            await self.close(CloseCode.HANDSHAKE, "the first frame must be hello")
            return False
        if not self._server.check_token(hello.token):
            await self.close(CloseCode.AUTH_FAILED, "authentication failed")
            return False
        if hello.protocol != PROTOCOL_VERSION:
            await self.close(
                CloseCode.UNSUPPORTED_VERSION,
                f"unsupported protocol version {hello.protocol}; supported: {PROTOCOL_VERSION}",
            )
            return False
        await self.send(Welcome(PROTOCOL_VERSION, self._server.buffer.head, self._server.game))
        return True

    async def serve(self) -> None:
        """Handle the client's frames until the connection ends."""
        async for message in self._ws:
            if message.type is WSMsgType.TEXT:
                await self._on_text(message.data)
            elif message.type is WSMsgType.BINARY:
                await self._bad_frame(BadFrame("Binary frames are not allowed; send text."))
            # an ERROR message (e.g. an oversize frame) ends iteration; aiohttp sent the close

    async def send(self, frame: Frame) -> bool:
        """Send a frame; False when the connection is gone."""
        text = encode_frame(frame)
        async with self._send_lock:
            if self._ws.closed:
                return False
            try:
                await self._ws.send_str(text)
            except ConnectionError:
                return False
        return True

    async def close(self, code: int, reason: str) -> None:
        """Stop the event stream and close the connection with `code`."""
        await self.stop_stream()
        await self._ws.close(code=code, message=reason.encode())

    def cut(self) -> None:
        """Abort the connection without a close frame (fault injection)."""
        self._server.stats.cuts += 1
        transport = self._request.transport
        if transport is not None:
            transport.abort()

    async def stop_stream(self) -> None:
        """Stop sending the current subscription's events, if any."""
        stream, self._stream = self._stream, None
        if stream is not None and stream is not asyncio.current_task():
            stream.cancel()
            await asyncio.gather(stream, return_exceptions=True)

    async def _on_text(self, text: str) -> None:
        try:
            frame = parse_frame(text)
        except BadFrame as exc:
            await self._bad_frame(exc)
            return
        if isinstance(frame, Ping):
            await self.send(Pong(frame.nonce))
        elif isinstance(frame, Subscribe):
            await self._subscribe(frame)
        elif isinstance(frame, Request):
            await self._answer(frame)
        elif isinstance(frame, InvocationAnswer):
            self._server.answered(frame)
        elif isinstance(frame, InvocationOutcome):
            await self._server.outcome_arrived(frame)
        elif isinstance(frame, Error):
            log.warning("a bridge client reports a problem with our frames: %s", frame.message)
        elif not isinstance(frame, Pong):
            await self._bad_frame(BadFrame(f"A {frame_type(frame)} frame is not expected now."))

    async def _bad_frame(self, problem: BadFrame) -> None:
        self._server.stats.bad_frames += 1
        await self.send(Error(ErrorCode.BAD_FRAME, str(problem), problem.request_id))

    async def _subscribe(self, frame: Subscribe) -> None:
        # The old subscription stops before `subscribed`, so no event of it follows that frame.
        await self.stop_stream()
        buffer = self._server.buffer
        position, gap = buffer.start(frame.after)
        await self.send(Subscribed(frame.cells, buffer.head))
        if gap is not None:
            await self.send(gap)
        self._stream = asyncio.create_task(
            self._stream_events(frozenset(frame.cells), position), name="bridge-stream"
        )
        await self._server.note_subscription()

    async def _stream_events(self, cells: frozenset[int], position: int) -> None:
        buffer = self._server.buffer
        while True:
            lost = buffer.behind(position)
            if lost is not None:  # fell behind the buffer while sending
                await self.send(lost)
                position = lost.resume_after.seq
                continue
            events = buffer.held_after(position, _CHUNK)
            for seq, event in events:
                position = seq
                if event.cell_id in cells:
                    if not await self.send(EventFrame(event)):
                        return
                    self._events_sent += 1
                    self._server.stats.events_sent += 1
                    cut_every = self._server.cut_every
                    if cut_every is not None and self._events_sent % cut_every == 0:
                        self.cut()
                        return
            if not events:
                await buffer.wait_beyond(position)

    async def _cause(self, request: Request, cause: Callable[[str], None]) -> None:
        """The ``bridge check --events`` hook: one event of the asked kind, or an invocation."""
        kind = request.params.get("kind")
        if kind not in CAUSABLE_KINDS:
            known = ", ".join(CAUSABLE_KINDS)
            message = short_message(f"kind must be one of {known}, not {kind!r}.")
            await self.send(Error(ErrorCode.BAD_PARAMS, message, request.id))
            return
        try:
            if kind != "invoke":
                cause(kind)
        except WorldCommandError as exc:
            await self.send(Error(ErrorCode.COMMAND_FAILED, short_message(str(exc)), request.id))
            return
        await self.send(Result(request.id, None))
        if kind == "invoke":
            invocation = GameInvocation(
                f"check-{request.id}", "Conformance", "A conformance check asks for a turn."
            )
            await self.send(invocation)

    async def _answer(self, request: Request) -> None:
        self._server.stats.requests += 1
        if request.method == CAUSE_EVENT and self._server.cause_event is not None:
            await self._cause(request, self._server.cause_event)
            return
        spec = method(request.method)
        if spec is None:
            unknown = short_message(f"Unknown method '{request.method}'.")
            await self.send(Error(ErrorCode.UNKNOWN_METHOD, unknown, request.id))
            return
        try:
            arguments = spec.decode_params(request.params)
        except CodecError as exc:
            await self.send(Error(ErrorCode.BAD_PARAMS, short_message(str(exc)), request.id))
            return
        answer: Frame
        try:
            value: Any = await getattr(self._server.world, spec.name)(**arguments)
            answer = Result(request.id, encode(value, spec.result))
            encode_frame(answer)
        except WorldCommandError as exc:
            answer = Error(ErrorCode.COMMAND_FAILED, short_message(str(exc)), request.id)
        except FrameTooLarge:
            too_big = "The answer is over the frame size limit."
            answer = Error(ErrorCode.INTERNAL, too_big, request.id)
        except Exception:  # a bug in the world must not end the connection
            log.exception("the world failed while answering %s", request.method)
            answer = Error(ErrorCode.INTERNAL, "The world failed while answering.", request.id)
        await self.send(answer)
