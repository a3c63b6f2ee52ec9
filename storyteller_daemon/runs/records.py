"""What a run record holds: the stored form of an attention batch, a turn, an interrupted turn
or a digest refresh, and the cost-ledger rows of its requests.

`RunRecorder` decides when to store; these functions decide what. Records hold prompts and
player text: they go to the database only, never to the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from storyteller_daemon.agent.models.interface import api_body
from storyteller_daemon.agent.records import TurnRecord, response_summary, usage_dict
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.verdicts import AttentionVerdict
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import BudgetExceeded, ModelFatalError, ModelTransientError
from storyteller_daemon.runs.attribution import Charge, Exchange, RunContext
from storyteller_daemon.runs.tape import Tape, encode_trigger, taped_names
from storyteller_daemon.storage.ledger import LedgerEntry
from storyteller_daemon.storage.runs import NewRun

RECORD_VERSION = 1
DIGEST_TRIGGER = "reflection"
"""The trigger kind of digest runs (no world trigger starts them: a quiet storyteller does)."""
DIGEST_LABEL = "Digest refresh"


# ---------------------------------------------------------------------- runs in progress


@dataclass
class AttentionRun:
    """An attention batch being judged; the runner fills in the verdicts, in trigger order."""

    context: RunContext
    verdicts: list[AttentionVerdict] | None = None


@dataclass
class TurnRun:
    """A turn being run; the runner fills in the prompt and the record.

    Attributes:
        services: what the turn must use (taped when the recorder stores anything).
        tape: the tape of `services`, if taped.
    """

    context: RunContext
    services: TurnServices
    tape: Tape | None = None
    prompt: str = ""
    fence: str = ""
    """The token of the prompt's world-text fence, so a replay builds the same prompt."""
    notes_fence: str = ""
    """The token of the prompt's stored-notes fence, likewise."""
    prompt_budget: dict[str, Any] | None = None
    """What the prompt's token budget kept and dropped (`agent.context.ContextReport`)."""
    policed: bool = False
    """Whether the turn passed a policy point (a replay then passes one: `replay_policy`)."""
    direction: dict[str, Any] | None = None
    """What the director did around the turn (`agent.director.DirectorReport`): the plan step
    that was due and what became of it, the context providers' output or gaps, the pacing."""
    record: TurnRecord | None = None


@dataclass
class DigestRun:
    """A digest refresh being made; the refresher fills in what it read and what it wrote.

    Attributes:
        previous: the digest it started from (None: the first).
        changes: how many changes of each kind it was given.
        fingerprint: the fingerprint of those changes.
        input: the request's user message.
        digest: the new digest, once written.
        outcome: ``refreshed``, or why not (``empty``, ``incomplete``); an error's outcome
            otherwise.
    """

    context: RunContext
    previous: str | None = None
    changes: dict[str, int] | None = None
    fingerprint: str = ""
    input: str = ""
    digest: str | None = None
    outcome: str | None = None


# ---------------------------------------------------------------------- stored runs


def attention_run(
    storyteller: Storyteller,
    triggers: Sequence[Trigger],
    key: str,
    item: str,
    run: AttentionRun,
    started: datetime,
    duration: float,
    error: BaseException | None,
) -> NewRun:
    """The stored run of one attention batch: every event with its verdict, every request."""
    context, verdicts = run.context, run.verdicts
    exchange = context.exchanges[-1] if context.exchanges else None
    error_note = error_text(error) or (exchange.error if exchange else None)
    outcome = batch_outcome(verdicts) if verdicts is not None else error_outcome(error)
    judged = [
        {
            "trigger": encode_trigger(trigger),
            "verdict": None
            if verdicts is None
            else {
                "decision": verdicts[index].decision,
                "reason": verdicts[index].reason,
                "violation": verdicts[index].violation,
            },
        }
        for index, trigger in enumerate(triggers)
    ]
    first = triggers[0]
    record = {
        **_head("attention", storyteller, key, first),
        "events": judged,
        "input": item,
        "requests": [
            {
                "request": api_body(x.request),
                "response": response_summary(x.response) if x.response else None,
                "error": x.error,
            }
            for x in context.exchanges
        ],
        **_last_exchange(exchange),
        "verdict": judged[0]["verdict"] if len(judged) == 1 else None,
        **_costs(context),
        "error": error_note,
    }
    label = first.label if len(triggers) == 1 else f"{len(triggers)} events"
    return NewRun(
        kind="attention",
        turn_key=key,
        storyteller_id=storyteller.id or 0,
        storyteller_name=storyteller.name,
        trigger_kind=first.kind.value,
        trigger_label=label,
        room_id=first.room_id,
        verdict=outcome if verdicts is not None else None,
        outcome=outcome,
        started_at=started,
        duration_seconds=duration,
        rounds=len(context.exchanges),
        cost_usd=context.cost_usd,
        error=error_note,
        record=record,
        **usage_columns(context),
    )


