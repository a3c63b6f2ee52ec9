"""Finding duplicate memories about one character, and merging their text, without a model.

Two memories are near-duplicates when the smaller one's word shingles (runs of `SHINGLE_WORDS`
words of its normalised text; titles are labels, often worded differently for the same fact,
and are not compared) are mostly contained in the other's: the *containment*
``|A ∩ B| / min(|A|, |B|)`` reaches the configured threshold. Containment rather than Jaccard,
because the common duplicate is one note restating another with a detail more ("Wren stole a
purse." beside "Wren stole a purse. The guard saw her."), which Jaccard scores low. Text is
normalised first (markup stripped, case folded, punctuation dropped), so case and punctuation
do not matter; a text shorter than a shingle counts as one shingle of all its words, so very
short notes only match the same words.

Clustering is greedy and deterministic: memories are taken oldest first; each joins the first
cluster whose oldest memory it is similar to, else starts one. Every member is therefore
similar to the memory that is kept (the oldest), and chains of "A is like B is like C" never
pull unrelated notes together.

The merged text is the longest text of the cluster (the oldest of equal ones), followed by each
sentence of the others, oldest first, that it does not already hold (compared normalised).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from storyteller_daemon.domain.situations import CharacterMemory
from storyteller_daemon.domain.text import strip_markup

SHINGLE_WORDS = 3
"""Words per shingle."""

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")

Shingle = tuple[str, ...]


def words(text: str) -> list[str]:
    """The words of `text`, markup stripped and case folded (punctuation dropped)."""
    return _WORD.findall(strip_markup(text).casefold())


def shingles(text: str, size: int = SHINGLE_WORDS) -> frozenset[Shingle]:
    """The runs of `size` consecutive words of `text`; a shorter text is one shingle."""
    found = words(text)
    if not found:
        return frozenset()
    if len(found) <= size:
        return frozenset({tuple(found)})
    return frozenset(tuple(found[i : i + size]) for i in range(len(found) - size + 1))


def containment(a: frozenset[Shingle], b: frozenset[Shingle]) -> float:
    """How much of the smaller shingle set the other holds (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def memory_shingles(memory: CharacterMemory) -> frozenset[Shingle]:
    """The shingles a memory is compared by (those of its text)."""
    return shingles(memory.text)


@dataclass(frozen=True)
class Cluster:
    """Memories about one character that say the same thing.

    Attributes:
        keep: the oldest; it takes the merged text and stays.
        merged: the others, oldest first; they are folded into `keep` and deleted.
    """

    keep: CharacterMemory
    merged: tuple[CharacterMemory, ...]

    @property
    def members(self) -> tuple[CharacterMemory, ...]:
        """Every memory of the cluster, oldest first."""
        return (self.keep, *self.merged)


def _age(memory: CharacterMemory) -> tuple[object, int]:
    return (memory.created_on, memory.id)


def duplicate_clusters(memories: Sequence[CharacterMemory], threshold: float) -> list[Cluster]:
    """Clusters of two or more near-duplicate memories, per character, oldest kept.

    Args:
        memories: memories of one storyteller (any characters, any order).
        threshold: the containment at or above which two memories are duplicates (0-1].

    Raises:
        ValueError: `threshold` is not in (0, 1].
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold!r}")
    groups: dict[int, list[list[CharacterMemory]]] = {}
    anchors: dict[int, frozenset[Shingle]] = {}
    for memory in sorted(memories, key=_age):
        mine = memory_shingles(memory)
        clusters = groups.setdefault(memory.character_id, [])
        home = next((c for c in clusters if containment(anchors[c[0].id], mine) >= threshold), None)
        if home is None:
            clusters.append([memory])
            anchors[memory.id] = mine
        else:
            home.append(memory)
    return [
        Cluster(cluster[0], tuple(cluster[1:]))
        for character in sorted(groups)
        for cluster in groups[character]
        if len(cluster) > 1
    ]


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (after ``.``, ``!`` or ``?`` and at line breaks)."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def merged_text(cluster: Cluster) -> str:
    """The longest text of the cluster, then the sentences of the others it does not hold."""
    base = max(cluster.members, key=lambda m: len(m.text.strip()))  # first (oldest) of ties
    parts = [base.text.strip()]
    held = f" {' '.join(words(base.text))} "  # padded: whole words only
    for memory in cluster.members:
        if memory is base:
            continue
        for sentence in sentences(memory.text):
            normal = " ".join(words(sentence))
            if normal and f" {normal} " not in held:
                parts.append(sentence)
                held = f"{held}{normal} "
    if len(parts) == 1:
        return parts[0]
    return " ".join(_terminated(part) for part in parts if part)


def _terminated(sentence: str) -> str:
    """A sentence ending in punctuation, so merged sentences do not run together."""
    return sentence if sentence[-1] in ".!?\"')" else f"{sentence}."
