"""Reference documents: storage, bulk loading and search.

Search guarantees FutureMUD's semantics as a floor: every term must appear (case-insensitively)
in one of the six text fields, and a blank query lists everything. On top of that the
database's own engine adds stemming and ranking: SQLite FTS5 (bm25) or PostgreSQL tsvector
(ts_rank_cd). Documents found by the engine come first, by rank; documents that only match by
substring follow, by name. A trigram index supplies the substring candidates, and each one is
checked with `ReferenceDocument.matches`, so the index never changes what matches
(`reference_search` has the queries). Visibility is applied in the queries.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Row, delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.references import (
    ReferenceDocument,
    ReferenceHit,
    search_terms,
    snippet,
)
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError
from storyteller_daemon.storage import reference_search
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.references import (
    ReferenceDocumentRow,
    ReferenceRestrictionRow,
)

_PER_STATEMENT = 500
"""Names or ids a batch puts in one statement (SQLite bounds the bound parameters)."""


def _document(row: Any, restricted_to: Iterable[int]) -> ReferenceDocument:
    """A document from anything with its columns as attributes (a model row, a result row)."""
    return ReferenceDocument(
        id=row.id,
        name=row.name,
        description=row.description,
        folder=row.folder,
        doc_type=row.doc_type,
        keywords=row.keywords,
        contents=row.contents,
        restricted_to=frozenset(restricted_to),
    )


def to_domain(row: ReferenceDocumentRow) -> ReferenceDocument:
    """Row → `ReferenceDocument`."""
    return _document(row, (r.storyteller_id for r in row.restrictions))


def _read_found(
    rows: Iterable[Row[Any]],
) -> tuple[builtins.list[ReferenceDocument], builtins.list[ReferenceDocument]]:
    """The rows of `reference_search.found` as (ranked documents, best first; candidates)."""
    first: dict[int, Row[Any]] = {}
    scores: dict[int, float] = {}
    allowed: dict[int, set[int]] = {}
    for row in rows:
        first.setdefault(row.id, row)
        allowed.setdefault(row.id, set())
        if row.score is not None:
            scores[row.id] = row.score
        if row.storyteller_id is not None:
            allowed[row.id].add(row.storyteller_id)
    docs = {i: _document(row, allowed[i]) for i, row in first.items()}
    ranked = [docs[i] for i in sorted(scores, key=lambda i: (-scores[i], i))]
    return ranked, [d for i, d in docs.items() if i not in scores]


def _columns(doc: ReferenceDocument) -> dict[str, str]:
    """The stored text columns of a document."""
    return {
        "name": doc.name.strip(),
        "name_key": name_key(doc.name),
        "description": doc.description,
        "folder": doc.folder,
        "doc_type": doc.doc_type,
        "keywords": doc.keywords,
        "contents": doc.contents,
    }


def apply_to_row(row: ReferenceDocumentRow, doc: ReferenceDocument) -> None:
    """Write a document's fields and restrictions onto an existing row."""
    for column, value in _columns(doc).items():
        setattr(row, column, value)
    keep = [r for r in row.restrictions if r.storyteller_id in doc.restricted_to]
    have = {r.storyteller_id for r in keep}
    keep.extend(ReferenceRestrictionRow(storyteller_id=i) for i in sorted(doc.restricted_to - have))
    row.restrictions = keep


def _key_of(name: str) -> str:
    """The name's key; raise on a blank name."""
    if not name.strip():
        raise ValidationError("A reference document needs a non-blank name.")
    return name_key(name)


def _taken(name: str) -> ConflictError:
    """The error for a name another document has."""
    return ConflictError(f"A reference document named '{name.strip()}' already exists.")


def _batch_names(docs: Sequence[ReferenceDocument]) -> dict[str, str]:
    """Name key → name of each doc, in order; raise on a blank name or a name used twice."""
    seen: dict[str, str] = {}
    for doc in docs:
        key = _key_of(doc.name)
        if key in seen:
            raise ConflictError(
                f"Two reference documents are named '{seen[key]}' and '{doc.name.strip()}'."
            )
        seen[key] = doc.name.strip()
    return seen


async def insert_documents(
    session: AsyncSession, docs: Sequence[ReferenceDocument], now: datetime
) -> builtins.list[ReferenceDocument]:
    """Insert new documents with their restrictions in the session's transaction.

    Multi-row statements keep the index triggers cheap. Names must be unique
    (case-insensitively) within `docs` and against the database.

    Returns:
        The documents as stored, with their ids, in the order given.

    Raises:
        ConflictError: a name is taken or used twice; nothing is inserted.
        ValidationError: a name is blank.
    """
    names = _batch_names(docs)
    keys = list(names)
    for at in range(0, len(keys), _PER_STATEMENT):
        taken = (
            await session.execute(
                select(ReferenceDocumentRow.name_key)
                .where(ReferenceDocumentRow.name_key.in_(keys[at : at + _PER_STATEMENT]))
                .limit(1)
            )
        ).scalar_one_or_none()
        if taken is not None:
            raise _taken(names[taken])
    if not docs:
        return []
    inserted = await session.execute(
        insert(ReferenceDocumentRow).returning(
            ReferenceDocumentRow.name_key, ReferenceDocumentRow.id
        ),
        [{**_columns(d), "created_on": now, "updated_on": now} for d in docs],
    )
    # Keys, not positions: a multi-row INSERT does not promise RETURNING's order.
    id_by_key: dict[str, int] = dict(inserted.all())
    ids = [id_by_key[k] for k in keys]
    allowed = [
        {"document_id": i, "storyteller_id": s}
        for i, d in zip(ids, docs, strict=True)
        for s in sorted(d.restricted_to)
    ]
    if allowed:
        await session.execute(insert(ReferenceRestrictionRow), allowed)
    return [replace(d, id=i, name=d.name.strip()) for i, d in zip(ids, docs, strict=True)]


