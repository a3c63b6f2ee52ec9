"""Gathering what is held about one character: the rows that are theirs, and their texts.

The rows that are the character's own are found by id: memories and their edit history, the
situations scoped to them, the speech lines they said or that were said to them, the stored
events and backlog triggers that name them. Their *texts* (what the rest of the database is
searched for) come from those rows and from the stored JSON documents that describe them: their
words and names in world events, and what the world said about them in run records (a
``PlayerInformation`` answer, say). An admin may add more (``--also``): a nickname, a first name
the storyteller used alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import QueryableAttribute

from storyteller_daemon.domain.character_data import HeldEvent
from storyteller_daemon.domain.redaction import Redactor, character_texts, worth_finding
from storyteller_daemon.domain.text import BLANK_FIELD
from storyteller_daemon.storage.models.records import RunRow
from storyteller_daemon.storage.models.story import MemoryEditRow, MemoryRow, SituationRow
from storyteller_daemon.storage.models.storytellers import StorytellerRow
from storyteller_daemon.storage.models.work import WorkRow
from storyteller_daemon.storage.models.world import InboxRow, SpeechRow


@dataclass
class Held:
    """The character's own rows, and the texts to look for elsewhere."""

    character_id: int
    memories: list[MemoryRow] = field(default_factory=list)
    edits: list[MemoryEditRow] = field(default_factory=list)
    situations: list[SituationRow] = field(default_factory=list)
    speech: list[SpeechRow] = field(default_factory=list)
    events: list[HeldEvent] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)

    def add_name(self, value: str | None) -> None:
        if value and value.strip() != BLANK_FIELD and worth_finding(value, name=True):
            self.names.add(value)

    def add_text(self, value: str | None) -> None:
        if value and value.strip() != BLANK_FIELD and worth_finding(value):
            self.texts.add(value)

    def redactor(self) -> Redactor:
        """A redactor for every text gathered, and the character's id."""
        return Redactor(self.names | self.texts, self.character_id)

    @property
    def storyteller_ids(self) -> set[int]:
        found = {m.storyteller_id for m in self.memories} | {e.storyteller_id for e in self.edits}
        found |= {s.storyteller_id for s in self.situations}
        return found | {e.storyteller_id for e in self.events if e.storyteller_id is not None}


def _digits(column: QueryableAttribute[str], character_id: int) -> ColumnElement[bool]:
    """A cheap first filter: the stored text holds the id's digits somewhere."""
    return column.contains(str(character_id))


async def gather(session: AsyncSession, character_id: int, also: Sequence[str] = ()) -> Held:
    """The character's rows and texts (`also` added to the names looked for)."""
    held = Held(character_id)
    held.memories = list(
        await session.scalars(
            select(MemoryRow)
            .where(MemoryRow.character_id == character_id)
            .order_by(MemoryRow.storyteller_id, MemoryRow.created_on, MemoryRow.id)
        )
    )
    held.edits = list(
        await session.scalars(
            select(MemoryEditRow)
            .where(MemoryEditRow.character_id == character_id)
            .order_by(MemoryEditRow.at, MemoryEditRow.id)
        )
    )
    held.situations = list(
        await session.scalars(
            select(SituationRow)
            .where(SituationRow.scope_character_id == character_id)
            .order_by(SituationRow.storyteller_id, SituationRow.created_on, SituationRow.id)
        )
    )
    held.speech = list(
        await session.scalars(
            select(SpeechRow)
            .where(or_(SpeechRow.speaker_id == character_id, SpeechRow.target_id == character_id))
            .order_by(SpeechRow.occurred_at, SpeechRow.id)
        )
    )
    for memory in held.memories:
        held.add_text(memory.title)
        held.add_text(memory.text)
    for edit in held.edits:
        for value in (edit.title_before, edit.text_before, edit.title_after, edit.text_after):
            held.add_text(value)
    for situation in held.situations:
        held.add_text(situation.title)
        held.add_text(situation.text)
    for line in held.speech:
        if line.speaker_id == character_id:
            held.add_name(line.speaker_name)
            held.add_text(line.message)
        if line.target_id == character_id:
            held.add_name(line.target_description)
    for name in also:
        held.add_name(name)
    await _gather_documents(session, held)
    return held


async def _gather_documents(session: AsyncSession, held: Held) -> None:
    """Events and triggers naming the character, and the texts stored JSON holds about them."""
    ids_only = Redactor((), held.character_id)
    inbox = await session.scalars(
        select(InboxRow).where(_digits(InboxRow.payload, held.character_id)).order_by(InboxRow.id)
    )
    for row in inbox:
        payload = _document(row.payload)
        if ids_only.scrub(row.payload)[1]:
            state = "dispatched" if row.dispatched else "pending"
            held.events.append(HeldEvent("inbox", row.id, state, None, payload))
        _take_texts(held, payload)
    work = await session.scalars(
        select(WorkRow).where(_digits(WorkRow.payload, held.character_id)).order_by(WorkRow.id)
    )
    for item in work:
        payload = _document(item.payload)
        if ids_only.scrub(item.payload)[1]:
            held.events.append(
                HeldEvent("backlog", item.id, item.state, item.storyteller_id, payload)
            )
        _take_texts(held, payload)
    records = await session.scalars(
        select(RunRow.record).where(_digits(RunRow.record, held.character_id))
    )
    for record in records:
        _take_texts(held, _document(record))


def _document(value: str) -> object:
    try:
        parsed: object = json.loads(value)
    except ValueError:
        return value
    return parsed


def _take_texts(held: Held, document: object) -> None:
    names, texts = character_texts(document, held.character_id)
    for name in names:
        held.add_name(name)
    for value in texts:
        held.add_text(value)


async def storyteller_names(session: AsyncSession, ids: Iterable[int]) -> dict[int, str]:
    """Storyteller id → name, for the ids that still name a storyteller."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    rows = await session.execute(
        select(StorytellerRow.id, StorytellerRow.name).where(StorytellerRow.id.in_(wanted))
    )
    return {row[0]: row[1] for row in rows}
