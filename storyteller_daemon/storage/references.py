"""Reference documents and their full-text search.

Search guarantees FutureMUD's semantics as a floor: every term must appear (case-insensitively)
in one of the six text fields, and a blank query lists everything. On top of that the
database's own engine adds stemming and ranking: SQLite FTS5 (bm25) or PostgreSQL tsvector
(ts_rank_cd). Documents found by the engine come first, by rank; documents that only match by
substring follow, by name.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterable
from dataclasses import replace

from sqlalchemy import delete, func, or_, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.domain.references import ReferenceDocument, search_terms
from storyteller_daemon.errors import ConflictError, NotFoundError, ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models import ReferenceDocumentRow, ReferenceRestrictionRow
from storyteller_daemon.storage.storytellers import Clock, name_key, utc_now

_WORD = re.compile(r"\w+", re.UNICODE)
_FIELDS = (
    ReferenceDocumentRow.name,
    ReferenceDocumentRow.description,
    ReferenceDocumentRow.folder,
    ReferenceDocumentRow.doc_type,
    ReferenceDocumentRow.keywords,
    ReferenceDocumentRow.contents,
)


def to_domain(row: ReferenceDocumentRow) -> ReferenceDocument:
    """Row → `ReferenceDocument`."""
    return ReferenceDocument(
        id=row.id,
        name=row.name,
        description=row.description,
        folder=row.folder,
        doc_type=row.doc_type,
        keywords=row.keywords,
        contents=row.contents,
        restricted_to=frozenset(r.storyteller_id for r in row.restrictions),
    )


def apply_to_row(row: ReferenceDocumentRow, doc: ReferenceDocument) -> None:
    row.name, row.name_key = doc.name.strip(), name_key(doc.name)
    row.description, row.folder, row.doc_type = doc.description, doc.folder, doc.doc_type
    row.keywords, row.contents = doc.keywords, doc.contents
    keep = [r for r in row.restrictions if r.storyteller_id in doc.restricted_to]
    have = {r.storyteller_id for r in keep}
    keep.extend(ReferenceRestrictionRow(storyteller_id=i) for i in sorted(doc.restricted_to - have))
    row.restrictions = keep


def _fts5_query(terms: Iterable[str]) -> str | None:
    """AND of prefix terms, each quoted so FTS5 syntax in user text is inert."""
    words = [w for t in terms for w in _WORD.findall(t)]
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"*' for w in words)


def _tsquery(terms: Iterable[str]) -> str | None:
    """AND of prefix lexemes for to_tsquery; only word characters survive."""
    words = [w.lower() for t in terms for w in _WORD.findall(t)]
    if not words:
        return None
    return " & ".join(f"'{w}':*" for w in words)


class ReferenceRepository:
    """Create, find, change, delete and search reference documents."""

    def __init__(self, db: Database, clock: Clock = utc_now) -> None:
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
    async def _check_name_free(session: AsyncSession, name: str, own_id: int | None) -> None:
        if not name.strip():
            raise ValidationError("A reference document needs a non-blank name.")
        clash = (
            await session.execute(
                select(ReferenceDocumentRow.id).where(
                    ReferenceDocumentRow.name_key == name_key(name)
                )
            )
        ).scalar_one_or_none()
        if clash is not None and clash != own_id:
            raise ConflictError(f"A reference document named '{name.strip()}' already exists.")

    async def create(self, doc: ReferenceDocument) -> ReferenceDocument:
        """Insert a document (its name must be unique, case-insensitively)."""
        async with self._db.session() as session:
            await self._check_name_free(session, doc.name, None)
            now = self._clock()
            row = ReferenceDocumentRow(created_on=now, updated_on=now)
            row.restrictions = []
            apply_to_row(row, doc)
            session.add(row)
            await session.flush()
            return to_domain(row)

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
            row.updated_on = self._clock()
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

    async def clone(self, ref: str | int, new_name: str) -> ReferenceDocument:
        """A copy under a new name, with the same visibility."""
        source = await self.get(ref)
        return await self.create(replace(source, id=None, name=new_name))

    async def list(self, visible_to: int | None = None) -> list[ReferenceDocument]:
        """Every document by id, or those a storyteller may see."""
        async with self._db.session() as session:
            rows = (
                await session.execute(
                    select(ReferenceDocumentRow).order_by(ReferenceDocumentRow.id)
                )
            ).scalars()
            docs = [to_domain(r) for r in rows]
        if visible_to is not None:
            docs = [d for d in docs if d.is_visible_to(visible_to)]
        return docs

    async def _engine_ranked_ids(
        self, session: AsyncSession, terms: builtins.list[str]
    ) -> builtins.list[int]:
        if self._db.dialect == "sqlite":
            query = _fts5_query(terms)
            if query is None:
                return []
            result = await session.execute(
                text(
                    "SELECT rowid FROM reference_documents_fts WHERE reference_documents_fts "
                    "MATCH :q ORDER BY bm25(reference_documents_fts, 10.0, 4.0, 1.0, 1.0, 8.0, 1.0)"
                ),
                {"q": query},
            )
        else:
            tsq = _tsquery(terms)
            if tsq is None:
                return []
            result = await session.execute(
                text(
                    "SELECT id FROM reference_documents "
                    "WHERE search_vector @@ to_tsquery('english', :q) "
                    "ORDER BY ts_rank_cd(search_vector, to_tsquery('english', :q)) DESC, id"
                ),
                {"q": tsq},
            )
        return [int(r[0]) for r in result]

    async def search(
        self, query: str | None, *, visible_to: int | None = None
    ) -> builtins.list[ReferenceDocument]:
        """Documents matching every term, best first; a blank query lists all (by id)."""
        terms = search_terms(query)
        if not terms:
            return await self.list(visible_to=visible_to)
        async with self._db.session() as session:
            ranked = await self._engine_ranked_ids(session, terms)
            candidates = select(ReferenceDocumentRow)
            if all(t.isascii() for t in terms):
                # SQL lower() folds ASCII only; other terms are checked in Python below.
                candidates = candidates.where(
                    *(
                        or_(*(func.lower(c).contains(t.lower(), autoescape=True) for c in _FIELDS))
                        for t in terms
                    )
                )
            floor_rows = (await session.execute(candidates)).scalars().all()
            ranked_rows = (
                await session.execute(
                    select(ReferenceDocumentRow).where(ReferenceDocumentRow.id.in_(ranked))
                )
            ).scalars()
            by_id = {r.id: to_domain(r) for r in [*floor_rows, *ranked_rows]}
        visible = {
            i: d for i, d in by_id.items() if visible_to is None or d.is_visible_to(visible_to)
        }
        ordered = [visible[i] for i in ranked if i in visible]
        seen = {d.id for d in ordered}
        floor = sorted(
            (d for d in visible.values() if d.id not in seen and d.matches(query)),
            key=lambda d: d.name.lower(),
        )
        return ordered + floor
