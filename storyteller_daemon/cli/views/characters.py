"""JSON and text forms of a character's export, an erasure's report and the audit log.

The export's shape is documented in docs/json.md; keys are only ever added.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from storyteller_daemon.cli.support import format_time
from storyteller_daemon.cli.views.storytellers import edit_json
from storyteller_daemon.domain.approvals import Approval, PolicyAction
from storyteller_daemon.domain.character_data import (
    AuditEntry,
    CharacterRecord,
    ErasureReport,
    HeldEvent,
    RunMention,
)
from storyteller_daemon.domain.situations import CharacterMemory, Provenance, Situation
from storyteller_daemon.domain.text import SpeechLine

AUDIT_COLUMNS = ("Id", "When", "Actor", "Action", "Subject", "Detail")


def _when(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _provenance(p: Provenance) -> dict[str, Any]:
    return {"run": p.run, "events": list(p.events), "from_player": p.from_player}


def _memory(m: CharacterMemory) -> dict[str, Any]:
    return {
        "id": m.id,
        "storyteller_id": m.storyteller_id,
        "title": m.title,
        "text": m.text,
        "importance": m.importance,
        "provenance": _provenance(m.provenance),
        "created_on": _when(m.created_on),
        "updated_on": _when(m.updated_on),
    }


def _situation(s: Situation) -> dict[str, Any]:
    return {
        "id": s.id,
        "storyteller_id": s.storyteller_id,
        "title": s.title,
        "text": s.text,
        "resolved": s.resolved,
        "provenance": _provenance(s.provenance),
        "created_on": _when(s.created_on),
        "updated_on": _when(s.updated_on),
        "resolved_on": _when(s.resolved_on),
    }


def _speech(line: SpeechLine, character_id: int) -> dict[str, Any]:
    return {
        "role": "speaker" if line.speaker_id == character_id else "target",
        "room_id": line.cell_id,
        "occurred_at": _when(line.occurred_at),
        "speaker_id": line.speaker_id,
        "speaker_name": line.speaker_name,
        "target_id": line.target_id,
        "target_description": line.target_description,
        "message": line.message,
        "volume": line.volume,
        "language": line.language,
        "accent": line.accent,
    }


def _event(e: HeldEvent) -> dict[str, Any]:
    return {
        "source": e.source,
        "id": e.row_id,
        "state": e.state,
        "storyteller_id": e.storyteller_id,
        "payload": e.payload,
    }


def _approval(a: Approval) -> dict[str, Any]:
    return {
        "id": a.id,
        "storyteller_id": a.storyteller_id,
        "tool": a.tool,
        "arguments": a.arguments,
        "state": a.state.value,
        "created_at": _when(a.created_at),
        "decided_at": _when(a.decided_at),
        "decided_by": a.decided_by,
        "note": a.note,
        "result": a.result,
    }


def _action(a: PolicyAction) -> dict[str, Any]:
    return {
        "storyteller_id": a.storyteller_id,
        "tool": a.tool,
        "at": _when(a.at),
        "player_id": a.player_id,
        "rooms": sorted(a.rooms),
        "characters": sorted(a.characters),
    }


def _run(r: RunMention) -> dict[str, Any]:
    return {
        "id": r.run_id,
        "kind": r.kind,
        "storyteller_id": r.storyteller_id,
        "storyteller": r.storyteller_name,
        "started_at": _when(r.started_at),
        "where": list(r.where),
    }


def export_json(record: CharacterRecord, exported_at: datetime) -> dict[str, Any]:
    """``ais character export``: everything held about the character."""
    who = record.character_id
    return {
        "character_id": who,
        "exported_at": exported_at.isoformat(),
        "storytellers": [{"id": k, "name": v} for k, v in sorted(record.storytellers.items())],
        "memories": [_memory(m) for m in record.memories],
        "memory_history": [edit_json(e) for e in record.memory_history],
        "situations": [_situation(s) for s in record.situations],
        "speech": [_speech(line, who) for line in record.speech],
        "events": [_event(e) for e in record.events],
        "approvals": [_approval(a) for a in record.approvals],
        "policy_actions": [_action(a) for a in record.policy_actions],
        "runs": [_run(r) for r in record.runs],
        "digests": [
            {
                "storyteller_id": d.storyteller_id,
                "text": d.text,
                "refreshed_on": _when(d.refreshed_on),
            }
            for d in record.digests
        ],
        "mentions": [
            {"table": m.table, "column": m.column, "rows": m.rows} for m in record.mentions
        ],
        "texts": record.texts,
    }


def report_json(report: ErasureReport) -> dict[str, Any]:
    """``ais character erase --json``."""
    return {
        "character_id": report.character_id,
        "dry_run": report.dry_run,
        "texts": report.texts,
        "deleted": report.deleted,
        "redacted": report.redacted,
        "rejected_approvals": report.rejected_approvals,
        "fts_rebuilt": list(report.fts_rebuilt),
        "reclaimed": report.reclaimed,
    }


_DELETED_WORDS = {
    "memories": "memory(ies)",
    "memory_history": "memory history entry(ies)",
    "situations": "situation(s) scoped to them",
    "speech": "speech line(s) they said",
    "digests": "digest(s) that mention them",
}


def report_lines(report: ErasureReport) -> list[str]:
    """An erasure's report in a few lines (what it would do, on a dry run)."""
    verb = "Would delete" if report.dry_run else "Deleted"
    deleted = [f"{n} {_DELETED_WORDS.get(k, k)}" for k, n in report.deleted.items()]
    rows = sum(report.redacted.values())
    lines = [
        f"Character #{report.character_id}: {report.texts} of their texts looked for.",
        f"{verb}: {', '.join(deleted) or 'nothing'}.",
        f"{'Would redact' if report.dry_run else 'Redacted'}: {rows} value(s) in "
        f"{len(report.redacted)} column(s).",
    ]
    if report.rejected_approvals:
        lines.append(
            f"{'Would reject' if report.dry_run else 'Rejected'}: "
            f"{report.rejected_approvals} open parked call(s) naming them."
        )
    if not report.dry_run:
        lines.append(f"Space of deleted rows: {report.reclaimed}.")
        lines.append("Backups, logs and copies outside this database are not touched.")
    return lines


def audit_json(entry: AuditEntry) -> dict[str, Any]:
    """``audit list --json``."""
    return {
        "id": entry.id,
        "at": _when(entry.at),
        "actor": entry.actor,
        "action": entry.action,
        "subject": entry.subject,
        "detail": entry.detail,
    }


def audit_row(entry: AuditEntry) -> list[object]:
    """One row of ``audit list``: the detail's non-zero counts."""
    return [
        entry.id,
        format_time(entry.at),
        entry.actor,
        entry.action,
        entry.subject,
        _flat(entry.detail),
    ]


def _flat(detail: dict[str, Any], prefix: str = "") -> str:
    parts = []
    for key, value in detail.items():
        if isinstance(value, dict):
            inner = _flat(value, f"{prefix}{key}.")
            if inner:
                parts.append(inner)
        elif value not in (0, False, None, ""):
            parts.append(f"{prefix}{key}={value}")
    return ", ".join(parts)
