"""Exporting and erasing everything held about one character, both written to the audit log.

An export gathers the character's own rows (`character_holdings.gather`) and searches every text
column of every table for their texts and id (`sweep`), reporting where they are; it changes
nothing but the audit log. An erasure, in one transaction:

1. deletes the character's memories and their edit history, the situations scoped to them and
   the speech lines they said; unlinks speech said to them;
2. takes their id out of the policy's counted prog calls, rejects open parked calls that name
   them, and deletes the storytellers' digests that mention them (a summary restates facts in
   words no search finds; the next quiet heartbeat writes a new one from what is left);
3. redacts every remaining mention in every text column of every table (`Redactor`: their
   texts in every stored form, their id in JSON documents);
4. rebuilds SQLite's full-text indexes over the changed tables and writes the audit row.

After the commit, the space the deleted text occupied is cleared (`sweep.reclaim`). On SQLite
the transaction runs with ``secure_delete`` on, so what it frees is zeroed even if the
``VACUUM`` after it cannot run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from sqlalchemy import delete, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.approvals import ApprovalState
from storyteller_daemon.domain.character_data import (
    ERASED,
    EXPORTED,
    CharacterRecord,
    ErasureReport,
    RunMention,
    subject,
)
from storyteller_daemon.domain.redaction import Redactor
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.storage.approvals import approval_to_domain
from storyteller_daemon.storage.audit import AuditRepository
from storyteller_daemon.storage.character_holdings import Held, gather, storyteller_names
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.digests import digest_to_domain
from storyteller_daemon.storage.memories import edit_to_domain, memory_to_domain
from storyteller_daemon.storage.models.policy import ApprovalRow, PolicyActionRow
from storyteller_daemon.storage.models.records import RunRow
from storyteller_daemon.storage.models.story import (
    DigestRow,
    MemoryEditRow,
    MemoryRow,
    SituationRow,
)
from storyteller_daemon.storage.models.storytellers import (
    CustomToolParameterRow,
    CustomToolRow,
    StorytellerRow,
)
from storyteller_daemon.storage.models.world import SpeechRow
from storyteller_daemon.storage.policy_actions import action_to_domain, id_set, id_text
from storyteller_daemon.storage.situations import situation_to_domain
from storyteller_daemon.storage.speech_history import line_to_domain
from storyteller_daemon.storage.storytellers import as_utc
from storyteller_daemon.storage.sweep import SweepHits, rebuild_fts, reclaim, sweep

MAX_PLACES = 50
"""Places listed per run in an export (the count of runs is what matters past that)."""
REJECTED_NOTE = "rejected: the character this call names was erased"
_OPEN_APPROVALS = (ApprovalState.PENDING.value, ApprovalState.APPROVED.value)


class _DryRun(Exception):
    """Ends a dry run's transaction in a rollback, carrying its report out."""

    def __init__(self, report: ErasureReport) -> None:
        super().__init__("dry run")
        self.report = report


def _check(character_id: int) -> None:
    if character_id <= 0:
        raise ValidationError("Character id must be a positive integer.")


