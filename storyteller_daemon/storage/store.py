"""One object that gives the rest of the daemon every repository over one database."""

from __future__ import annotations

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.approvals import ApprovalRepository
from storyteller_daemon.storage.audit import AuditRepository
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.catalogue import CatalogueRepository
from storyteller_daemon.storage.character_data import CharacterDataRepository
from storyteller_daemon.storage.cluster_flags import ClusterFlagRepository
from storyteller_daemon.storage.dashboard_queries import DashboardQueries
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.digests import DigestRepository
from storyteller_daemon.storage.eval_results import EvalResultRepository
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.inbox import InboxRepository
from storyteller_daemon.storage.leases import LeaseRepository
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.memories import MemoryRepository
from storyteller_daemon.storage.policy_actions import PolicyActionRepository
from storyteller_daemon.storage.provider_queries import ProviderQueryRepository
from storyteller_daemon.storage.references import ReferenceRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.scene_claims import SceneClaimRepository
from storyteller_daemon.storage.situations import SituationRepository
from storyteller_daemon.storage.speech_history import SpeechHistoryRepository
from storyteller_daemon.storage.story_plans import StoryPlanRepository
from storyteller_daemon.storage.storytellers import StorytellerRepository
from storyteller_daemon.storage.turn_journal import TurnJournalRepository
from storyteller_daemon.storage.verdict_memory import VerdictMemoryRepository


class Store:
    """The repositories, sharing a `Database` and a clock."""

    def __init__(self, db: Database, clock: Clock, fence: Fence | None = None) -> None:
        self.db = db
        self.clock = clock
        self.fence = fence
        """The leases guarding the backlog's and the turn journal's writes (a daemon of a
        cluster); None: unguarded."""
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
        self.backlog = BacklogRepository(db, clock, fence)
        self.inbox = InboxRepository(db, clock)
        self.journal = TurnJournalRepository(db, clock, fence)
        self.runs = RunRepository(db)
        self.ledger = LedgerRepository(db)
        self.approvals = ApprovalRepository(db)
        self.policy_actions = PolicyActionRepository(db)
        self.dashboard = DashboardQueries(db)
        self.eval_results = EvalResultRepository(db)
        self.leases = LeaseRepository(db, clock)
        self.flags = ClusterFlagRepository(db, clock)

    @classmethod
    def open(
        cls,
        url: str,
        *,
        busy_timeout_ms: int = 15_000,
        clock: Clock,
        idle_in_transaction_seconds: float | None = None,
        pool_size: int | None = None,
    ) -> Store:
        """A store over a new engine for `url` (on PostgreSQL, sessions idle in a transaction
        for `idle_in_transaction_seconds` are ended by the server, and `pool_size` connections
        are kept, no more)."""
        database = Database(
            url,
            busy_timeout_ms=busy_timeout_ms,
            idle_in_transaction_seconds=idle_in_transaction_seconds,
            pool_size=pool_size,
            clock=clock,
        )
        return cls(database, clock)

    def stamped_by(self, clock: Clock) -> Store:
        """The same repositories over the same database, stamping times from `clock`."""
        return Store(self.db, clock, self.fence)

    def fenced_by(self, fence: Fence) -> Store:
        """The same repositories, the backlog and the turn journal writing only for the
        storytellers whose leases `fence` holds."""
        return Store(self.db, self.clock, fence)

    async def close(self) -> None:
        """Release the engine."""
        await self.db.close()
