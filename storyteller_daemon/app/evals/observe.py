"""What one scenario run did, read back from the daemon's own records.

Per scenario event, the attention verdict is the state of the work item its world events (or
its heartbeat) became in the storyteller's backlog; the tool calls, with the policy's refusals,
are the run records' calls; open situations and memories are read from their tables; tokens and
USD from the ledger; rounds from the turn runs. The turns' transcripts are kept (what
``storyteller runs show`` prints) for the report of a failing run, since the database they come
from is thrown away.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from storyteller_daemon.domain.scenarios import Observation, ObservedCall
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.storage.runs import RunSummary
from storyteller_daemon.storage.store import Store

ATTENDED = frozenset({WorkState.INTERESTED, WorkState.RUNNING, WorkState.DONE, WorkState.FAILED})
IGNORED = frozenset({WorkState.IGNORED, WorkState.FILTERED})
"""A filtered item was decided by a deterministic rule (an attention rule, a pause, a budget):
the storyteller did not attend. Pending, violation and expired items were never judged."""
MAX_RUNS = 1000


@dataclass(frozen=True)
class Transcript:
    """One stored run as ``storyteller runs show`` prints it."""

    summary: RunSummary
    record: dict[str, Any]
    related: tuple[RunSummary, ...] = ()


async def observe(
    store: Store, storyteller: Storyteller, sources: Sequence[Sequence[str]]
) -> tuple[Observation, tuple[Transcript, ...]]:
    """The observation of one run, and its transcripts (turns first-to-last, then attention
    passes no turn followed).

    Args:
        sources: per scenario event, the backlog sources of the work it may have become
            (none: the event did not happen).
    """
    sid = storyteller.id or 0
    verdicts = [await _verdict(store, sid, event_sources) for event_sources in sources]
    turns = await store.runs.records_since(sid, None, kind="turn", limit=MAX_RUNS)
    calls = [call for run in turns for call in _calls(run.record)]
    situations = [
        f"{s.title}\n{s.text}" for s in await store.situations.list(sid, include_resolved=False)
    ]
    memories = [f"{m.title}\n{m.text}" for m in await store.memories.list(sid)]
    tokens, usd = 0, 0.0
    for line in await store.ledger.totals("storyteller", storyteller_id=sid):
        tokens += line.input_tokens + line.output_tokens
        usd += line.cost_usd
    seen = Observation(
        verdicts=tuple(verdicts),
        calls=tuple(calls),
        situations=tuple(situations),
        memories=tuple(memories),
        tokens=tokens,
        usd=usd,
        rounds=sum(run.summary.rounds for run in turns),
    )
    transcripts = [
        Transcript(run.summary, run.record, tuple(await store.runs.related(run.summary)))
        for run in turns
    ]
    shown = {t.summary.turn_key for t in transcripts}
    for run in await store.runs.records_since(sid, None, kind="attention", limit=MAX_RUNS):
        if run.summary.turn_key not in shown:
            transcripts.append(Transcript(run.summary, run.record))
    return seen, tuple(transcripts)


async def _verdict(store: Store, storyteller_id: int, sources: Sequence[str]) -> bool | None:
    """Attended when any of the event's work items was; ignored when one was and none attended
    (or the storyteller took none: not its rooms or kinds); None while undecided."""
    if not sources:
        return None
    states = []
    for source in sources:
        item = await store.backlog.by_source(storyteller_id, source)
        states.append(item.state if item is not None else WorkState.IGNORED)
    if any(state in ATTENDED for state in states):
        return True
    if any(state in IGNORED for state in states):
        return False
    return None


def _calls(record: dict[str, Any]) -> list[ObservedCall]:
    """The turn's calls as the policy left them; a call skipped as a repeat is not one."""
    found = []
    for call in (record.get("turn") or {}).get("calls") or []:
        if call.get("skipped"):
            continue
        try:
            arguments = json.loads(call.get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = {}
        refused = None
        if call.get("refused") or call.get("parked") or call.get("shadowed"):
            refused = str(call.get("rule") or "not_offered")
        found.append(
            ObservedCall(
                str(call.get("name")),
                arguments if isinstance(arguments, dict) else {},
                refused,
            )
        )
    return found
