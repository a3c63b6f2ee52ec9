"""Recording runs: every turn and attention call stored with its cost, for audit and replay.

`RunRecorder` wraps each attention call and each turn of the `AgentTurnRunner`:

* it makes the run the owner of the model requests made inside it (`attribution.attributed`),
  so the budgets and the cost ledger know whose requests they are;
* for a turn, it tapes what the world and the repositories answered (`tape.Tape`), which is
  what a replay answers from, and which tells which situation the turn touched;
* when the run ends (normally or with an error, but not when cancelled at shutdown) it stores
  the run record and one cost-ledger row per request in one transaction.

Attention calls are stored one record per batch (``kind = attention``), holding every event
of the batch with its verdict and every request made for it (a re-ask included). With
``runs.record = false`` only the ledger rows are written.

Records hold prompts and player text: they go to the database only, never to the log. A failed
write is logged (without payload) and never fails the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from storyteller_daemon.agent.attention import AttentionVerdict
from storyteller_daemon.agent.records import TurnRecord, api_body, response_summary, usage_dict
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.domain.work import MAX_TURN_ATTEMPTS
from storyteller_daemon.errors import BudgetExceeded, ModelFatalError, ModelTransientError
from storyteller_daemon.runtime.attribution import Charge, RunContext, attributed
from storyteller_daemon.runtime.clock import Clock
from storyteller_daemon.runtime.tape import Services, Tape, encode_trigger
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import LedgerEntry, NewRun, RunRepository

log = logging.getLogger(__name__)

RECORD_VERSION = 1
DAY = timedelta(days=1)


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
    services: Services
    tape: Tape | None = None
    prompt: str = ""
    fence: str = ""
    """The token of the prompt's world-text fence, so a replay builds the same prompt."""
    record: TurnRecord | None = None


def _charge_json(charge: Charge) -> dict[str, Any]:
    return {
        "at": charge.at.isoformat(),
        "purpose": charge.purpose,
        "model": charge.model,
        "usage": usage_dict(charge.usage),
        "cost_usd": charge.cost_usd,
    }


def _usage_columns(run: RunContext) -> dict[str, int]:
    return {
        "input_tokens": sum(c.usage.input_tokens for c in run.charges),
        "cached_tokens": sum(c.usage.cached_tokens for c in run.charges),
        "output_tokens": sum(c.usage.output_tokens for c in run.charges),
        "reasoning_tokens": sum(c.usage.reasoning_tokens for c in run.charges),
    }


def ledger_entry(run: RunContext, charge: Charge, situation_id: int | None = None) -> LedgerEntry:
    """The ledger row of one answered request of a run."""
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
    )


def ledger_entries(run: RunContext, situation_id: int | None = None) -> list[LedgerEntry]:
    """One ledger row per answered request of a run."""
    return [ledger_entry(run, c, situation_id) for c in run.charges]


def _error_text(exc: BaseException | None) -> str | None:
    return None if exc is None else f"{type(exc).__name__}: {exc}"


