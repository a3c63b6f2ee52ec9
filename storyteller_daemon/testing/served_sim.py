"""The sim world served over the bridge on a thread of its own: a stand-in game for CLI tests.

A CLI command runs its own event loop (`asyncio.run`), so the game it talks to cannot share the
test's loop; `served_sim` runs a `WorldServer` over a fresh harbour town on a background thread
and stops it on exit.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld


@dataclass(frozen=True)
class ServedSim:
    """A running stand-in game: its bridge URL, the server (its world is `server.world`) and
    the event loop it runs on."""

    url: str
    server: WorldServer
    loop: asyncio.AbstractEventLoop


@contextmanager
def served_sim(
    token: str, *, game: str = "Harbour Town (sim)", epoch: str = "served-1", steps: int = 0
) -> Iterator[ServedSim]:
    """A harbour town served on 127.0.0.1 (any free port) until the block ends.

    Args:
        token: The shared secret the server accepts.
        game: The name its welcome gives.
        epoch: The world's epoch.
        steps: Activity steps taken before serving (history to replay).
    """
    started = threading.Event()
    holder: dict[str, object] = {}

    async def main() -> None:
        world = SimWorld.harbour_town(epoch=epoch)
        for _ in range(steps):
            world.step()
        server = WorldServer(
            world, token, cells=frozenset(r.id for r in world.town_map.rooms), game=game
        )
        stop = asyncio.Event()
        holder.update(loop=asyncio.get_running_loop(), stop=stop, server=server)
        try:
            holder["url"] = await server.start("127.0.0.1", 0)
            started.set()
            await stop.wait()
        finally:
            await server.stop()

    thread = threading.Thread(target=lambda: asyncio.run(main()), daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the served sim did not start")
    loop = holder["loop"]
    assert isinstance(loop, asyncio.AbstractEventLoop)
    server = holder["server"]
    assert isinstance(server, WorldServer)
    try:
        yield ServedSim(str(holder["url"]), server, loop)
    finally:
        stop = holder["stop"]
        assert isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
