"""Reaching the configured world from a command: discovery, `init`, `doctor`, `seed --check-world`.

`reach_world` opens the world the configuration names, learns its identity and closes it
afterwards. A bridged game is contacted at once, so that an unreachable game or a refused token
is one clear error before any query; a failure a query meets later is turned into one line by
`world_unavailable`.

A world's identity is what a pack's ``world`` key records: ``sim`` for the embedded sim world,
and for a game over the bridge the name its welcome gives (its URL when it gives none).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from storyteller_daemon.app.adapters import build_world, close_if_closable
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.world_fit import WorldFacts, rooms_to_confirm
from storyteller_daemon.errors import ServiceUnavailable
from world_adapter.errors import FatalStreamError, WorldAdapterError

T = TypeVar("T")

if TYPE_CHECKING:
    from storyteller_daemon.config import Config
    from world_adapter.protocol import WorldClient

SIM_WORLD = "sim"
"""The identity of the embedded sim world."""


@dataclass(frozen=True)
class ReachedWorld:
    """A world that answered, and who it is."""

    client: WorldClient
    identity: str
    """``sim``, or the game's name (its bridge URL when the game gives no name)."""
    where: str
    """How to name it in messages: ``the embedded sim world`` or ``the game at URL``."""

    async def ask(self, query: Awaitable[T]) -> T:
        """The answer to one query, or one line saying why the world gave none."""
        try:
            return await query
        except WorldAdapterError as exc:
            raise world_unavailable(exc, self.where) from None


def world_unavailable(exc: WorldAdapterError, where: str) -> ServiceUnavailable:
    """One line for a world failure: a refused token, no answer, a malformed reply."""
    message = str(exc).rstrip(".")
    if isinstance(exc, FatalStreamError):
        return ServiceUnavailable(f"{where}: {message}; check [world] token_env and the game's")
    return ServiceUnavailable(f"{where}: {message}")


@asynccontextmanager
async def reach_world(
    cfg: Config, environ: Mapping[str, str] = os.environ, *, seconds: float = 5.0
) -> AsyncIterator[ReachedWorld]:
    """The configured world, reached and identified, closed on exit.

    Args:
        cfg: The configuration; its ``[world]`` section says which world.
        environ: Where the bridge token is read from.
        seconds: How long the connection and each request may take.

    Raises:
        ConfigError: If ``[world]`` is incomplete or the token variable is not set.
        ServiceUnavailable: If the game cannot be reached or refuses the token.
    """
    from world_adapter.bridge.client import BridgeWorldClient

    world = build_world(cfg, environ, request_seconds=seconds)
    try:
        if isinstance(world, BridgeWorldClient):
            where = f"the game at {world.url}"
            try:
                async with asyncio.timeout(seconds):
                    name = await world.game()
            except TimeoutError:
                raise ServiceUnavailable(
                    f"{where} did not complete the handshake within {seconds:g} seconds"
                ) from None
            except FatalStreamError as exc:
                raise world_unavailable(exc, where) from None
            except WorldAdapterError as exc:
                raise ServiceUnavailable(f"cannot reach {where}: {exc}") from None
            identity = name.strip() or world.url
        else:
            where, identity = "the embedded sim world", SIM_WORLD
        yield ReachedWorld(world, identity, where)
    finally:
        await close_if_closable(world)


async def world_facts(world: ReachedWorld, storytellers: Sequence[Storyteller]) -> WorldFacts:
    """What `world` says about everything `storytellers` name: zones, rooms, progs.

    Raises:
        ServiceUnavailable: If the world stops answering.
    """
    try:
        zones = await world.client.zones()
        progs = await world.client.progs()
        rooms = set().union(*zones.values()) if zones else set()
        for room_id in sorted(rooms_to_confirm(storytellers, zones)):
            if await world.client.room(room_id) is not None:
                rooms.add(room_id)
    except WorldAdapterError as exc:
        raise world_unavailable(exc, world.where) from None
    return WorldFacts(world.identity, zones, frozenset(rooms), progs)
