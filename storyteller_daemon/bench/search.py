"""``storyteller bench search``: reference search at scale, beside a plain linear scan.

A synthetic corpus is indexed with `create_many` into a throw-away SQLite file, or into a
database the user names (its documents are removed afterwards). Documents read like short lore
entries: common words of a Zipf-like vocabulary and a few rare names, so that a query matches
a handful of documents. A tenth of them are restricted to another storyteller and a tenth to
the one searching. The queries mix whole rare words, fragments from inside them, word
prefixes, and a rare word with a common one.

Every query also runs as a plain Python linear scan (`ReferenceDocument.matches` over all the
documents held in memory, and visibility), timed in the same run; the report compares the
two and counts matches of the scan that the search missed (there should be none). Searches
are timed after one untimed warm-up search, then the scans, each in a pass of its own, with
the benchmark's own copies of the corpus kept out of the garbage collector's passes.
"""

from __future__ import annotations

import gc
import random
import secrets
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.runtime.stats import percentile
from storyteller_daemon.storage.store import Store

VIEWER = 1
"""The storyteller id the queries search as."""
OTHER = 2
"""The storyteller id a tenth of the documents are restricted to."""
_SYLLABLES = [c + v for c in "bdfghklmnprstvz" for v in "aeiou"]
_COMMON_WORDS = 400
_WORDS_PER_DOCUMENT = 70
_RARE_PER_DOCUMENT = 5
_FOLDERS = ("Lore", "Places", "People", "Rules", "Guidance")
_TYPES = ("Setting", "History", "Character", "Procedure")


@dataclass(frozen=True)
class Corpus:
    """Synthetic documents and the vocabulary queries are drawn from."""

    documents: list[ReferenceDocument]
    common: list[str]
    rare: list[list[str]]
    """Each document's rare words, by position in `documents`."""


def make_corpus(size: int, *, tag: str, seed: int = 7) -> Corpus:
    """`size` documents named ``Bench <tag> <n> ...``; the same seed gives the same text."""
    rnd = random.Random(seed)
    common = sorted({rnd.choice(_SYLLABLES) + rnd.choice(_SYLLABLES) for _ in range(2000)})
    common = rnd.sample(common, _COMMON_WORDS)
    weights = [1 / (rank + 1) for rank in range(len(common))]
    docs: list[ReferenceDocument] = []
    rare_words: list[list[str]] = []
    for n in range(size):
        rare = ["".join(rnd.choices(_SYLLABLES, k=3)) for _ in range(_RARE_PER_DOCUMENT)]
        words = rnd.choices(common, weights, k=_WORDS_PER_DOCUMENT - len(rare)) + rare
        rnd.shuffle(words)
        sentences = [" ".join(words[i : i + 10]).capitalize() for i in range(0, len(words), 10)]
        restricted = {0: frozenset({OTHER}), 5: frozenset({VIEWER})}.get(n % 10, frozenset())
        docs.append(
            ReferenceDocument(
                name=f"Bench {tag} {n} {rare[0].title()}",
                description=f"Notes on {rare[1].title()}",
                folder=_FOLDERS[n % len(_FOLDERS)],
                doc_type=_TYPES[n % len(_TYPES)],
                keywords=f"{rare[2]},{rare[3]}",
                contents=". ".join(sentences) + ".",
                restricted_to=restricted,
            )
        )
        rare_words.append(rare)
    return Corpus(docs, common, rare_words)


def make_queries(corpus: Corpus, count: int, *, seed: int = 11) -> list[str]:
    """Queries in four kinds, taken in turn: word, fragment, prefix, word and common word."""
    rnd = random.Random(seed)
    queries: list[str] = []
    for n in range(count):
        word = rnd.choice(rnd.choice(corpus.rare))
        kind = n % 4
        if kind == 0:
            queries.append(word)
        elif kind == 1:
            queries.append(word[1:-1])
        elif kind == 2:
            queries.append(word[:4].title())
        else:
            queries.append(f"{rnd.choice(corpus.common[:20])} {word}")
    return queries


@asynccontextmanager
async def _store(database_url: str | None) -> AsyncIterator[Store]:
    """A migrated store on the given database, or on a throw-away SQLite file."""
    with tempfile.TemporaryDirectory(prefix="storyteller-bench-") as tmp:
        store = Store.open(
            database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'search.db'}", clock=SystemClock()
        )
        try:
            await store.db.upgrade()
            yield store
        finally:
            await store.close()


def _ms_since(began: float) -> float:
    return (time.perf_counter() - began) * 1000


@contextmanager
def _collector_frozen() -> Iterator[None]:
    """Keep the corpus held in memory out of the garbage collector's passes while timing.

    The benchmark itself holds every document twice; a daemon holds none, so collections
    walking them would charge both the search and the scan for the benchmark's own memory.
    """
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


async def run_search_bench(
    documents: int, queries: int, database_url: str | None
) -> dict[str, object]:
    """Index, search, scan; the report's rows.

    Args:
        documents: how many documents to index.
        queries: how many searches to time (each also as a linear scan).
        database_url: a database to use instead of a throw-away SQLite file.
    """
    corpus = make_corpus(documents, tag=secrets.token_hex(3))
    asked = make_queries(corpus, queries)
    async with _store(database_url) as store:
        began = time.perf_counter()
        created = await store.references.create_many(corpus.documents)
        indexing = time.perf_counter() - began
        try:
            held = await store.references.list()
            with _collector_frozen():
                await store.references.search(asked[0], visible_to=VIEWER)  # warm-up, untimed
                timings, results = [], []
                for query in asked:
                    began = time.perf_counter()
                    docs = await store.references.search(query, visible_to=VIEWER)
                    timings.append(_ms_since(began))
                    results.append({d.id for d in docs})
                linear, scanned = [], []
                for query in asked:
                    began = time.perf_counter()
                    matched = [d for d in held if d.is_visible_to(VIEWER) and d.matches(query)]
                    linear.append(_ms_since(began))
                    scanned.append({d.id for d in matched})
        finally:
            if database_url is not None:  # the throw-away file goes as a whole
                await store.references.delete_many(d.id for d in created if d.id is not None)
        dialect = store.db.dialect
    hits = sum(map(len, results))
    missed = sum(len(want - got) for want, got in zip(scanned, results, strict=True))
    p95, linear_p95 = percentile(timings, 0.95), percentile(linear, 0.95)
    return {
        "database": dialect,
        "documents": documents,
        "indexing documents per second": round(documents / indexing),
        "queries": queries,
        "mean hits per query": round(hits / queries, 1),
        "p50 ms": round(statistics.median(timings), 2),
        "p95 ms": round(p95, 2),
        "max ms": round(max(timings), 2),
        "linear p95 ms": round(linear_p95, 2),
        "speed-up vs linear": round(linear_p95 / p95, 1) if p95 else 0,
        "linear matches missed": missed,
    }