class ReferenceRepository:
    """Create, find, change, delete and search reference documents."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    @staticmethod
    async def _find(session: AsyncSession, ref: str | int) -> ReferenceDocumentRow:
        text_ref = str(ref).strip()
        row: ReferenceDocumentRow | None = None
        if text_ref.isdigit():
            row = await session.get(ReferenceDocumentRow, int(text_ref))
        if row is None:
            row = (
                await session.execute(
                    select(ReferenceDocumentRow).where(
                        ReferenceDocumentRow.name_key == name_key(text_ref)
                    )
                )
            ).scalar_one_or_none()
        if row is None:
            raise NotFoundError(f"No reference document with id or name '{text_ref}' exists.")
        return row

    @staticmethod
    async def _check_name_free(session: AsyncSession, name: str, own_id: int) -> None:
        clash = (
            await session.execute(
                select(ReferenceDocumentRow.id).where(
                    ReferenceDocumentRow.name_key == _key_of(name)
                )
            )
        ).scalar_one_or_none()
        if clash is not None and clash != own_id:
            raise _taken(name)

    async def create(self, doc: ReferenceDocument) -> ReferenceDocument:
        """Insert a document (its name must be unique, case-insensitively)."""
        [created] = await self.create_many([doc])
        return created

    async def create_many(
        self, docs: Sequence[ReferenceDocument]
    ) -> builtins.list[ReferenceDocument]:
        """Insert many documents in one transaction: all of them, or none on a clash.

        Returns:
            The documents as stored, with their ids, in the order given.

        Raises:
            ConflictError: a name is taken or used twice in `docs` (case-insensitively).
            ValidationError: a name is blank.
        """
        async with self._db.session() as session:
            return await insert_documents(session, docs, self._clock.now())

    async def get(self, ref: str | int) -> ReferenceDocument:
        """A document by id or name."""
        async with self._db.session() as session:
            return to_domain(await self._find(session, ref))

    async def save(self, doc: ReferenceDocument) -> ReferenceDocument:
        """Write every field of an existing document."""
        if doc.id is None:
            raise ValidationError("Cannot save a reference document that was never created.")
        async with self._db.session() as session:
            row = await self._find(session, doc.id)
            await self._check_name_free(session, doc.name, row.id)
            apply_to_row(row, doc)
            row.updated_on = self._clock.now()
            await session.flush()
            return to_domain(row)

    async def delete(self, ref: str | int) -> ReferenceDocument:
        """Delete a document."""
        async with self._db.session() as session:
            row = await self._find(session, ref)
            gone = to_domain(row)
            await session.execute(
                delete(ReferenceDocumentRow).where(ReferenceDocumentRow.id == row.id)
            )
            return gone

    async def delete_many(self, ids: Iterable[int]) -> None:
        """Delete documents by id in one transaction; ids that name nothing are skipped."""
        wanted = sorted(set(ids))
        async with self._db.session() as session:
            for at in range(0, len(wanted), _PER_STATEMENT):
                chunk = wanted[at : at + _PER_STATEMENT]
                await session.execute(
                    delete(ReferenceDocumentRow).where(ReferenceDocumentRow.id.in_(chunk))
                )

    async def clone(self, ref: str | int, new_name: str) -> ReferenceDocument:
        """A copy under a new name, with the same visibility."""
        source = await self.get(ref)
        return await self.create(replace(source, id=None, name=new_name))

    async def list(self, visible_to: int | None = None) -> builtins.list[ReferenceDocument]:
        """Every document by id, or those a storyteller may see."""
        async with self._db.session() as session:
            rows = await session.scalars(
                reference_search.documents(visible_to).order_by(ReferenceDocumentRow.id)
            )
            return [to_domain(r) for r in rows]

    async def search(
        self, query: str | None, *, visible_to: int | None = None
    ) -> builtins.list[ReferenceDocument]:
        """Documents matching every term, best first; a blank query lists all (by id)."""
        terms = search_terms(query)
        if not terms:
            return await self.list(visible_to=visible_to)
        statement, params = reference_search.found(self._db.dialect, terms, visible_to)
        async with self._db.reading() as connection:
            ranked, candidates = _read_found(await connection.execute(statement, params))
        floor = (d for d in candidates if d.matches(query))
        return ranked + sorted(floor, key=lambda d: d.name.lower())

    async def search_hits(
        self, query: str | None, *, visible_to: int | None = None
    ) -> builtins.list[ReferenceHit]:
        """`search`, each document with a snippet of its contents around the first match."""
        terms = search_terms(query)
        return [
            ReferenceHit(d, snippet(d.contents, terms))
            for d in await self.search(query, visible_to=visible_to)
        ]
