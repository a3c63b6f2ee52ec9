"""Composition root: the only place that names concrete adapters (world, model, alerts)."""

from __future__ import annotations

from progs.types import ProgSignature
from storyteller_daemon.config import Config


async def prog_catalogue(cfg: Config) -> list[ProgSignature] | None:
    """The configured world's prog catalogue, or None when the world cannot be reached.

    The embedded sim world is always reachable; a bridged game may not be running.
    """
    if cfg.world.kind == "sim":
        from world_adapter.sim import SimWorld

        return await SimWorld.harbour_town(seed=cfg.world.sim_seed).progs()
    return None