def turn_run(
    storyteller: Storyteller,
    trigger: Trigger,
    key: str,
    run: TurnRun,
    started: datetime,
    duration: float,
    error: BaseException | None,
) -> NewRun:
    """The stored run of one turn: prompt, requests, calls, tape and the situation it touched
    first (`NewRun.situation_id`)."""
    context, turn = run.context, run.record
    touched = run.tape.touched_situations() if run.tape is not None else []
    situation = touched[0] if touched else None
    outcome = turn.outcome.value if turn is not None else error_outcome(error)
    error_note = error_text(error) or (turn.error if turn is not None else None)
    record = {
        **_head("turn", storyteller, key, trigger),
        "prompt": run.prompt,
        "fence": run.fence,
        "notes_fence": run.notes_fence,
        "prompt_budget": run.prompt_budget,
        "turn": turn.to_dict() if turn is not None else None,
        **_costs(context),
        "situations": touched,
        "tape": run.tape.entries if run.tape is not None else [],
        "services": taped_names(run.services),
        "direction": run.direction,
        "policed": run.policed,
        "error": error_note,
    }
    return NewRun(
        kind="turn",
        turn_key=key,
        storyteller_id=storyteller.id or 0,
        storyteller_name=storyteller.name,
        trigger_kind=trigger.kind.value,
        trigger_label=trigger.label,
        room_id=trigger.room_id,
        verdict="interested" if trigger.attention_reason is not None else None,
        outcome=outcome,
        started_at=started,
        duration_seconds=duration,
        rounds=turn.rounds if turn is not None else 0,
        tool_calls=len(turn.calls) if turn is not None else 0,
        cost_usd=context.cost_usd,
        situation_id=situation,
        error=error_note,
        record=record,
        **usage_columns(context),
    )


def interrupted_run(
    storyteller: Storyteller,
    trigger: Trigger,
    key: str,
    attempt: int,
    at: datetime,
    *,
    given_up: bool = False,
) -> NewRun:
    """The stored run of a turn cut off by a stop or crash before it could be stored."""
    note = "interrupted by a stop or crash; " + (
        f"given up after {attempt - 1} interruptions (storyteller runs retry queues it again)"
        if given_up
        else f"run again under the same key (attempt {attempt}), resuming from its journal"
    )
    record = {
        **_head("turn", storyteller, key, trigger),
        "interrupted": True,
        "error": note,
    }
    return NewRun(
        kind="turn",
        turn_key=key,
        storyteller_id=storyteller.id or 0,
        storyteller_name=storyteller.name,
        trigger_kind=trigger.kind.value,
        trigger_label=trigger.label,
        room_id=trigger.room_id,
        outcome="interrupted",
        started_at=at,
        error=note,
        record=record,
    )


def digest_run(
    storyteller: Storyteller,
    key: str,
    run: DigestRun,
    started: datetime,
    duration: float,
    error: BaseException | None,
) -> NewRun:
    """The stored run of one digest refresh: what it read, the request, the answer, the digest."""
    context = run.context
    exchange = context.exchanges[-1] if context.exchanges else None
    error_note = error_text(error) or (exchange.error if exchange else None)
    outcome = run.outcome or error_outcome(error)
    record = {
        **_head("digest", storyteller, key, None),
        "previous": run.previous,
        "changes": run.changes or {},
        "fingerprint": run.fingerprint,
        "input": run.input,
        **_last_exchange(exchange),
        "digest": run.digest,
        **_costs(context),
        "error": error_note,
    }
    return NewRun(
        kind="digest",
        turn_key=key,
        storyteller_id=storyteller.id or 0,
        storyteller_name=storyteller.name,
        trigger_kind=DIGEST_TRIGGER,
        trigger_label=DIGEST_LABEL,
        room_id=None,
        verdict=None,
        outcome=outcome,
        started_at=started,
        duration_seconds=duration,
        rounds=len(context.exchanges),
        cost_usd=context.cost_usd,
        error=error_note,
        record=record,
        **usage_columns(context),
    )


