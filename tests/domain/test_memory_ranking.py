"""Generative Agents' score: recency, importance and relevance each move a memory up."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from storyteller_daemon.domain.memory_ranking import (
    MAX_QUERY_WORDS,
    MemoryCandidate,
    query_words,
    rank_memories,
    recency,
)
from storyteller_daemon.domain.situations import CharacterMemory

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, OSRIC = 1001, 1002


def memory(
    memory_id: int,
    *,
    age_hours: float = 24,
    importance: int = 5,
    character_id: int = OSRIC,
    changed_hours: float | None = None,
) -> CharacterMemory:
    created = NOW - timedelta(hours=age_hours)
    updated = NOW - timedelta(hours=changed_hours) if changed_hours is not None else None
    return CharacterMemory(
        memory_id, 1, character_id, f"Memory {memory_id}", "", created, importance,
        updated_on=updated,
    )  # fmt: skip


def order(candidates: list[MemoryCandidate], involved: frozenset[int] = frozenset()) -> list[int]:
    return [r.memory.id for r in rank_memories(candidates, now=NOW, character_ids=involved)]


def test_recency_halves_every_three_days() -> None:
    assert recency(NOW, NOW) == 1.0
    assert recency(NOW - timedelta(hours=72), NOW) == 0.5
    assert recency(NOW - timedelta(hours=144), NOW) == 0.25
    assert recency(NOW + timedelta(hours=1), NOW) == 1.0  # a clock step back is not a bonus


def test_recency_moves_a_memory_up() -> None:
    old, new = MemoryCandidate(memory(1, age_hours=200)), MemoryCandidate(memory(2, age_hours=1))
    assert order([old, new]) == [2, 1]
    # Changing an old memory makes it recent again.
    changed = MemoryCandidate(memory(1, age_hours=200, changed_hours=0))
    assert order([changed, new]) == [1, 2]


def test_importance_moves_a_memory_up() -> None:
    plain, vital = MemoryCandidate(memory(2)), MemoryCandidate(memory(1, importance=9))
    assert order([plain, vital]) == [1, 2]


def test_relevance_to_the_words_moves_a_memory_up() -> None:
    unmatched, matched = MemoryCandidate(memory(2)), MemoryCandidate(memory(1), words=3.5)
    assert order([unmatched, matched]) == [1, 2]
    weaker = MemoryCandidate(memory(3), words=1.0)
    assert order([unmatched, weaker, matched]) == [1, 3, 2]


def test_being_about_an_involved_character_moves_a_memory_up() -> None:
    other, about = MemoryCandidate(memory(2)), MemoryCandidate(memory(1, character_id=MAREN))
    assert order([other, about]) == [2, 1]  # equal scores: the newer id first
    assert order([other, about], frozenset({MAREN})) == [1, 2]


def test_a_memory_offered_twice_is_ranked_once_with_its_best_score() -> None:
    ranked = rank_memories(
        [MemoryCandidate(memory(1)), MemoryCandidate(memory(1), words=2.0)],
        now=NOW,
        character_ids=(),
    )
    assert [r.memory.id for r in ranked] == [1]
    assert ranked[0].relevance == 0.5


def test_query_words_leave_out_short_common_and_numeric_words() -> None:
    words = query_words(["The cutpurse took 12 silver from Maren!", "the cutpurse ran at dusk"])
    assert words == ("cutpurse", "took", "silver", "maren", "ran", "dusk")
    many = query_words([" ".join(f"word{n}x" for n in range(40))])
    assert len(many) == MAX_QUERY_WORDS
