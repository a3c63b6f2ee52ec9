"""Reference search on both backends: indexed substrings, fallbacks, visibility, bulk writes."""

from __future__ import annotations

import pytest

from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.errors import ConflictError, ValidationError
from storyteller_daemon.storage.store import Store

LEDGER = ReferenceDocument(
    name="Customs Ledger",
    folder="Lore",
    contents="The Harbourmaster keeps the ledgers: a 95% tithe on snake_case cargo, at C:\\quay.",
)
TIDES = ReferenceDocument(
    name="Tide Tables",
    keywords="tides,moon",
    contents="High water comes 195 minutes later each day; snakeXcase is not a word.",
)
GULLS = ReferenceDocument(
    name="Die Straße der Möwen",
    description="Ein Lied",
    contents="Möwen kreisen über dem Hafen. Ǆemal sings of the quay.",
)


@pytest.fixture
async def corpus(store: Store) -> Store:
    await store.references.create_many([LEDGER, TIDES, GULLS])
    return store


async def _names(store: Store, query: str, visible_to: int | None = None) -> list[str]:
    return [d.name for d in await store.references.search(query, visible_to=visible_to)]


async def test_a_substring_inside_a_word_is_found_through_the_trigram_index(
    corpus: Store,
) -> None:
    assert await _names(corpus, "ourmast") == ["Customs Ledger"]
    assert await _names(corpus, "OURMAST") == ["Customs Ledger"]
    assert await _names(corpus, "ourmast tithe") == ["Customs Ledger"]
    assert await _names(corpus, "ourmast tides") == []  # every term must match
    # terms may match different fields
    assert await _names(corpus, "moon ater") == ["Tide Tables"]


async def test_word_matches_come_first_by_rank_then_substring_matches_by_name(
    corpus: Store,
) -> None:
    await corpus.references.create_many(
        [
            ReferenceDocument(name="Zebra Note", contents="the aquaysian coast"),
            ReferenceDocument(name="alpha note", contents="aquaysians"),
        ]
    )
    # "quay" is a word of Customs Ledger and Möwen, and only inside words of the notes
    names = await _names(corpus, "quay")
    assert set(names[:2]) == {"Customs Ledger", "Die Straße der Möwen"}
    assert names[2:] == ["alpha note", "Zebra Note"]


async def test_like_wildcards_and_quotes_in_terms_are_literal(corpus: Store) -> None:
    # Tide Tables would match each of these if % or _ were wildcards: "195 ", "eXc".
    for query in ("95%", "e_c", "%", "_", "C:\\qu"):
        assert await _names(corpus, query) == ["Customs Ledger"], query
    # only the word engine finds these (the word "quay"); no document holds a quote
    assert set(await _names(corpus, '"quay')) == {"Customs Ledger", "Die Straße der Möwen"}
    assert await _names(corpus, 'qu"ay') == []


async def test_short_terms_fall_back_to_a_scan(corpus: Store) -> None:
    assert await _names(corpus, "5") == ["Customs Ledger", "Tide Tables"]
    assert await _names(corpus, "19") == ["Tide Tables"]
    assert await _names(corpus, "Xc") == ["Tide Tables"]
    assert await _names(corpus, "xc moon") == ["Tide Tables"]  # a short term beside a long one
    assert await _names(corpus, "xc tithe") == []


async def test_non_ascii_terms_are_matched_by_case_folding(corpus: Store) -> None:
    assert await _names(corpus, "möwen") == ["Die Straße der Möwen"]
    assert await _names(corpus, "MÖWEN") == ["Die Straße der Möwen"]
    assert await _names(corpus, "STRAßE") == ["Die Straße der Möwen"]
    assert await _names(corpus, "ǆemal") == ["Die Straße der Möwen"]
    assert await _names(corpus, "über lied") == ["Die Straße der Möwen"]
    assert await _names(corpus, "über tithe") == []


