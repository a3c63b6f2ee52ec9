"""The queries that offer a turn's memory candidates, each answered from an index.

A storyteller may keep tens of thousands of memories; a prompt shows a few dozen. The candidates
(`domain.memory_ranking`) are the union of five short lists, each read in index order and cut
at a limit:

- the best matches of the trigger's words in the memory word index, any word matching, each
  also as a prefix: SQLite FTS5 (migration 0010; bm25, the title weighted double), PostgreSQL
  the GIN index over a stored 'simple' ``tsvector`` with the title weighted above the text
  (migration 0012; ``ts_rank`` of the newest `RANKED_MATCHES` matches);
- the newest changed memories about the characters the trigger involves
  (``ix_character_memories_character``);
- the newest written, the newest changed and the most important memories overall
  (migration 0012's indexes).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import (
    ColumnClause,
    Select,
    String,
    bindparam,
    func,
    literal,
    literal_column,
    select,
    table,
)

from storyteller_daemon.storage.models.story import MemoryRow

WORDS_TABLE = "character_memories_fts"
# PostgreSQL's stored word vector (migration 0012): the title weighted A, the text D.
_VECTOR: ColumnClause[Any] = literal_column("character_memories.search_vector")
RANKED_MATCHES = 500
"""On PostgreSQL, the newest matches of the trigger's words that are ranked, so a common word
costs the same however many memories hold it; FTS5 ranks every match inside its index."""
_MEMORIES = MemoryRow.__table__
_COLUMNS = tuple(_MEMORIES.c)


def _match_query(dialect: str, words: Sequence[str]) -> str:
    """Any of `words`, each also as a prefix: an FTS5 query, or a ``to_tsquery`` text.

    The words are runs of word characters (`domain.memory_ranking.query_words`); they are
    quoted all the same, so no word is ever query syntax.
    """
    if dialect == "sqlite":
        return " OR ".join('"' + w.replace('"', '""') + '"*' for w in words)
    return " | ".join("'" + w.replace("'", "").replace("\\", "") + "':*" for w in words)


def word_matches(
    dialect: str, storyteller_id: int, words: Sequence[str], limit: int
) -> tuple[Select[Any], dict[str, object]]:
    """The `limit` best matches of `words` (any of them), with their score as ``words``."""
    query = bindparam("query", type_=String())
    if dialect == "sqlite":
        index: ColumnClause[Any] = literal_column(WORDS_TABLE)
        score = (-func.bm25(index, literal(2.0), literal(1.0))).label("words")
        statement = (
            select(*_COLUMNS, score)
            .select_from(table(WORDS_TABLE))
            .join(_MEMORIES, MemoryRow.id == literal_column(f"{WORDS_TABLE}.rowid"))
            .where(index.op("MATCH")(query))
        )
        statement = statement.where(MemoryRow.storyteller_id == storyteller_id)
    else:
        tsquery = func.to_tsquery(literal_column("'simple'"), query)
        matched = (
            select(MemoryRow.id)
            .where(MemoryRow.storyteller_id == storyteller_id)
            .where(_VECTOR.op("@@")(tsquery))
            .order_by(MemoryRow.id.desc())
            .limit(RANKED_MATCHES)
            .subquery()
        )
        score = func.ts_rank(_VECTOR, tsquery).label("words")
        statement = select(*_COLUMNS, score).join(matched, MemoryRow.id == matched.c.id)
    statement = statement.order_by(score.desc(), MemoryRow.id.desc()).limit(limit)
    return statement, {"query": _match_query(dialect, words)}


def about_characters(
    storyteller_id: int, character_ids: Collection[int], limit: int
) -> Select[Any]:
    """The newest changed memories about any of `character_ids`."""
    changed = func.coalesce(MemoryRow.updated_on, MemoryRow.created_on)
    return (
        select(*_COLUMNS)
        .where(MemoryRow.storyteller_id == storyteller_id)
        .where(MemoryRow.character_id.in_(sorted(character_ids)))
        .order_by(changed.desc(), MemoryRow.id.desc())
        .limit(limit)
    )


def newest_written(storyteller_id: int, limit: int) -> Select[Any]:
    """The memories written last."""
    return (
        select(*_COLUMNS)
        .where(MemoryRow.storyteller_id == storyteller_id)
        .order_by(MemoryRow.created_on.desc(), MemoryRow.id.desc())
        .limit(limit)
    )


def newest_changed(storyteller_id: int, limit: int) -> Select[Any]:
    """The memories changed last (never-changed ones have no change time)."""
    return (
        select(*_COLUMNS)
        .where(MemoryRow.storyteller_id == storyteller_id)
        .where(MemoryRow.updated_on.is_not(None))
        .order_by(MemoryRow.updated_on.desc(), MemoryRow.id.desc())
        .limit(limit)
    )


def most_important(storyteller_id: int, limit: int) -> Select[Any]:
    """The most important memories, the newest first among equals."""
    return (
        select(*_COLUMNS)
        .where(MemoryRow.storyteller_id == storyteller_id)
        .order_by(MemoryRow.importance.desc(), MemoryRow.created_on.desc(), MemoryRow.id.desc())
        .limit(limit)
    )
