"""Loading storyteller packs: compare a pack with the database and upsert by name.

`load_pack` matches storytellers and documents by name (case-insensitively), creates what is
missing, updates what differs and leaves the rest, all in one transaction, so a failure writes
nothing. A storyteller's pause state is only set when it is created: reloading a pack never
pauses or unpauses a running storyteller. Reading and validating a pack is
`interchange.packs`; this module takes the `Pack` it gives and never parses.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum

from sqlalchemy import select

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.names import name_key
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.interchange.packs.contents import Pack, PackDocument
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.references import ReferenceDocumentRow
from storyteller_daemon.storage.models.storytellers import StorytellerRow
from storyteller_daemon.storage.references import apply_to_row as apply_document_row
from storyteller_daemon.storage.references import insert_documents
from storyteller_daemon.storage.references import to_domain as document_to_domain
from storyteller_daemon.storage.storytellers import apply_to_row as apply_storyteller_row
from storyteller_daemon.storage.storytellers import to_domain as storyteller_to_domain

__all__ = ["Action", "Change", "LoadReport", "load_pack"]


# --------------------------------------------------------------------------- comparing and loading


class Action(StrEnum):
    """What loading does to one storyteller or document."""

    CREATE = "create"
    UPDATE = "update"
    UNCHANGED = "unchanged"


@dataclass(frozen=True)
class Change:
    """The outcome for one storyteller or document of a pack."""

    kind: str
    """``storyteller`` or ``document``."""
    name: str
    action: Action
    fields: tuple[str, ...] = ()
    """For an update, the names of the fields that differ."""


@dataclass(frozen=True)
class LoadReport:
    """Everything a load did (or, in a dry run, would do)."""

    pack: str
    dry_run: bool
    changes: tuple[Change, ...]

    def count(self, action: Action) -> int:
        """How many items get `action`."""
        return sum(1 for c in self.changes if c.action is action)

    @property
    def changed(self) -> bool:
        """True when anything is (or would be) created or updated."""
        return any(c.action is not Action.UNCHANGED for c in self.changes)


# Every setting is compared except identity, bookkeeping and `paused` (set on creation only).
STORYTELLER_FIELDS = tuple(
    f.name for f in fields(Storyteller) if f.name not in {"id", "paused", "revision", "created_on"}
)
# A document's restriction is compared by storyteller name, separately.
DOCUMENT_FIELDS = tuple(
    f.name for f in fields(ReferenceDocument) if f.name not in {"id", "restricted_to"}
)


def _comparable(st: Storyteller, field: str) -> object:
    value = getattr(st, field)
    if field == "status_progs":
        return dict(value)
    if field == "custom_tools":
        return sorted(value, key=lambda t: name_key(t.name))
    return value


def storyteller_differences(current: Storyteller, wanted: Storyteller) -> tuple[str, ...]:
    """The settings of `wanted` that differ from `current` (pause state excluded)."""
    return tuple(f for f in STORYTELLER_FIELDS if _comparable(current, f) != _comparable(wanted, f))


def _document_differences(
    current: ReferenceDocumentRow, wanted: PackDocument, key_by_id: dict[int, str]
) -> tuple[str, ...]:
    stored = document_to_domain(current)
    changed = [f for f in DOCUMENT_FIELDS if getattr(stored, f) != getattr(wanted.document, f)]
    # Ids of deleted storytellers match no name, so a re-created storyteller gets its documents.
    names = {key_by_id.get(i, f"#{i}") for i in stored.restricted_to}
    if names != {name_key(n) for n in wanted.restricted_to}:
        changed.append("restricted_to")
    return tuple(changed)


def _change(kind: str, name: str, row: object | None, changed: tuple[str, ...]) -> Change:
    if row is None:
        return Change(kind, name, Action.CREATE)
    return Change(kind, name, Action.UPDATE if changed else Action.UNCHANGED, changed)


def _new_storyteller_row(st: Storyteller, clock: Clock) -> StorytellerRow:
    now = clock.now()
    row = StorytellerRow(created_on=now, updated_on=now, revision=1)
    row.surveillance, row.tools = [], []
    apply_storyteller_row(row, st)
    return row


async def load_pack(db: Database, pack: Pack, *, clock: Clock, dry_run: bool = False) -> LoadReport:
    """Upsert a pack's storytellers and documents by name, in one transaction.

    Storytellers come first so that restricted documents can name their new ids. Nothing is
    written when nothing differs, so reloading an unchanged pack bumps no revision.

    Args:
        db: the database to load into (migrated).
        pack: a pack from `read_pack`.
        dry_run: only compare; write nothing.
        clock: the time stamped on created and updated rows.

    Returns:
        One `Change` per storyteller, then per document, in pack order.
    """
    async with db.session() as session:
        st_keys = [name_key(st.name) for st in pack.storytellers]
        st_rows = {
            r.name_key: r
            for r in await session.scalars(
                select(StorytellerRow).where(StorytellerRow.name_key.in_(st_keys))
            )
        }
        doc_keys = [name_key(d.document.name) for d in pack.documents]
        doc_rows = {
            r.name_key: r
            for r in await session.scalars(
                select(ReferenceDocumentRow).where(ReferenceDocumentRow.name_key.in_(doc_keys))
            )
        }
        all_storytellers = await session.execute(select(StorytellerRow.id, StorytellerRow.name_key))
        key_by_id = {row.id: row.name_key for row in all_storytellers}

        st_plan: list[tuple[Storyteller, StorytellerRow | None, tuple[str, ...]]] = []
        for st, key in zip(pack.storytellers, st_keys, strict=True):
            st_row = st_rows.get(key)
            current = None if st_row is None else storyteller_to_domain(st_row)
            st_plan.append((st, st_row, storyteller_differences(current, st) if current else ()))
        doc_plan: list[tuple[PackDocument, ReferenceDocumentRow | None, tuple[str, ...]]] = []
        for doc, key in zip(pack.documents, doc_keys, strict=True):
            doc_row = doc_rows.get(key)
            changed = () if doc_row is None else _document_differences(doc_row, doc, key_by_id)
            doc_plan.append((doc, doc_row, changed))
        changes = [_change("storyteller", st.name, r, c) for st, r, c in st_plan]
        changes += [_change("document", d.document.name, r, c) for d, r, c in doc_plan]
        report = LoadReport(pack=pack.name, dry_run=dry_run, changes=tuple(changes))
        if dry_run or not report.changed:
            return report

        ids = {k: r.id for k, r in st_rows.items()}
        for st, st_row, changed in st_plan:
            if st_row is None:
                st_row = _new_storyteller_row(st, clock)
                session.add(st_row)
                await session.flush()
                ids[name_key(st.name)] = st_row.id
            elif changed:
                apply_storyteller_row(st_row, replace(st, id=st_row.id, paused=st_row.paused))
                st_row.revision += 1
                st_row.updated_on = clock.now()

        new_documents: list[ReferenceDocument] = []
        for doc, doc_row, changed in doc_plan:
            allowed = frozenset(ids[name_key(n)] for n in doc.restricted_to)
            wanted = replace(doc.document, restricted_to=allowed)
            if doc_row is None:
                new_documents.append(wanted)
            elif changed:
                apply_document_row(doc_row, wanted)
                doc_row.updated_on = clock.now()
        await session.flush()
        await insert_documents(session, new_documents, clock.now())
    return report
