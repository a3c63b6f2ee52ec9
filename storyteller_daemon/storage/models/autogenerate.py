"""What alembic's autogenerate must not compare: the search objects migrations create by hand."""

from __future__ import annotations

# Objects the migrations create per dialect with raw SQL (full-text search) are not modelled;
# autogenerate must not propose dropping them.
_FTS_TABLE_PREFIXES = ("reference_documents_fts", "character_memories_fts")
_SEARCH_INDEXES = frozenset(
    {
        "ix_reference_documents_search",
        "ix_reference_documents_trigram",
        "ix_character_memories_words",
    }
)


def autogenerate_include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Hide the SQLite FTS5 tables and the PostgreSQL search column from autogenerate."""
    if type_ == "table" and name and name.startswith(_FTS_TABLE_PREFIXES):
        return False
    return not (type_ == "column" and name == "search_vector")


def autogenerate_include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Hide the PostgreSQL GIN indexes of reference search from autogenerate."""
    return not (type_ == "index" and name in _SEARCH_INDEXES)
