"""Near-duplicate memories: shingle containment, greedy clusters per character, merged text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.domain.consolidation import (
    containment,
    duplicate_clusters,
    merged_text,
    sentences,
    shingles,
)
from storyteller_daemon.domain.situations import CharacterMemory

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def memory(ident: int, text: str, *, character: int = 7, title: str = "Wren") -> CharacterMemory:
    return CharacterMemory(
        id=ident,
        storyteller_id=1,
        character_id=character,
        title=title,
        text=text,
        created_on=T0 + timedelta(minutes=ident),
    )


def test_shingles_ignore_case_punctuation_and_markup() -> None:
    assert shingles("Wren STOLE a purse!") == shingles("\x1b[1mwren stole, a purse")
    assert shingles("Wren stole a purse") == {("wren", "stole", "a"), ("stole", "a", "purse")}
    assert shingles("A thief") == {("a", "thief")}  # shorter than a shingle: one of all
    assert shingles("...") == frozenset()


def test_containment_measures_the_smaller_set() -> None:
    short = shingles("Wren stole a purse from the fishmonger.")
    longer = shingles("Wren stole a purse from the fishmonger. The guard saw her run.")
    assert containment(short, longer) == 1.0
    assert containment(longer, short) == 1.0
    assert containment(short, shingles("Maren sells fish at dawn on the quay.")) == 0.0
    assert containment(short, frozenset()) == 0.0


def test_clusters_keep_the_oldest_and_leave_distinct_memories_and_characters_apart() -> None:
    memories = [
        memory(3, "Wren stole a purse from the fishmonger. The guard saw her run."),
        memory(1, "Wren stole a purse from the fishmonger."),
        memory(2, "Wren sings at the Gull tavern on Sundays."),
        memory(4, "Wren stole a purse from the fishmonger.", character=8),
        memory(5, "wren STOLE a purse from the fishmonger!"),
    ]
    [cluster] = duplicate_clusters(memories, 0.8)
    assert cluster.keep.id == 1
    assert [m.id for m in cluster.merged] == [3, 5]


def test_a_chain_of_likeness_does_not_pull_unrelated_memories_together() -> None:
    a = memory(1, "one two three four five six")
    b = memory(2, "one two three four five six seven eight nine ten eleven twelve")
    c = memory(3, "seven eight nine ten eleven twelve")
    # b is like a and like c, but c is nothing like a, the cluster's kept memory
    clusters = duplicate_clusters([a, b, c], 0.8)
    assert [(k.keep.id, [m.id for m in k.merged]) for k in clusters] == [(1, [2])]


def test_the_threshold_decides() -> None:
    a = memory(1, "Wren owes the harbour master ten silver coins.")
    b = memory(2, "Wren owes the harbour master ten gold coins.")
    assert duplicate_clusters([a, b], 0.5) != []
    assert duplicate_clusters([a, b], 0.9) == []
    with pytest.raises(ValueError, match="threshold"):
        duplicate_clusters([a, b], 0)


def test_the_merged_text_is_the_longest_plus_the_sentences_it_lacks() -> None:
    first = memory(1, "Wren stole a purse from the fishmonger")
    second = memory(2, "Wren stole a purse from the fishmonger. The guard saw her run.")
    third = memory(3, "Wren stole a purse from the fishmonger! She hid in the net loft")
    [cluster] = duplicate_clusters([first, second, third], 0.8)
    assert [m.id for m in cluster.members] == [1, 2, 3]
    assert merged_text(cluster) == (  # the third is the longest
        "Wren stole a purse from the fishmonger! She hid in the net loft. The guard saw her run."
    )
    [alone] = duplicate_clusters([first, memory(2, "Wren stole a purse from the fishmonger.")], 0.8)
    assert merged_text(alone) == "Wren stole a purse from the fishmonger."


def test_sentences_split_on_ends_and_lines() -> None:
    assert sentences("One. Two!  Three?\nFour") == ["One.", "Two!", "Three?", "Four"]
