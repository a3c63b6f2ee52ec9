"""How the dashboard shows stored records: runs, the timeline's entries, the run inspector's
detail, situations and memories, as plain JSON-ready dicts with stable keys.

World text (echoes, speech, names, tool results) stays plain text here; escaping is the
templates' and the browser's ``textContent``'s job.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from storyteller_daemon.domain.situations import CharacterMemory, Situation
from storyteller_daemon.storage.runs import RunSummary, StoredRun


def run_json(run: RunSummary) -> dict[str, Any]:
    """A run without its record, with stable keys."""
    return run.to_json()


def event_text(trigger: dict[str, Any] | None) -> str:
    """What happened, as the world told it (player-written text: plain, never markup)."""
    if not trigger:
        return ""
    event = trigger.get("event") or {}
    for key in ("text", "message", "speech", "description"):
        value = event.get(key)
        if isinstance(value, str) and value:
            return value
    return str(trigger.get("text") or "")


def timeline_entry(stored: StoredRun) -> dict[str, Any]:
    """One decision on the timeline: the events and verdicts of an attention call, or the
    reason, tool calls and prog calls of a turn."""
    run, record = stored.summary, stored.record
    entry: dict[str, Any] = {**run_json(run), "reason": None, "calls": [], "progs": []}
    if run.kind == "attention":
        entry["events"] = [
            {
                "text": event_text(judged.get("trigger")),
                "label": (judged.get("trigger") or {}).get("label", ""),
                "decision": (judged.get("verdict") or {}).get("decision"),
                "reason": (judged.get("verdict") or {}).get("reason"),
            }
            for judged in record.get("events") or []
        ]
        return entry
    trigger = record.get("trigger") or {}
    turn = record.get("turn") or {}
    entry["events"] = [
        {"text": event_text(t), "label": t.get("label", ""), "decision": None, "reason": None}
        for t in [trigger, *(trigger.get("coalesced") or [])]
    ]
    entry["reason"] = trigger.get("attention_reason")
    entry["calls"] = [
        {
            "name": call.get("name", ""),
            "ok": bool((call.get("envelope") or {}).get("ok")),
            "error": (call.get("envelope") or {}).get("error"),
            "refused": bool(call.get("refused")),
        }
        for call in turn.get("calls") or []
    ]
    entry["progs"] = [
        {"prog": _prog_name(e.get("args")), "ok": "error" not in e, "error": e.get("error")}
        for e in record.get("tape") or []
        if e.get("service") == "world" and e.get("method") == "execute_prog"
    ]
    return entry


def _prog_name(args: Any) -> str:
    """The prog a taped ``execute_prog`` call ran (its arguments are taped by name)."""
    if isinstance(args, dict):
        return str(args.get("prog", ""))
    return str(args[0]) if isinstance(args, list) and args else ""


def run_detail(stored: StoredRun, related: Sequence[RunSummary]) -> dict[str, Any]:
    """Everything a run record holds, arranged for the run inspector."""
    run, record = stored.summary, stored.record
    detail: dict[str, Any] = {
        "run": run_json(run),
        "record": record,
        "related": [run_json(r) for r in related],
        "replay": f"storyteller runs replay {run.id}" if run.kind == "turn" else None,
        "trigger": record.get("trigger") or {},
        "events": timeline_entry(stored)["events"],
        "charges": record.get("charges") or [],
    }
    if run.kind == "turn":
        turn = record.get("turn") or {}
        calls = turn.get("calls") or []
        detail["prompt"] = record.get("prompt", "")
        detail["rounds"] = [
            {**request, "calls": [c for c in calls if c.get("round") == request.get("round")]}
            for request in turn.get("requests") or []
        ]
        detail["tape"] = record.get("tape") or []
        first = detail["rounds"][0]["request"] if detail["rounds"] else None
        detail["sent"] = sent_prompt(first)
    else:
        detail["prompt"] = record.get("input", "")
        detail["rounds"] = [
            {"round": number, **exchange, "calls": []}
            for number, exchange in enumerate(record.get("requests") or [], start=1)
        ]
        detail["tape"] = []
        detail["sent"] = sent_prompt(record.get("request"))
    return detail


def sent_prompt(body: dict[str, Any] | None) -> dict[str, Any]:
    """The first request of a run as the model was sent it: instructions and input items."""
    if not body:
        return {"instructions": "", "input": []}
    items = []
    for item in body.get("input") or []:
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list):
                content = "\n".join(str(part.get("text", "")) for part in content)
            items.append({"what": str(item.get("role", "message")), "text": str(content or "")})
        else:
            items.append({"what": str(kind), "text": json.dumps(item, ensure_ascii=False)})
    return {"instructions": str(body.get("instructions") or ""), "input": items}


def situation_json(situation: Situation, runs: dict[str, int]) -> dict[str, Any]:
    """A situation with the run that last wrote it (its id, when that run is still kept)."""
    return {
        "id": situation.id,
        "storyteller_id": situation.storyteller_id,
        "title": situation.title,
        "text": situation.text,
        "scope": situation.scope_label,
        "resolved": situation.resolved,
        "created_on": situation.created_on.isoformat(),
        "updated_on": situation.updated_on.isoformat() if situation.updated_on else None,
        "from_player": situation.provenance.from_player,
        "source_run": situation.provenance.run,
        "run_id": runs.get(situation.provenance.run),
    }


def memory_json(memory: CharacterMemory, runs: dict[str, int]) -> dict[str, Any]:
    """A memory with the run that last wrote it."""
    return {
        "id": memory.id,
        "storyteller_id": memory.storyteller_id,
        "character_id": memory.character_id,
        "title": memory.title,
        "text": memory.text,
        "importance": memory.importance,
        "changed_on": memory.changed_on.isoformat(),
        "from_player": memory.provenance.from_player,
        "source_run": memory.provenance.run,
        "run_id": runs.get(memory.provenance.run),
    }
