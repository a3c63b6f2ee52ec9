"""ORM tables. Repositories translate rows to domain objects; nothing outside storage sees these.

World ids (characters, rooms, zones) are plain integers: the world lives in the game, not here.

One module per area: `base` (the declarative base and shared column types), `storytellers`,
`story` (situations, memories, digests, plans, claims), `references`, `world` (inbox, speech,
catalogue), `work` (backlog, verdicts, turn journal), `records` (runs, ledger, audit),
`policy` (approvals, counted prog calls) and `cluster` (daemons, leases, shared flags);
`autogenerate` says what migrations' comparison skips.
Importing any of them imports this package, which imports every area, so `Base.metadata` always
holds the whole schema (alembic's ``env.py`` and `sweep` rely on it).
"""

# Every area is imported here so that `Base.metadata` holds every table.
import storyteller_daemon.storage.models.cluster
import storyteller_daemon.storage.models.policy
import storyteller_daemon.storage.models.records
import storyteller_daemon.storage.models.references
import storyteller_daemon.storage.models.story
import storyteller_daemon.storage.models.storytellers
import storyteller_daemon.storage.models.work
import storyteller_daemon.storage.models.world  # noqa: F401
