"""Merging a storyteller's near-duplicate memories about one character, without a model.

The clusters and the merged text come from `domain.consolidation` (deterministic: shingle
containment at ``[reflection] similarity``, the oldest memory kept, the longest text plus the
sentences of the others it lacks). Each cluster is merged with `MemoryRepository.consolidate`
in one transaction, by the actor ``reflection``: the kept memory takes the merged text, the
highest importance and the joined provenance (so a memory from players' words makes the merged
one from players too), the others are deleted, and the edit history records every step.

A cluster whose merged text would pass ``merged_max_chars`` is left alone, and so is one whose
memories changed (or went) between reading and merging: a turn running meanwhile wins.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from storyteller_daemon.clock import uncancelled
from storyteller_daemon.config import ReflectionConfig
from storyteller_daemon.domain.consolidation import Cluster, duplicate_clusters, merged_text
from storyteller_daemon.domain.situations import REFLECTION
from storyteller_daemon.errors import NotFoundError, ValidationError
from storyteller_daemon.storage.memories import MemoryRepository

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Merge:
    """One consolidation: the memories merged into the kept one."""

    character_id: int
    kept: int
    merged: tuple[int, ...]


async def consolidate_memories(
    memories: MemoryRepository, storyteller_id: int, cfg: ReflectionConfig
) -> list[Merge]:
    """Merge each cluster of near-duplicate memories of a storyteller; the merges made."""
    merges = []
    for cluster in duplicate_clusters(await memories.list(storyteller_id), cfg.similarity):
        text = merged_text(cluster)
        ids = tuple(m.id for m in cluster.merged)
        if len(text) > cfg.merged_max_chars:
            log.info(
                "storyteller #%s: memories #%s and %s are alike but their merge would be %d "
                "characters (merged_max_chars %d); left apart",
                storyteller_id,
                cluster.keep.id,
                ids,
                len(text),
                cfg.merged_max_chars,
            )
            continue
        if not await _unchanged(memories, storyteller_id, cluster):
            continue
        try:
            await uncancelled(_consolidate(memories, storyteller_id, cluster, text))
        except (NotFoundError, ValidationError) as exc:  # changed under us: next pass
            log.info("storyteller #%s: memories not merged: %s", storyteller_id, exc)
            continue
        merges.append(Merge(cluster.keep.character_id, cluster.keep.id, ids))
    if merges:
        log.info(
            "storyteller #%s: merged %d duplicate memories into %d",
            storyteller_id,
            sum(len(m.merged) for m in merges),
            len(merges),
        )
    return merges


async def _unchanged(memories: MemoryRepository, storyteller_id: int, cluster: Cluster) -> bool:
    """Whether every memory of the cluster is still as it was read."""
    for memory in cluster.members:
        try:
            now = await memories.get(storyteller_id, memory.id)
        except NotFoundError:
            return False
        if now.changed_on != memory.changed_on or now.text != memory.text:
            return False
    return True


async def _consolidate(
    memories: MemoryRepository, storyteller_id: int, cluster: Cluster, text: str
) -> None:
    await memories.consolidate(
        storyteller_id,
        cluster.keep.id,
        [m.id for m in cluster.merged],
        cluster.keep.title,
        text,
        actor=REFLECTION,
    )
