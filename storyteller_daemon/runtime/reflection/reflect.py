"""One storyteller's reflection pass: consolidate its memories, then refresh its digest.

Consolidation goes first so the digest is written over the merged memories (its own merges are
not changes the digest reports). The daemon runs a pass for each quiet storyteller (`idle`);
``storyteller ais digest refresh`` runs the same pass once, from the shell.
"""

from __future__ import annotations

from dataclasses import dataclass

from storyteller_daemon.config import ReflectionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.reflection.consolidation import Merge, consolidate_memories
from storyteller_daemon.runtime.reflection.digest import DigestRefresher, DigestResult
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.memories import MemoryRepository


@dataclass(frozen=True)
class ReflectionReport:
    """What one pass did: the memories it merged and what became of the digest."""

    merges: list[Merge]
    digest: DigestResult


class Reflection:
    """Runs reflection passes.

    Args:
        digests: refreshes digests (with the model, the run recorder and the stores it holds).
        memories: the memories consolidation merges.
        cfg: the ``[reflection]`` section.
        stats: counts passes by outcome (``reflections``).
    """

    def __init__(
        self,
        digests: DigestRefresher,
        memories: MemoryRepository,
        cfg: ReflectionConfig,
        stats: RuntimeStats | None = None,
    ) -> None:
        self.digests = digests
        self._memories = memories
        self._cfg = cfg
        self.stats = stats or RuntimeStats()

    async def reflect(self, storyteller: Storyteller, *, force: bool = False) -> ReflectionReport:
        """Consolidate the storyteller's memories (when configured), then refresh its digest
        (`force`: even when nothing changed)."""
        if storyteller.id is None:
            raise ValueError(f"storyteller '{storyteller.name}' has no id; save it first")
        merges: list[Merge] = []
        if self._cfg.consolidate:
            merges = await consolidate_memories(self._memories, storyteller.id, self._cfg)
        digest = await self.digests.refresh(storyteller, force=force)
        self.stats.reflections[f"digest_{digest.outcome}"] += 1
        self.stats.reflections["memories_merged"] += sum(len(m.merged) for m in merges)
        return ReflectionReport(merges, digest)
