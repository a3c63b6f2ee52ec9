"""The queries behind reference search: visibility, ranked word matches, substring candidates.

Two indexes serve a search; both come from migrations and are not modelled.

- The word engine (migration 0002) finds whole words and their stems, ranked: SQLite FTS5 with
  the porter tokenizer (bm25), PostgreSQL a weighted ``tsvector`` (``ts_rank_cd``).
- The trigram index (migration 0009) narrows FutureMUD's substring semantics to candidates:
  SQLite FTS5 with the trigram tokenizer, where each quoted term matches where it occurs as a
  substring of one field; PostgreSQL ``pg_trgm`` over the six fields joined by spaces, which
  serves ``ILIKE '%term%'``. Only ASCII terms of three or more characters go to it: shorter
  ones have no trigram, and other terms fold differently in the database than in Python. With
  no such term the candidates are every visible document that holds each ASCII term (an
  unindexed scan). The caller checks every candidate with `ReferenceDocument.matches`.

Visibility is part of every statement: a storyteller sees the documents with no restriction
rows and those with a row naming it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import (
    BigInteger,
    BindParameter,
    ColumnClause,
    ColumnElement,
    Select,
    String,
    Text,
    bindparam,
    exists,
    func,
    literal,
    literal_column,
    null,
    or_,
    select,
    table,
    union_all,
)
from sqlalchemy.orm import aliased

from storyteller_daemon.storage.models.references import (
    ReferenceDocumentRow,
    ReferenceRestrictionRow,
)

_TRIGRAM = 3
"""Shortest term the trigram index can find."""

_WORD = re.compile(r"\w+", re.UNICODE)
_FIELDS = (
    ReferenceDocumentRow.name,
    ReferenceDocumentRow.description,
    ReferenceDocumentRow.folder,
    ReferenceDocumentRow.doc_type,
    ReferenceDocumentRow.keywords,
    ReferenceDocumentRow.contents,
)
_WORDS_TABLE = "reference_documents_fts"
_TRIGRAM_TABLE = "reference_documents_fts_trigram"
_BM25_WEIGHTS = (10.0, 4.0, 1.0, 1.0, 8.0, 1.0)
# The expression the PostgreSQL trigram index is built on, written as the migration writes it.
_JOINED_FIELDS: ColumnClause[str] = literal_column(
    "(reference_documents.name || ' ' || reference_documents.description || ' ' || "
    "reference_documents.folder || ' ' || reference_documents.doc_type || ' ' || "
    "reference_documents.keywords || ' ' || reference_documents.contents)",
    Text(),
)
_SEARCH_VECTOR: ColumnClause[Any] = literal_column("reference_documents.search_vector")


def visible(storyteller_id: int | BindParameter[int]) -> ColumnElement[bool]:
    """Documents without restriction rows, or with one for `storyteller_id`."""
    restriction = aliased(ReferenceRestrictionRow)  # the statement may join the table itself
    return or_(
        ~exists().where(restriction.document_id == ReferenceDocumentRow.id),
        exists().where(
            restriction.document_id == ReferenceDocumentRow.id,
            restriction.storyteller_id == storyteller_id,
        ),
    )


def documents(visible_to: int | None) -> Select[ReferenceDocumentRow]:
    """Every document, or those `visible_to` may see."""
    statement = select(ReferenceDocumentRow)
    return statement if visible_to is None else statement.where(visible(visible_to))


def _quoted(term: str) -> str:
    """An FTS5 string: user text inside it is never query syntax."""
    return '"' + term.replace('"', '""') + '"'


def _words_query(dialect: str, terms: Sequence[str]) -> str | None:
    """The word engine's query: an AND of prefix words; None when the terms hold no word.

    SQLite gets quoted FTS5 strings, PostgreSQL ``to_tsquery`` lexemes of word characters.
    """
    words = [w for t in terms for w in _WORD.findall(t)]
    if not words:
        return None
    if dialect == "sqlite":
        return " ".join(_quoted(w) + "*" for w in words)
    return " & ".join(f"'{w.lower()}':*" for w in words)


def _like_pattern(term: str) -> str:
    """``%term%`` for ``LIKE``/``ILIKE`` with the escape character ``\\``."""
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _ranked_ids(dialect: str) -> Select[Any]:
    """Ids the word engine matches ``:words`` with, as ``id`` and ``score`` (higher is better)."""
    words = bindparam("words", type_=String())
    if dialect == "sqlite":
        index: ColumnClause[Any] = literal_column(_WORDS_TABLE)
        return (
            select(
                literal_column("rowid").label("id"),
                (-func.bm25(index, *map(literal, _BM25_WEIGHTS))).label("score"),
            )
            .select_from(table(_WORDS_TABLE))
            .where(index.op("MATCH")(words))
        )
    tsquery = func.to_tsquery(literal_column("'english'"), words)
    return select(
        ReferenceDocumentRow.id.label("id"),
        func.ts_rank_cd(_SEARCH_VECTOR, tsquery).label("score"),
    ).where(_SEARCH_VECTOR.op("@@")(tsquery))


def _candidate_ids(dialect: str, indexed: bool, patterns: int) -> Select[Any]:
    """Ids of documents that may hold every term: a superset of the exact matches.

    With `indexed`, the trigram index answers: on SQLite ``:trigrams`` (one MATCH query), on
    PostgreSQL ``:pattern_0``... (one ``ILIKE`` each). Without, every document is scanned for
    ``:pattern_0``... in lower-cased fields.
    """
    like = [bindparam(f"pattern_{i}", type_=String()) for i in range(patterns)]
    if not indexed:
        return select(ReferenceDocumentRow.id.label("id")).where(
            *(or_(*(func.lower(f).like(p, escape="\\") for f in _FIELDS)) for p in like)
        )
    if dialect == "sqlite":
        index: ColumnClause[Any] = literal_column(_TRIGRAM_TABLE)
        return (
            select(literal_column("rowid").label("id"))
            .select_from(table(_TRIGRAM_TABLE))
            .where(index.op("MATCH")(bindparam("trigrams", type_=String())))
        )
    return select(ReferenceDocumentRow.id.label("id")).where(
        *(_JOINED_FIELDS.ilike(p, escape="\\") for p in like)
    )


@functools.lru_cache(maxsize=64)
def _statement(
    dialect: str, ranked: bool, indexed: bool, patterns: int, restricted: bool
) -> Select[Any]:
    """The statement of one shape of search, built once (see `found`)."""
    candidates = _candidate_ids(dialect, indexed, patterns).add_columns(null().label("score"))
    hits = (union_all(_ranked_ids(dialect), candidates) if ranked else candidates).subquery()
    statement = (
        select(
            ReferenceDocumentRow.id,
            *_FIELDS,
            hits.c.score,
            ReferenceRestrictionRow.storyteller_id,
        )
        .select_from(hits)
        .join(ReferenceDocumentRow, ReferenceDocumentRow.id == hits.c.id)
        .outerjoin(
            ReferenceRestrictionRow,
            ReferenceRestrictionRow.document_id == ReferenceDocumentRow.id,
        )
    )
    if restricted:
        statement = statement.where(visible(bindparam("viewer", type_=BigInteger())))
    return statement


def found(
    dialect: str, terms: Sequence[str], visible_to: int | None
) -> tuple[Select[Any], dict[str, object]]:
    """One statement and its parameters for a search: word matches and substring candidates.

    Rows hold a document's columns, its ``score`` (higher is better; None for a candidate) and
    one ``storyteller_id`` it is restricted to (None when it has none). A document comes once
    per restriction, and twice over when it is both ranked and a candidate.
    """
    words = _words_query(dialect, terms)
    indexed = [t for t in terms if t.isascii() and len(t) >= _TRIGRAM]
    # SQL lower() folds ASCII only; the other terms are left to the exact check.
    patterns = [_like_pattern(t.lower()) for t in (indexed or terms) if t.isascii()]
    params: dict[str, object] = {"words": words, "viewer": visible_to}
    if indexed and dialect == "sqlite":
        params["trigrams"] = " ".join(map(_quoted, indexed))
        patterns = []
    params.update((f"pattern_{i}", p) for i, p in enumerate(patterns))
    shape = _statement(
        dialect, words is not None, bool(indexed), len(patterns), visible_to is not None
    )
    return shape, params
