"""The last prog catalogue a world gave: admin commands check prog names against it when the
world cannot be asked (a bridged game that is down, or a shell without the bridge token)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime

from progs.types import ProgSignature
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.world import CatalogueRow
from storyteller_daemon.storage.storytellers import as_utc
from world_adapter.codec import CodecError, decode, encode


@dataclass(frozen=True)
class StoredCatalogue:
    """A world's progs and when they were fetched."""

    progs: list[ProgSignature]
    fetched_at: datetime


class CatalogueRepository:
    """Keeps the newest prog catalogue per world (the configured world's kind and address)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(self, world: str, progs: list[ProgSignature], at: datetime) -> None:
        """Store `progs` as `world`'s catalogue, replacing the one stored before."""
        text = json.dumps(
            encode(progs, list[ProgSignature]), ensure_ascii=False, separators=(",", ":")
        )
        async with self._db.session() as session:
            row = await session.get(CatalogueRow, world)
            if row is None:
                session.add(CatalogueRow(world=world, progs=text, fetched_at=at))
            else:
                row.progs, row.fetched_at = text, at

    async def load(self, world: str) -> StoredCatalogue | None:
        """`world`'s stored catalogue; None when none was stored or it cannot be read."""
        async with self._db.session() as session:
            row = await session.get(CatalogueRow, world)
            if row is None:
                return None
            try:
                progs = decode(json.loads(row.progs), list[ProgSignature], "catalogue")
            except (CodecError, ValueError):
                return None  # written by a version that encoded differently: fetch it again
            return StoredCatalogue(progs, as_utc(row.fetched_at))
