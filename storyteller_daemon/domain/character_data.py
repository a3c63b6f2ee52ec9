"""What the daemon holds about one character, what erasing them did, and the audit of both.

A player may ask what is kept about their character, or that it be erased. `CharacterRecord` is
everything held (an export), `ErasureReport` the counts of what an erasure deleted and redacted,
and `AuditEntry` one line of the audit log those actions write: who did what to which
character, when, with counts only, never the character's data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storyteller_daemon.domain.approvals import Approval, PolicyAction
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.situations import CharacterMemory, MemoryEdit, Situation
from storyteller_daemon.domain.text import SpeechLine

EXPORTED = "character.export"
ERASED = "character.erase"
"""Audit actions."""


def subject(character_id: int) -> str:
    """The audit log's subject for a character."""
    return f"character {character_id}"


@dataclass(frozen=True)
class HeldEvent:
    """A stored world event, or a trigger in a storyteller's backlog, involving the character.

    Attributes:
        source: ``inbox`` (the event inbox) or ``backlog`` (a work item).
        row_id: the row's id in its table.
        state: ``pending``/``dispatched`` in the inbox; the work item's state in the backlog.
        storyteller_id: whose backlog (None in the inbox).
        payload: the event or trigger as stored (parsed JSON).
    """

    source: str
    row_id: int
    state: str
    storyteller_id: int | None
    payload: Any


@dataclass(frozen=True)
class RunMention:
    """A run record that names the character, and where (JSON paths in the record, or the
    column names of the run's other fields)."""

    run_id: int
    kind: str
    storyteller_id: int
    storyteller_name: str
    started_at: datetime
    where: tuple[str, ...]


@dataclass(frozen=True)
class ColumnMention:
    """How many rows of one table column mention the character's texts or id."""

    table: str
    column: str
    rows: int


@dataclass(frozen=True)
class CharacterRecord:
    """Everything held about one character, across every storyteller.

    Attributes:
        texts: how many of the character's texts were looked for in the mentions.
        mentions: every table column that mentions the character, with row counts (the rows
            themselves may be other characters' data, so they are only counted).
    """

    character_id: int
    storytellers: dict[int, str]
    memories: tuple[CharacterMemory, ...]
    memory_history: tuple[MemoryEdit, ...]
    situations: tuple[Situation, ...]
    speech: tuple[SpeechLine, ...]
    events: tuple[HeldEvent, ...]
    approvals: tuple[Approval, ...]
    policy_actions: tuple[PolicyAction, ...]
    runs: tuple[RunMention, ...]
    digests: tuple[Digest, ...]
    mentions: tuple[ColumnMention, ...]
    texts: int

    @property
    def counts(self) -> dict[str, int]:
        """How many of each kind of item the record holds (what the audit log keeps)."""
        return {
            "memories": len(self.memories),
            "memory_history": len(self.memory_history),
            "situations": len(self.situations),
            "speech": len(self.speech),
            "events": len(self.events),
            "approvals": len(self.approvals),
            "policy_actions": len(self.policy_actions),
            "runs": len(self.runs),
            "digests": len(self.digests),
            "mentions": sum(m.rows for m in self.mentions),
        }


@dataclass(frozen=True)
class ErasureReport:
    """What erasing a character deleted and redacted (or would have, on a dry run).

    Attributes:
        deleted: rows deleted, by kind (memories, memory edits, situations, speech lines,
            digests that mentioned the character).
        redacted: rows changed, by ``table.column``.
        rejected_approvals: parked calls naming the character that were still open.
        texts: how many of the character's texts were looked for.
        fts_rebuilt: the SQLite full-text indexes rebuilt from their tables.
        reclaimed: how the space of deleted rows was cleared (VACUUM...), or why not.
    """

    character_id: int
    dry_run: bool
    deleted: dict[str, int] = field(default_factory=dict)
    redacted: dict[str, int] = field(default_factory=dict)
    rejected_approvals: int = 0
    texts: int = 0
    fts_rebuilt: tuple[str, ...] = ()
    reclaimed: str = ""

    @property
    def counts(self) -> dict[str, Any]:
        """The report as the audit log keeps it: counts only."""
        return {
            "dry_run": self.dry_run,
            "texts": self.texts,
            "deleted": dict(self.deleted),
            "redacted": dict(self.redacted),
            "rejected_approvals": self.rejected_approvals,
        }


@dataclass(frozen=True)
class AuditEntry:
    """One line of the audit log."""

    id: int
    at: datetime
    actor: str
    action: str
    subject: str
    detail: dict[str, Any]