class CharacterDataRepository:
    """Exports and erases what is held about a character; both are audited."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock
        self._audit = AuditRepository(db, clock)

    # ------------------------------------------------------------------ export

    async def export(
        self, character_id: int, *, actor: str, also: Sequence[str] = ()
    ) -> CharacterRecord:
        """Everything held about a character, across every storyteller (`also`: more names to
        look for). Reads without holding the write lock; the audit row is written after."""
        _check(character_id)
        async with self._db.reading() as connection, AsyncSession(bind=connection) as session:
            record = await _record(session, character_id, also)
        await self._audit.add(actor, EXPORTED, subject(character_id), record.counts)
        return record

    # ------------------------------------------------------------------ erase

    async def erase(
        self,
        character_id: int,
        *,
        actor: str,
        also: Sequence[str] = (),
        dry_run: bool = False,
    ) -> ErasureReport:
        """Delete and redact everything held about a character in one transaction (see the
        module docstring); with `dry_run`, report what would go and change nothing."""
        _check(character_id)
        sqlite = self._db.dialect == "sqlite"
        before = None
        try:
            async with self._db.session() as session:
                if sqlite:  # restored after: the setting stays with the pooled connection
                    before = await session.scalar(text("PRAGMA secure_delete"))
                    await session.execute(text("PRAGMA secure_delete = ON"))
                report, changed = await self._erase(session, character_id, actor, also, dry_run)
                if sqlite:
                    await session.execute(text(f"PRAGMA secure_delete = {int(before or 0)}"))
                if dry_run:
                    raise _DryRun(report)
        except _DryRun as rolled_back:
            return replace(rolled_back.report, reclaimed="dry run: nothing was changed")
        return replace(report, reclaimed=await reclaim(self._db, changed))

    async def _erase(
        self,
        session: AsyncSession,
        character_id: int,
        actor: str,
        also: Sequence[str],
        dry_run: bool,
    ) -> tuple[ErasureReport, set[str]]:
        held = await gather(session, character_id, also)
        redactor = held.redactor()
        deleted = await _delete_own_rows(session, held)
        redacted: dict[str, int] = {}
        unlinked = await session.execute(
            update(SpeechRow).where(SpeechRow.target_id == character_id).values(target_id=None)
        )
        if getattr(unlinked, "rowcount", 0):
            redacted["speech_history.target_id"] = int(getattr(unlinked, "rowcount", 0))
        redacted.update(await _forget_counted_calls(session, character_id))
        rejected = await self._reject_open_calls(session, redactor, actor)
        deleted["digests"] = await _drop_digests(session, redactor)
        await session.flush()
        hits = await sweep(session, redactor, write=True)
        redacted.update(hits.counts())
        await self._bump_revisions(session, hits)
        changed = {key.split(".")[0] for key in redacted}
        changed |= {_DELETED_FROM[kind] for kind, n in deleted.items() if n}
        if rejected:
            changed.add(ApprovalRow.__tablename__)
        report = ErasureReport(
            character_id=character_id,
            dry_run=dry_run,
            deleted={k: n for k, n in deleted.items() if n},
            redacted=redacted,
            rejected_approvals=rejected,
            texts=len(held.names | held.texts),
            fts_rebuilt=tuple(await rebuild_fts(self._db, session, changed)),
        )
        if not dry_run:
            await self._audit.add_in(session, actor, ERASED, subject(character_id), report.counts)
        return report, changed

    async def _bump_revisions(self, session: AsyncSession, hits: SweepHits) -> None:
        """Storytellers whose settings or tools were redacted get a new revision, so a running
        daemon reloads them instead of prompting with the old text."""
        changed = {key[0] for key in hits.rows(StorytellerRow.__tablename__)}
        tools = [key[0] for key in hits.rows(CustomToolRow.__tablename__)]
        tools += [key[0] for key in hits.rows(CustomToolParameterRow.__tablename__)]
        if tools:
            owners = await session.scalars(
                select(CustomToolRow.storyteller_id).where(CustomToolRow.id.in_(tools))
            )
            changed.update(owners)
        if changed:
            await session.execute(
                update(StorytellerRow)
                .where(StorytellerRow.id.in_(sorted(changed)))
                .values(revision=StorytellerRow.revision + 1, updated_on=self._clock.now())
            )

    async def _reject_open_calls(
        self, session: AsyncSession, redactor: Redactor, actor: str
    ) -> int:
        """Reject parked calls that name the character and could still run."""
        rejected = 0
        rows = await session.scalars(
            select(ApprovalRow).where(ApprovalRow.state.in_(_OPEN_APPROVALS))
        )
        now: datetime = self._clock.now()
        for row in rows:
            if any(redactor.scrub(value)[1] for value in (row.arguments, row.note, row.result)):
                row.state, row.decided_at = ApprovalState.REJECTED.value, now
                row.decided_by, row.note = actor, REJECTED_NOTE
                rejected += 1
        return rejected


_DELETED_FROM = {
    "memories": MemoryRow.__tablename__,
    "memory_history": MemoryEditRow.__tablename__,
    "situations": SituationRow.__tablename__,
    "speech": SpeechRow.__tablename__,
    "digests": DigestRow.__tablename__,
}


async def _delete_own_rows(session: AsyncSession, held: Held) -> dict[str, int]:
    who = held.character_id
    await session.execute(delete(MemoryRow).where(MemoryRow.character_id == who))
    await session.execute(delete(MemoryEditRow).where(MemoryEditRow.character_id == who))
    await session.execute(delete(SituationRow).where(SituationRow.scope_character_id == who))
    await session.execute(delete(SpeechRow).where(SpeechRow.speaker_id == who))
    return {
        "memories": len(held.memories),
        "memory_history": len(held.edits),
        "situations": len(held.situations),
        "speech": sum(1 for line in held.speech if line.speaker_id == who),
    }


async def _forget_counted_calls(session: AsyncSession, character_id: int) -> dict[str, int]:
    """Take the character out of the prog calls the policy counts (kept a day for its caps)."""
    changed = {"policy_actions.player_id": 0, "policy_actions.characters": 0}
    rows = await session.scalars(
        select(PolicyActionRow).where(
            or_(
                PolicyActionRow.player_id == character_id,
                PolicyActionRow.characters.contains(str(character_id)),
            )
        )
    )
    for row in rows:
        if row.player_id == character_id:
            row.player_id = None
            changed["policy_actions.player_id"] += 1
        ids = id_set(row.characters)
        if character_id in ids:
            row.characters = id_text(ids - {character_id})
            changed["policy_actions.characters"] += 1
    return {k: n for k, n in changed.items() if n}


async def _drop_digests(session: AsyncSession, redactor: Redactor) -> int:
    dropped = 0
    for row in await session.scalars(select(DigestRow)):
        if redactor.scrub(row.text)[1]:
            await session.delete(row)
            dropped += 1
    return dropped


# ---------------------------------------------------------------------- the export's record


async def _record(session: AsyncSession, character_id: int, also: Sequence[str]) -> CharacterRecord:
    held = await gather(session, character_id, also)
    hits = await sweep(session, held.redactor(), write=False)
    runs = await _run_mentions(session, hits)
    digest_ids = [key[0] for key in hits.rows(DigestRow.__tablename__)]
    digests = await session.scalars(
        select(DigestRow).where(DigestRow.storyteller_id.in_(digest_ids))
    )
    approval_ids = [key[0] for key in hits.rows(ApprovalRow.__tablename__)]
    approvals = await session.scalars(
        select(ApprovalRow).where(ApprovalRow.id.in_(approval_ids)).order_by(ApprovalRow.id)
    )
    actions = await session.scalars(
        select(PolicyActionRow)
        .where(
            or_(
                PolicyActionRow.player_id == character_id,
                PolicyActionRow.characters.contains(str(character_id)),
            )
        )
        .order_by(PolicyActionRow.at, PolicyActionRow.id)
    )
    named_actions = [
        action_to_domain(a)
        for a in actions
        if a.player_id == character_id or character_id in id_set(a.characters)
    ]
    digest_list = [digest_to_domain(d) for d in digests]
    approval_list = [approval_to_domain(a) for a in approvals]
    ids = held.storyteller_ids | {r.storyteller_id for r in runs}
    ids |= {d.storyteller_id for d in digest_list} | {a.storyteller_id for a in approval_list}
    return CharacterRecord(
        character_id=character_id,
        storytellers=await storyteller_names(session, ids),
        memories=tuple(memory_to_domain(m) for m in held.memories),
        memory_history=tuple(edit_to_domain(e) for e in held.edits),
        situations=tuple(situation_to_domain(s) for s in held.situations),
        speech=tuple(line_to_domain(line) for line in held.speech),
        events=tuple(held.events),
        approvals=tuple(approval_list),
        policy_actions=tuple(named_actions),
        runs=tuple(runs),
        digests=tuple(digest_list),
        mentions=tuple(hits.mentions()),
        texts=len(held.names | held.texts),
    )


async def _run_mentions(session: AsyncSession, hits: SweepHits) -> list[RunMention]:
    """The runs whose records (or other columns) mention the character, oldest first."""
    found = hits.rows(RunRow.__tablename__)
    if not found:
        return []
    rows = await session.scalars(
        select(RunRow).where(RunRow.id.in_([key[0] for key in found])).order_by(RunRow.id)
    )
    mentions = []
    for row in rows:
        places = [
            column if where == "$" else column + where[1:]
            for column, paths in found[(row.id,)].items()
            for where in paths
        ]
        mentions.append(
            RunMention(
                run_id=row.id,
                kind=row.kind,
                storyteller_id=row.storyteller_id,
                storyteller_name=row.storyteller_name,
                started_at=as_utc(row.started_at),
                where=tuple(dict.fromkeys(places))[:MAX_PLACES],
            )
        )
    return mentions
