"""The game side of the bridge for an in-process world: any `WorldClient` served over WebSocket.

`WorldServer` follows a world's event stream (the sim world's, or any `ServedWorld`) into an
`EventBuffer` (the one replay buffer) and serves any number of daemon connections (each a
`server_session.ServerSession`) per docs/bridge-protocol.md: handshake (token compared in
constant time), subscriptions with replay and gaps, every `WorldClient` query as a request
method, pings, error frames for bad frames, and the 1 MiB frame limit. It is the reference the
conformance checker is tested against, and `storyteller sim serve` runs it.

For fault tests it can cut connections on purpose: `cut_every` aborts a connection after that
many events, and `cut_all()` aborts every open one; `restart(world)` plays a game reboot.

As a game does, it can invoke a storyteller (`invoke`, an ``invoke`` frame to the newest daemon
connection): the daemon's ``invoked`` answer is returned, and its later ``invoke_outcome`` is
kept in `outcomes` (`wait_outcome` waits for one).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable
from typing import Protocol

from aiohttp import web

from world_adapter.bridge.messages import MAX_FRAME_BYTES, CloseCode
from world_adapter.bridge.server_session import ServerSession, ServerStats
from world_adapter.bridge.timing import BridgeClock, SystemBridgeClock, wait_or_timeout
from world_adapter.errors import CursorExpired
from world_adapter.event_buffer import EventBuffer
from world_adapter.events import Cursor
from world_adapter.invocations import GameInvocation, InvocationAnswer, InvocationOutcome
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

PATH = "/storyteller"


class ServedWorld(WorldClient, Protocol):
    """A world the server can serve: a `WorldClient` that also tells its newest cursor."""

    @property
    def cursor(self) -> Cursor:
        """The cursor of the newest event (``seq`` 0 before the first)."""
        ...


class WorldServer:
    """Serves `world` to bridge clients on one address.

    Args:
        world: The world to serve.
        token: The shared secret clients must present.
        cells: The rooms whose events are followed and served (they should include every room
            where events happen).
        game: The name sent in welcome.
        buffer_size: Events held for replay.
        handshake_seconds: How long a new connection may take to send hello.
        clock: Times the handshake.
        cut_every: Abort each connection after this many events (fault injection).
        cause_event: Makes one event of a kind happen, to answer ``bridge check --events``'
            ``cause_event`` requests (None: the method is unknown, as in most games).

    Raises:
        ValueError: If the token is blank or `cut_every` is below one.
    """

    def __init__(
        self,
        world: ServedWorld,
        token: str,
        *,
        cells: frozenset[int],
        game: str = "sim world",
        buffer_size: int = 10_000,
        handshake_seconds: float = 10.0,
        clock: BridgeClock | None = None,
        cut_every: int | None = None,
        cause_event: Callable[[str], None] | None = None,
    ) -> None:
        if not token.strip():
            raise ValueError("the bridge token must not be blank")
        if cut_every is not None and cut_every < 1:
            raise ValueError(f"cut_every must be at least 1, not {cut_every}")
        self.world = world
        self._token = token.encode()
        self._cells = frozenset(cells)
        self.game = game
        self._buffer_size = buffer_size
        self.buffer = EventBuffer(Cursor(world.cursor.epoch, 0), buffer_size)
        self.handshake_seconds = handshake_seconds
        self.clock = clock or SystemBridgeClock()
        self.cut_every = cut_every
        self.cause_event = cause_event
        self.stats = ServerStats()
        self._sessions: dict[ServerSession, None] = {}  # in the order they connected
        self._runner: web.AppRunner | None = None
        self._follower: asyncio.Task[None] | None = None
        self._caught_up = asyncio.Event()
        self._subscribed = asyncio.Condition()
        self.subscriptions = 0
        """Subscribe frames handled so far."""
        self.url = ""
        self._answers: dict[str, asyncio.Future[InvocationAnswer]] = {}
        self.outcomes: dict[str, InvocationOutcome] = {}
        """Request id → the outcome the daemon reported for an invocation."""
        self._outcome_arrived = asyncio.Condition()

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Follow the world, listen on `host`:`port` (0: any free port) and return the URL."""
        target = self.world.cursor
        self._follower = asyncio.create_task(self._follow(target), name="bridge-follower")
        await self._caught_up.wait()
        app = web.Application()
        app.router.add_get(PATH, self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        bound = self._runner.addresses[0]
        self.url = f"ws://{bound[0]}:{bound[1]}{PATH}"
        return self.url

    async def stop(self) -> None:
        """Close every connection (1001, going away), stop listening and following."""
        for session in list(self._sessions):
            await session.close(CloseCode.GOING_AWAY, "server stopping")
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._follower is not None:
            self._follower.cancel()
            await asyncio.gather(self._follower, return_exceptions=True)
            self._follower = None

    async def restart(self, world: ServedWorld) -> None:
        """Serve `world` (with its own epoch) instead, as a game does after a reboot.

        The listening socket stays open; every connection is closed with 1001 (going away) once
        the new world is in place, so clients reconnect to it and resume, or learn of the gap.
        """
        if self._follower is not None:
            self._follower.cancel()
            await asyncio.gather(self._follower, return_exceptions=True)
        self.world = world
        self.buffer = EventBuffer(Cursor(world.cursor.epoch, 0), self._buffer_size)
        self._caught_up = asyncio.Event()
        self._follower = asyncio.create_task(self._follow(world.cursor), name="bridge-follower")
        await self._caught_up.wait()
        for session in list(self._sessions):
            await session.close(CloseCode.GOING_AWAY, "game restarting")

    def cut_all(self) -> int:
        """Abort every open connection without a close frame; returns how many."""
        sessions = list(self._sessions)
        for session in sessions:
            session.cut()
        return len(sessions)

    async def wait_subscriptions(self, count: int) -> None:
        """Return once `count` subscribe frames have been handled in all."""
        async with self._subscribed:
            await self._subscribed.wait_for(lambda: self.subscriptions >= count)

    async def note_subscription(self) -> None:
        """Count a handled subscribe frame and wake `wait_subscriptions`."""
        async with self._subscribed:
            self.subscriptions += 1
            self._subscribed.notify_all()

    @property
    def open_connections(self) -> int:
        """Connections past the handshake and not yet closed."""
        return len(self._sessions)

    async def _follow(self, target: Cursor) -> None:
        """Copy the world's events into the buffer: what it still holds, then live ones."""
        after: Cursor | None = Cursor(self.buffer.epoch, 0)
        while True:
            try:
                if self.buffer.head.seq >= target.seq:
                    self._caught_up.set()
                async for event in self.world.subscribe(self._cells, after):
                    self.buffer.append(event)
                    if event.cursor.seq >= target.seq:
                        self._caught_up.set()
            except CursorExpired:
                # The world dropped events before we copied them: whatever was before its
                # newest event is lost, and subscribers behind that point get a gap.
                log.warning("the world's events outran the bridge buffer; continuing live")
                head = self.world.cursor
                self.buffer.restart_at(head.seq)
                after = head
                self._caught_up.set()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(max_msg_size=MAX_FRAME_BYTES, autoping=True)
        await ws.prepare(request)
        self.stats.connections += 1
        session = ServerSession(self, ws, request)
        if not await session.handshake():
            self.stats.refused += 1
            return ws
        self._sessions[session] = None
        try:
            await session.serve()
        finally:
            self._sessions.pop(session, None)
            await session.stop_stream()
        return ws

    async def invoke(
        self,
        storyteller: str | int,
        text: str,
        *,
        request_id: str,
        character_id: int | None = None,
        room_id: int | None = None,
        seconds: float = 10.0,
    ) -> InvocationAnswer:
        """Ask the connected daemon for a storyteller's turn, as a game does; its answer.

        Raises:
            ConnectionError: If no daemon is connected.
            TimeoutError: If the daemon does not answer within `seconds`.
        """
        if not self._sessions:
            raise ConnectionError("no daemon is connected to the bridge")
        session = next(reversed(self._sessions))
        answer = asyncio.get_running_loop().create_future()
        self._answers[request_id] = answer
        frame = GameInvocation(request_id, storyteller, text, character_id, room_id)
        try:
            if not await session.send(frame):
                raise ConnectionError("the daemon's connection closed")
            return await wait_or_timeout(answer, self.clock, seconds)
        finally:
            self._answers.pop(request_id, None)

    def answered(self, answer: InvocationAnswer) -> None:
        """The daemon answered an invocation (an ``invoked`` frame)."""
        waiting = self._answers.get(answer.id)
        if waiting is not None and not waiting.done():
            waiting.set_result(answer)

    async def outcome_arrived(self, outcome: InvocationOutcome) -> None:
        """The daemon reported how an invocation's turn ended."""
        async with self._outcome_arrived:
            self.outcomes[outcome.id] = outcome
            self._outcome_arrived.notify_all()

    async def wait_outcome(self, request_id: str) -> InvocationOutcome:
        """The outcome of invocation `request_id`, once the daemon has sent it."""
        async with self._outcome_arrived:
            await self._outcome_arrived.wait_for(lambda: request_id in self.outcomes)
        return self.outcomes[request_id]

    def check_token(self, token: str) -> bool:
        """Whether `token` is the secret, compared in constant time."""
        return hmac.compare_digest(token.encode(), self._token)
