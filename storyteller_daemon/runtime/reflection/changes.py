"""What changed for a storyteller since its last digest, read from the database.

Situations resolved since, open situations opened or changed since, turns that acted (a call
that changed a situation, a memory or the game; from the run records, so none with
``runs.record = false``) and memory changes (created, updated, forgotten; consolidation's own
merges are housekeeping and left out). Of each kind the newest ``max_changes``.

"Since" is the time the previous digest's inputs were read, inclusive: a change made in the
same instant is read again by the next refresh, whose fingerprint then shows that nothing new
came in.
"""

from __future__ import annotations

from datetime import datetime

from storyteller_daemon.agent.digest import ActedTurn, DigestChanges, acted_calls
from storyteller_daemon.domain.situations import MemoryAction
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store

DIGESTED_ACTIONS = (MemoryAction.CREATED, MemoryAction.UPDATED, MemoryAction.FORGOTTEN)
"""The memory changes a digest hears of."""


async def gather_changes(
    store: Store,
    runs: RunRepository | None,
    storyteller_id: int,
    since: datetime | None,
    limit: int,
) -> DigestChanges:
    """The changes since `since` (None: since the beginning), at most `limit` of each kind."""
    resolved = await store.situations.changed_since(
        storyteller_id, since, resolved=True, limit=limit
    )
    opened = await store.situations.changed_since(
        storyteller_id, since, resolved=False, limit=limit
    )
    memories = await store.memories.edits_since(
        storyteller_id, since, limit=limit, actions=DIGESTED_ACTIONS
    )
    turns: list[ActedTurn] = []
    if runs is not None:
        stored = await runs.records_since(
            storyteller_id, since, kind="turn", limit=limit, min_tool_calls=1
        )
        for run in stored:
            calls = (run.record.get("turn") or {}).get("calls") or []
            actions = acted_calls(calls)
            if actions:
                turns.append(ActedTurn(run.summary.started_at, run.summary.trigger_label, actions))
    return DigestChanges(
        since=since,
        resolved=tuple(resolved),
        opened=tuple(opened),
        turns=tuple(turns),
        memories=tuple(memories),
        limit=limit,
    )