async def test_restricted_documents_are_filtered_in_the_query(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = await store.storytellers.create("Reader")
    other = await store.storytellers.create("Other")
    assert reader.id is not None and other.id is not None
    await store.references.create_many(
        [
            ReferenceDocument(name="Open Quay", contents="the quay"),
            ReferenceDocument(
                name="Secret Quay",
                contents="the quay tunnels",
                restricted_to=frozenset({reader.id, 99}),
            ),
            ReferenceDocument(
                name="Their Quay", contents="the quay", restricted_to=frozenset({other.id})
            ),
        ]
    )

    def python_must_not_filter(self: ReferenceDocument, storyteller_id: int) -> bool:
        raise AssertionError("visibility is checked in Python")

    monkeypatch.setattr(ReferenceDocument, "is_visible_to", python_must_not_filter)
    for query in ("quay", "ua", "tunnel", "qua tunnels", ""):
        found = await store.references.search(query, visible_to=reader.id)
        assert "Their Quay" not in [d.name for d in found], query
        assert len({d.id for d in found}) == len(found)  # once each, however many restrictions
    [secret] = await store.references.search("tunnels", visible_to=reader.id)
    assert secret.restricted_to == frozenset({reader.id, 99})
    assert await _names(store, "tunnels", visible_to=other.id) == []
    assert await _names(store, "unnel", visible_to=other.id) == []
    assert [d.name for d in await store.references.list(visible_to=other.id)] == [
        "Open Quay",
        "Their Quay",
    ]
    assert len(await store.references.list()) == 3


async def test_hits_carry_a_snippet_of_the_contents(corpus: Store) -> None:
    [hit] = await corpus.references.search_hits("harbourmaster")
    assert hit.document.name == "Customs Ledger"
    assert hit.snippet.startswith("The «Harbourmaster» keeps the ledgers")
    [moon] = await corpus.references.search_hits("moon")  # a keyword: the opening is shown
    assert moon.snippet.startswith("High water comes")
    assert len(await corpus.references.search_hits(None)) == 3


async def test_create_many_inserts_everything_searchable_in_order(store: Store) -> None:
    reader = await store.storytellers.create("Reader")
    assert reader.id is not None
    docs = [
        ReferenceDocument(name=f" Note {i} ", contents=f"entry {i} of the zyxwv log")
        for i in range(1200)
    ]
    docs[7] = ReferenceDocument(name="Note 7", restricted_to=frozenset({reader.id}))
    created = await store.references.create_many(docs)
    assert [d.name for d in created] == [d.name.strip() for d in docs]
    assert all(d.id is not None for d in created)
    assert created == [await store.references.get(d.id or 0) for d in created]
    assert created[7].restricted_to == frozenset({reader.id})
    assert len(await store.references.search("zyxwv")) == 1199
    assert await store.references.create_many([]) == []


async def test_create_many_writes_nothing_when_a_name_clashes(store: Store) -> None:
    await store.references.create(ReferenceDocument(name="Tide Tables"))
    fresh = [ReferenceDocument(name=f"Fresh {i}") for i in range(600)]
    with pytest.raises(ConflictError, match="'TIDE tables' already exists"):
        await store.references.create_many([*fresh, ReferenceDocument(name="TIDE tables")])
    with pytest.raises(ConflictError, match="named 'Fresh 3' and 'fresh 3'"):
        await store.references.create_many([*fresh, ReferenceDocument(name="fresh 3")])
    with pytest.raises(ValidationError, match="non-blank name"):
        await store.references.create_many([*fresh, ReferenceDocument(name="  ")])
    assert [d.name for d in await store.references.list()] == ["Tide Tables"]


async def test_delete_many_removes_documents_from_the_indexes(corpus: Store) -> None:
    ids = [d.id or 0 for d in await corpus.references.list()]
    await corpus.references.delete_many([ids[0], ids[1], 9999])
    assert await _names(corpus, "") == ["Die Straße der Möwen"]
    assert await _names(corpus, "ourmast") == []
    assert await _names(corpus, "moon") == []