class RunRecorder:
    """Stores run records and ledger rows.

    Args:
        runs: the run repository; None stores no run records.
        ledger: the ledger repository; None stores no ledger rows either.
        clock: stamps runs and requests.
        record: False keeps only the ledger rows (``runs.record``).
    """

    def __init__(
        self,
        runs: RunRepository | None,
        ledger: LedgerRepository | None,
        clock: Clock,
        *,
        record: bool = True,
    ) -> None:
        self._runs = runs
        self._ledger = ledger
        self._clock = clock
        self._record = record and runs is not None
        self.prunes = 0
        """Completed daily prunes (tests wait on this instead of sleeping)."""
        self._pruned = asyncio.Condition()

    @property
    def active(self) -> bool:
        """Whether anything is stored (otherwise runs are only attributed)."""
        return self._ledger is not None or self._record

    @contextlib.asynccontextmanager
    async def attention(
        self, storyteller: Storyteller, triggers: Sequence[Trigger], key: str, item: str
    ) -> AsyncIterator[AttentionRun]:
        """Attribute the attention requests made inside, and store the batch when it ends."""
        run = AttentionRun(self._context(storyteller, triggers[0], "attention"))

        async def store(started: datetime, began: float, error: Exception | None) -> None:
            await self._store_attention(
                storyteller, triggers, key, item, run, started, began, error
            )

        async with self._stored(run.context, store):
            yield run

    @contextlib.asynccontextmanager
    async def turn(
        self, storyteller: Storyteller, trigger: Trigger, key: str, services: Services
    ) -> AsyncIterator[TurnRun]:
        """Attribute and tape the turn run inside, and store it when it ends."""
        tape = Tape() if self.active else None
        taped = services.recorded_on(tape) if tape is not None else services
        run = TurnRun(self._context(storyteller, trigger, "turn"), taped, tape)

        async def store(started: datetime, began: float, error: Exception | None) -> None:
            await self._store_turn(storyteller, trigger, key, run, started, began, error)

        async with self._stored(run.context, store):
            yield run

    @contextlib.asynccontextmanager
    async def _stored(
        self,
        context: RunContext,
        store: Callable[[datetime, float, Exception | None], Awaitable[None]],
    ) -> AsyncIterator[None]:
        """Attribute the calls made inside to `context`; hand the outcome to `store` at the end."""
        started, began = self._clock.now(), self._clock.monotonic()
        error: Exception | None = None
        try:
            with attributed(context):
                yield
        except Exception as exc:
            error = exc
            raise
        finally:
            # A run cancelled at shutdown is not stored: the database may be closing.
            if not _cancelled(error):
                await store(started, began, error)

    def _context(self, storyteller: Storyteller, trigger: Trigger, purpose: str) -> RunContext:
        return RunContext(
            storyteller_id=storyteller.id,
            storyteller_name=storyteller.name,
            purpose=purpose,
            trigger_kind=trigger.kind.value,
            room_id=trigger.room_id,
            on_charge=self._write_charge if self._ledger is not None else None,
            on_request=self._write_provisional if self._ledger is not None else None,
            on_no_answer=self._discard_provisional if self._ledger is not None else None,
        )

    async def _write_provisional(self, run: RunContext, worst: Charge) -> int | None:
        """A row for a request about to be sent, at its worst-case cost (its id, or None).

        If the daemon dies while the request is out, the row stays: the spend is counted at most
        too high, never missed. The answer replaces it with the real bill.
        """
        if self._ledger is None:
            return None
        try:
            [row_id] = await self._ledger.add([ledger_entry(run, worst)])
        except Exception as exc:  # the answer is still written when it comes
            log.warning("a model request could not be noted before sending: %s", type(exc).__name__)
            return None
        return row_id

    async def _discard_provisional(self, row_id: int) -> None:
        if self._ledger is None:
            return
        try:
            await self._ledger.discard(row_id)
        except Exception as exc:  # an unbilled request counted at worst case: too high, not lost
            log.warning("a failed request's cost note could not be removed: %s", type(exc).__name__)

    async def _write_charge(
        self, run: RunContext, charge: Charge, provisional: int | None
    ) -> int | None:
        """The ledger row of a request, written as soon as it is answered (its id, or None).

        A crash later in the run then still leaves every paid request in the ledger, so the
        budgets reloaded at start-up count it.
        """
        if self._ledger is None:
            return None
        try:
            entry = ledger_entry(run, charge)
            if provisional is not None and await self._ledger.settle(provisional, entry):
                return provisional
            [row_id] = await self._ledger.add([entry])
        except Exception as exc:  # stored with the run at its end instead
            log.warning("a model request's cost could not be written yet: %s", type(exc).__name__)
            return None
        return row_id

    # ------------------------------------------------------------------ storing

    async def _store_attention(
        self,
        storyteller: Storyteller,
        triggers: Sequence[Trigger],
        key: str,
        item: str,
        run: AttentionRun,
        started: datetime,
        began: float,
        error: BaseException | None,
    ) -> None:
        if not self.active:
            return
        context, verdicts = run.context, run.verdicts
        exchange = context.exchanges[-1] if context.exchanges else None
        error_text = _error_text(error) or (exchange.error if exchange else None)
        outcome = _batch_outcome(verdicts) if verdicts is not None else _error_outcome(error)
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
            "version": RECORD_VERSION,
            "kind": "attention",
            "storyteller": {"id": storyteller.id, "name": storyteller.name},
            "turn_key": key,
            "trigger": encode_trigger(first),
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
            "request": api_body(exchange.request) if exchange else None,
            "response": (
                response_summary(exchange.response) if exchange and exchange.response else None
            ),
            "verdict": judged[0]["verdict"] if len(judged) == 1 else None,
            "charges": [_charge_json(c) for c in context.charges],
            "cost_usd": context.cost_usd,
            "error": error_text,
        }
        label = first.label if len(triggers) == 1 else f"{len(triggers)} events"
        await self._store(
            NewRun(
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
                duration_seconds=self._clock.monotonic() - began,
                rounds=len(context.exchanges),
                cost_usd=context.cost_usd,
                error=error_text,
                record=record,
                **_usage_columns(context),
            ),
            context,
            None,
        )

    async def _store_turn(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        run: TurnRun,
        started: datetime,
        began: float,
        error: BaseException | None,
    ) -> None:
        if not self.active:
            return
        context, turn = run.context, run.record
        touched = run.tape.touched_situations() if run.tape is not None else []
        situation = touched[0] if touched else None
        outcome = turn.outcome.value if turn is not None else _error_outcome(error)
        error_text = _error_text(error) or (turn.error if turn is not None else None)
        record = {
            "version": RECORD_VERSION,
            "kind": "turn",
            "storyteller": {"id": storyteller.id, "name": storyteller.name},
            "turn_key": key,
            "trigger": encode_trigger(trigger),
            "prompt": run.prompt,
            "fence": run.fence,
            "turn": turn.to_dict() if turn is not None else None,
            "charges": [_charge_json(c) for c in context.charges],
            "cost_usd": context.cost_usd,
            "situations": touched,
            "tape": run.tape.entries if run.tape is not None else [],
            "speech_history": run.services.speech is not None,
            "error": error_text,
        }
        await self._store(
            NewRun(
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
                duration_seconds=self._clock.monotonic() - began,
                rounds=turn.rounds if turn is not None else 0,
                tool_calls=len(turn.calls) if turn is not None else 0,
                cost_usd=context.cost_usd,
                situation_id=situation,
                error=error_text,
                record=record,
                **_usage_columns(context),
            ),
            context,
            situation,
        )

    async def _store(self, run: NewRun, context: RunContext, situation: int | None) -> None:
        # Requests were written to the ledger as they were answered; only those that could
        # not be are written now.
        entries = [ledger_entry(context, c, situation) for c in context.unrecorded]
        if context.on_charge is None:
            entries = ledger_entries(context, situation)
        try:
            if self._record and self._runs is not None:
                await self._runs.add(run, entries, context.ledger_ids)
            elif self._ledger is not None:
                await self._ledger.add(entries)
        except Exception as exc:  # losing a record must never fail the turn
            log.warning(
                "the %s run of storyteller %s could not be stored: %s",
                run.kind,
                run.storyteller_id,
                type(exc).__name__,
            )

    async def interrupted(
        self, storyteller: Storyteller, trigger: Trigger, key: str, attempt: int
    ) -> None:
        """Record that a turn was cut off by a stop or crash before it could be stored.

        Its model requests are already in the ledger (each was written when answered); its
        prog calls, if any, are answered again by the game from their idempotency keys when the
        turn is run again under the same key.
        """
        if not self._record or self._runs is None:
            return
        note = f"interrupted by a stop or crash (attempt {attempt - 1}); " + (
            "run again under the same key" if attempt <= MAX_TURN_ATTEMPTS else "not run again"
        )
        record = {
            "version": RECORD_VERSION,
            "kind": "turn",
            "storyteller": {"id": storyteller.id, "name": storyteller.name},
            "turn_key": key,
            "trigger": encode_trigger(trigger),
            "interrupted": True,
            "error": note,
        }
        await self._store(
            NewRun(
                kind="turn",
                turn_key=key,
                storyteller_id=storyteller.id or 0,
                storyteller_name=storyteller.name,
                trigger_kind=trigger.kind.value,
                trigger_label=trigger.label,
                room_id=trigger.room_id,
                outcome="interrupted",
                started_at=self._clock.now(),
                error=note,
                record=record,
            ),
            RunContext(storyteller.id, storyteller.name, "turn"),
            None,
        )

    # ------------------------------------------------------------------ retention

    async def prune(self, *, retention_days: int, ledger_retention_days: int) -> tuple[int, int]:
        """Delete runs and ledger rows past their retention (0 keeps forever); counts deleted."""
        now = self._clock.now()
        runs = ledger = 0
        if retention_days and self._runs is not None:
            runs = await self._runs.prune(now - retention_days * DAY)
        if ledger_retention_days and self._ledger is not None:
            ledger = await self._ledger.prune(now - ledger_retention_days * DAY)
        return runs, ledger

    async def prune_daily(self, *, retention_days: int, ledger_retention_days: int) -> None:
        """Prune now and then once a day, until cancelled; a failed prune waits for the next."""
        while True:
            try:
                runs, ledger = await self.prune(
                    retention_days=retention_days, ledger_retention_days=ledger_retention_days
                )
            except Exception as exc:
                log.warning("run records could not be pruned: %s", exc)
            else:
                if runs or ledger:
                    log.info("pruned %d run records and %d ledger rows", runs, ledger)
            async with self._pruned:
                self.prunes += 1
                self._pruned.notify_all()
            await self._clock.sleep(DAY.total_seconds())

    async def wait_prunes(self, count: int) -> None:
        """Return once `prune_daily` has pruned `count` times."""
        async with self._pruned:
            await self._pruned.wait_for(lambda: self.prunes >= count)


def _batch_outcome(verdicts: Sequence[AttentionVerdict]) -> str:
    """``interested`` if any event was, else ``violation`` if any broke the contract, else
    ``ignore``."""
    if any(v.interested for v in verdicts):
        return "interested"
    if any(v.violation for v in verdicts):
        return "violation"
    return "ignore"


def _error_outcome(error: BaseException | None) -> str:
    """The outcome of a run that ended without a result."""
    if isinstance(error, BudgetExceeded):
        return "budget_exceeded"
    if isinstance(error, ModelTransientError):
        return "model_transient_error"
    if isinstance(error, ModelFatalError):
        return "model_fatal_error"
    return "crashed"


def _cancelled(error: Exception | None) -> bool:
    """Whether the run is ending because its task is being cancelled."""
    task = asyncio.current_task()
    return error is None and task is not None and task.cancelling() > 0
