"""Which memories a turn's prompt shows: Generative Agents' retrieval score.

A memory's score is the sum of three parts, each between 0 and 1 (Park et al., 2023, with
equal weights):

* recency: exponential decay on the time since the memory was last written, halving every
  `RECENCY_HALF_LIFE_HOURS`, measured from the trigger's time (so a replay scores the same);
* importance: the stored 1-10, scaled to 0-1;
* relevance: half from the word index (the engine's score for the trigger's words, scaled by
  the best candidate's), half from being about a character the trigger involves.

The database chooses a bounded set of candidates with its indexes (`MemoryCandidate`: the best
word matches, the newest about the involved characters, the newest and the most important
overall); only those are scored here. The best memory by the sum is nearly always the best by
one of its parts, which is what the candidates are chosen by.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from storyteller_daemon.domain.situations import MAX_IMPORTANCE, MIN_IMPORTANCE, CharacterMemory

RECENCY_HALF_LIFE_HOURS = 72.0
"""A memory written three days before the trigger counts half as recent as a new one."""
MAX_QUERY_WORDS = 16
"""Words of the trigger sent to the word index at most (the first distinct ones)."""
MIN_WORD_LENGTH = 3

_WORD = re.compile(r"\w+", re.UNICODE)
# Words too common to say what a text is about; PostgreSQL's ranking has no inverse document
# frequency to discount them.
_STOP_WORDS = frozenset(
    """
    about above after again against all and any are because been before being below between
    both but can could did does doing down during each few for from further had has have having
    her here hers herself him himself his how into its itself just let more most much must
    myself nor not now off once only other our ours out over own same she should some such than
    that the their theirs them then there these they this those through too under until upon
    very was were what when where which while who whom why will with would you your yours
    """.split()
)


@dataclass(frozen=True)
class MemoryCandidate:
    """A memory the database offered for ranking.

    Attributes:
        memory: the memory.
        words: the word index's score for the trigger's words (higher is better; 0 when it did
            not match them).
    """

    memory: CharacterMemory
    words: float = 0.0


@dataclass(frozen=True)
class RankedMemory:
    """A candidate with its score and the parts of it."""

    memory: CharacterMemory
    recency: float
    importance: float
    relevance: float

    @property
    def score(self) -> float:
        """Recency + importance + relevance (each 0-1)."""
        return self.recency + self.importance + self.relevance


def query_words(texts: Iterable[str], limit: int = MAX_QUERY_WORDS) -> tuple[str, ...]:
    """The first `limit` distinct words of `texts` worth searching for, lower-cased.

    Words shorter than three characters, numbers and very common English words are left out.
    """
    found: dict[str, None] = {}
    for text in texts:
        for word in _WORD.findall(text.lower()):
            if len(word) >= MIN_WORD_LENGTH and not word.isdigit() and word not in _STOP_WORDS:
                found.setdefault(word, None)
                if len(found) == limit:
                    return tuple(found)
    return tuple(found)


def recency(changed_on: datetime, now: datetime) -> float:
    """1 for a memory written at `now`, halving every `RECENCY_HALF_LIFE_HOURS` before it."""
    hours = max(0.0, (now - changed_on).total_seconds() / 3600)
    return float(0.5 ** (hours / RECENCY_HALF_LIFE_HOURS))


def rank_memories(
    candidates: Sequence[MemoryCandidate], *, now: datetime, character_ids: Collection[int]
) -> list[RankedMemory]:
    """The candidates best first (ties: the newer memory first), each once."""
    best_words = max((c.words for c in candidates), default=0.0)
    span = MAX_IMPORTANCE - MIN_IMPORTANCE
    ranked: dict[int, RankedMemory] = {}
    for candidate in candidates:
        memory = candidate.memory
        words = candidate.words / best_words if best_words > 0 else 0.0
        about = 1.0 if memory.character_id in character_ids else 0.0
        scored = RankedMemory(
            memory=memory,
            recency=recency(memory.changed_on, now),
            importance=(memory.importance - MIN_IMPORTANCE) / span,
            relevance=(words + about) / 2,
        )
        if memory.id not in ranked or ranked[memory.id].score < scored.score:
            ranked[memory.id] = scored
    return sorted(ranked.values(), key=lambda r: (-r.score, -r.memory.id))
