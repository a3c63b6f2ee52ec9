"""``storyteller sim``: the embedded sim world as a game speaking the bridge protocol.

``storyteller sim serve`` runs the harbour town with its scripted activity and serves it on a
WebSocket, so a daemon configured with ``[world] kind = "bridge"`` (or ``storyteller bridge
check``) can be tried against a real connection without a game engine.
"""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
import time
from collections.abc import Callable
from typing import Annotated

import typer

from storyteller_daemon.cli.support import DEFAULT_TOKEN_ENV, console, fail, run_async
from storyteller_daemon.errors import EX_CONFIG

app = typer.Typer(
    help="The embedded sim world, served over the bridge protocol.", no_args_is_help=True
)


def unique_epoch() -> str:
    """An epoch unique to this start: the time plus a few random characters."""
    return f"sim-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{secrets.token_hex(3)}"


async def serve_sim(
    *,
    host: str,
    port: int,
    token: str,
    seed: int,
    tick_seconds: float,
    stop: asyncio.Event,
    on_ready: Callable[[str, str], None] = lambda url, epoch: None,
) -> None:
    """Serve a fresh harbour town until `stop` is set.

    Args:
        host: Address to listen on.
        port: Port (0: any free one).
        token: The shared secret clients must present.
        seed: Seed of the scripted activity.
        tick_seconds: Seconds between activity steps; 0 for a world where nothing happens.
        stop: Set to shut down.
        on_ready: Called with the URL and the epoch once the server listens.
    """
    from world_adapter.bridge.world_server import WorldServer
    from world_adapter.sim import SimWorld
    from world_adapter.sim.hooks import cause_event

    world = SimWorld.harbour_town(seed=seed, epoch=unique_epoch())
    cells = frozenset(room.id for room in world.town_map.rooms)
    server = WorldServer(
        world,
        token,
        cells=cells,
        game="Harbour Town (sim)",
        cause_event=functools.partial(cause_event, world),  # for `bridge check --events`
    )
    url = await server.start(host, port)
    activity = None
    if tick_seconds > 0:
        activity = asyncio.create_task(world.run_activity(tick_seconds), name="sim-activity")
    try:
        on_ready(url, world.cursor.epoch)
        await stop.wait()
    finally:
        if activity is not None:
            activity.cancel()
            await asyncio.gather(activity, return_exceptions=True)
        await server.stop()


@app.command("serve")
@run_async
async def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).", min=0)] = 4010,
    token_env: Annotated[
        str, typer.Option(help="Environment variable holding the shared secret.")
    ] = DEFAULT_TOKEN_ENV,
    seed: Annotated[int, typer.Option(help="Seed of the scripted activity.")] = 7,
    tick: Annotated[
        float, typer.Option(help="Seconds between activity steps (0: no activity).", min=0)
    ] = 2.0,
) -> None:
    """Serve the sim world over the bridge protocol until SIGINT or SIGTERM."""
    from storyteller_daemon.runtime.daemon import stop_on_signals

    token = os.environ.get(token_env, "").strip()
    if not token:
        raise fail(
            f"environment variable {token_env} is not set (the bridge's shared secret)", EX_CONFIG
        )

    def announce(url: str, epoch: str) -> None:
        console.print(f"serving the sim world on {url} (epoch {epoch}); SIGINT or SIGTERM stops")

    stop = asyncio.Event()
    with stop_on_signals(stop):
        await serve_sim(
            host=host,
            port=port,
            token=token,
            seed=seed,
            tick_seconds=tick,
            stop=stop,
            on_ready=announce,
        )
    console.print("stopped")
