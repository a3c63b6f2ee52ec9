"""Each storyteller's rolling digest (one row per storyteller, replaced on every refresh)."""

from __future__ import annotations

from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.story import DigestRow
from storyteller_daemon.storage.storytellers import as_utc


def digest_to_domain(row: DigestRow) -> Digest:
    """Row → `Digest`."""
    return Digest(
        storyteller_id=row.storyteller_id,
        text=row.text,
        fingerprint=row.fingerprint,
        run_key=row.run_key,
        refreshed_on=as_utc(row.refreshed_on),
    )


class DigestRepository:
    """Reads and replaces storytellers' digests."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def latest(self, storyteller_id: int) -> Digest | None:
        """The storyteller's digest, or None before the first refresh."""
        async with self._db.session() as session:
            row = await session.get(DigestRow, storyteller_id)
            return digest_to_domain(row) if row is not None else None

    async def save(self, digest: Digest) -> Digest:
        """Store a refreshed digest in place of the old one."""
        async with self._db.session() as session:
            row = await session.get(DigestRow, digest.storyteller_id)
            if row is None:
                row = DigestRow(storyteller_id=digest.storyteller_id)
                session.add(row)
            row.text, row.fingerprint = digest.text, digest.fingerprint
            row.run_key, row.refreshed_on = digest.run_key, digest.refreshed_on
            await session.flush()
            return digest_to_domain(row)