# ---------------------------------------------------------------------- parts


def _head(kind: str, storyteller: Storyteller, key: str, trigger: Trigger | None) -> dict[str, Any]:
    """The fields every run record starts with (a digest run has no world trigger)."""
    return {
        "version": RECORD_VERSION,
        "kind": kind,
        "storyteller": {"id": storyteller.id, "name": storyteller.name},
        "turn_key": key,
        "trigger": (
            encode_trigger(trigger)
            if trigger is not None
            else {"kind": DIGEST_TRIGGER, "label": DIGEST_LABEL}
        ),
    }


def _last_exchange(exchange: Exchange | None) -> dict[str, Any]:
    """A run's last request and its answer, as its record keeps them."""
    return {
        "request": api_body(exchange.request) if exchange else None,
        "response": (
            response_summary(exchange.response) if exchange and exchange.response else None
        ),
    }


def _costs(context: RunContext) -> dict[str, Any]:
    """What each request of a run cost, and the total, as its record keeps them."""
    return {"charges": [charge_json(c) for c in context.charges], "cost_usd": context.cost_usd}


def charge_json(charge: Charge) -> dict[str, Any]:
    """One request's charge as it is kept in a record."""
    return {
        "at": charge.at.isoformat(),
        "purpose": charge.purpose,
        "model": charge.model,
        "usage": usage_dict(charge.usage),
        "cost_usd": charge.cost_usd,
        "status": charge.status,
    }


def usage_columns(run: RunContext) -> dict[str, int]:
    """A run's token totals, as the run row's columns."""
    return {
        "input_tokens": sum(c.usage.input_tokens for c in run.charges),
        "cached_tokens": sum(c.usage.cached_tokens for c in run.charges),
        "output_tokens": sum(c.usage.output_tokens for c in run.charges),
        "reasoning_tokens": sum(c.usage.reasoning_tokens for c in run.charges),
    }


def ledger_entry(run: RunContext, charge: Charge, situation_id: int | None = None) -> LedgerEntry:
    """The ledger row of one request of a run."""
    return LedgerEntry(
        occurred_at=charge.at,
        purpose=charge.purpose,
        model=charge.model,
        storyteller_id=run.storyteller_id,
        storyteller_name=run.storyteller_name,
        trigger_kind=run.trigger_kind,
        room_id=run.room_id,
        situation_id=situation_id,
        input_tokens=charge.usage.input_tokens,
        cached_tokens=charge.usage.cached_tokens,
        output_tokens=charge.usage.output_tokens,
        reasoning_tokens=charge.usage.reasoning_tokens,
        cost_usd=charge.cost_usd,
        status=charge.status,
    )


def ledger_entries(run: RunContext, situation_id: int | None = None) -> list[LedgerEntry]:
    """One ledger row per request of a run."""
    return [ledger_entry(run, c, situation_id) for c in run.charges]


def error_text(exc: BaseException | None) -> str | None:
    """An error as a record shows it (``Type: message``)."""
    return None if exc is None else f"{type(exc).__name__}: {exc}"


def batch_outcome(verdicts: Sequence[AttentionVerdict]) -> str:
    """``interested`` if any event was, else ``violation`` if any broke the contract, else
    ``ignore``."""
    if any(v.interested for v in verdicts):
        return "interested"
    if any(v.violation for v in verdicts):
        return "violation"
    return "ignore"


def error_outcome(error: BaseException | None) -> str:
    """The outcome of a run that ended without a result."""
    if isinstance(error, BudgetExceeded):
        return "budget_exceeded"
    if isinstance(error, ModelTransientError):
        return "model_transient_error"
    if isinstance(error, ModelFatalError):
        return "model_fatal_error"
    return "crashed"
