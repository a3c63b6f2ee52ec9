"""One object that gives the rest of the daemon every repository over one database."""

from __future__ import annotations

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.audit import AuditRepository
from storyteller_daemon.storage.catalogue import CatalogueRepository
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.digests import DigestRepository
from storyteller_daemon.storage.erasure import CharacterDataRepository
from storyteller_daemon.storage.memories import MemoryRepository
from storyteller_daemon.storage.narrative import SituationRepository
from storyteller_daemon.storage.provider_queries import ProviderQueryRepository
from storyteller_daemon.storage.references import ReferenceRepository
from storyteller_daemon.storage.scene_claims import SceneClaimRepository
from storyteller_daemon.storage.speech import SpeechHistoryRepository
from storyteller_daemon.storage.story_plans import StoryPlanRepository
from storyteller_daemon.storage.storytellers import StorytellerRepository
from storyteller_daemon.storage.verdict_memory import VerdictMemoryRepository


class Store:
    """The repositories, sharing a `Database` and a clock."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self.db = db
        self.clock = clock
        self.storytellers = StorytellerRepository(db, clock)
        self.situations = SituationRepository(db, clock)
        self.memories = MemoryRepository(db, clock)
        self.references = ReferenceRepository(db, clock)
        self.speech = SpeechHistoryRepository(db)
        self.catalogues = CatalogueRepository(db)
        self.digests = DigestRepository(db)
        self.audit = AuditRepository(db, clock)
        self.characters = CharacterDataRepository(db, clock)
        self.plans = StoryPlanRepository(db, clock)
        self.claims = SceneClaimRepository(db, clock)
        self.queries = ProviderQueryRepository(db, clock=clock)
        self.verdicts = VerdictMemoryRepository(db, clock)

    @classmethod
    def open(cls, url: str, *, busy_timeout_ms: int = 15_000, clock: Clock) -> Store:
        """A store over a new engine for `url`."""
        return cls(Database(url, busy_timeout_ms=busy_timeout_ms), clock)

    async def close(self) -> None:
        """Release the engine."""
        await self.db.close()
