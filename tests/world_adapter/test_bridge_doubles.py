"""Doubles shared by the bridge tests (this module holds no tests of its own).

- `served`: the sim world behind a real `WorldServer` on 127.0.0.1, stopped afterwards.
- `ScriptedGame`: a bare WebSocket server whose frames the test writes by hand, for what a
  well-behaved server never does (silence, bad frames, odd close codes).
- `RecordingSleep`: an injected backoff sleep that records the delays and only yields.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from aiohttp import WSMessage, WSMsgType, web

from world_adapter.bridge.messages import Frame, Hello, Welcome
from world_adapter.bridge.wire import encode_frame, parse_frame
from world_adapter.bridge.world_server import ServedWorld, WorldServer
from world_adapter.events import Cursor
from world_adapter.sim import SimWorld

TOKEN = "correct-horse-battery-staple"
AT = datetime(2026, 11, 22, 18, 0, tzinfo=UTC)
STEP = 5.0  # seconds any single wait in these tests may take before it counts as a hang


def sim_world(epoch: str = "boot-1", **kwargs: Any) -> SimWorld:
    """The harbour town on a fixed clock, so answers do not change between two calls."""
    return SimWorld.harbour_town(epoch=epoch, clock=lambda: AT, **kwargs)


def all_cells(world: SimWorld) -> frozenset[int]:
    return frozenset(room.id for room in world.town_map.rooms)


@contextlib.asynccontextmanager
async def served(
    world: ServedWorld, *, cells: frozenset[int] | None = None, **kwargs: Any
) -> AsyncIterator[WorldServer]:
    """`world` served on a free port of 127.0.0.1 for the duration of the block."""
    assert isinstance(world, SimWorld) or cells is not None
    server = WorldServer(world, TOKEN, cells=cells or all_cells(world), **kwargs)  # type: ignore[arg-type]
    await server.start("127.0.0.1", 0)
    try:
        yield server
    finally:
        await server.stop()


class RecordingSleep:
    """Records each requested delay and returns after one turn of the event loop."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)


class Peer:
    """The game's end of one connection to a `ScriptedGame`; the server reads into a queue."""

    def __init__(self, ws: web.WebSocketResponse) -> None:
        self.ws = ws
        self.messages: asyncio.Queue[WSMessage] = asyncio.Queue()

    async def _next(self) -> WSMessage:
        return await asyncio.wait_for(self.messages.get(), STEP)

    async def receive(self) -> Frame:
        message = await self._next()
        assert message.type is WSMsgType.TEXT, message
        return parse_frame(message.data)

    async def receive_close(self) -> int | None:
        """The close code the daemon sent (None if the connection just dropped)."""
        while True:
            message = await self._next()
            if message.type is WSMsgType.CLOSE:
                return int(message.data)
            if message.type in (WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
                return None

    async def send(self, frame: Frame | str) -> None:
        await self.ws.send_str(frame if isinstance(frame, str) else encode_frame(frame))

    async def welcome(self, head: Cursor | None = None) -> Hello:
        hello = await self.receive()
        assert isinstance(hello, Hello)
        await self.send(Welcome(1, head or Cursor("boot-1", 0), "scripted"))
        return hello

    async def close(self, code: int, reason: str = "") -> None:
        await asyncio.wait_for(self.ws.close(code=code, message=reason.encode()), STEP)


class ScriptedGame:
    """A WebSocket server on 127.0.0.1 that hands each connection to the test as a `Peer`."""

    def __init__(self) -> None:
        self._peers: asyncio.Queue[Peer] = asyncio.Queue()
        self._open: list[Peer] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> ScriptedGame:
        app = web.Application()
        app.router.add_get("/bridge", self._handle)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"ws://{host}:{port}/bridge"
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for peer in self._open:
            if not peer.ws.closed:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(peer.ws.close(), STEP)
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=1_048_576)
        await ws.prepare(request)
        peer = Peer(ws)
        self._open.append(peer)
        await self._peers.put(peer)
        while True:  # reading here answers the daemon's close at once
            message = await ws.receive()
            await peer.messages.put(message)
            if message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
                return ws

    async def accept(self) -> Peer:
        return await asyncio.wait_for(self._peers.get(), STEP)
