"""Recording runs: every turn, attention call and digest refresh stored with its cost.

`RunRecorder` wraps each attention call and each turn of the `AgentTurnRunner`, and each digest
refresh of reflection:

* it makes the run the owner of the model requests made inside it (`attribution.attributed`),
  so the budgets and the cost ledger know whose requests they are; every request sent gets a
  ledger row, answered (``ok``) or not (``timeout``, ``http_503``..., see `MeteredModel`);
* for a turn, it tapes what the world and the repositories answered (`tape.Tape`), which is
  what a replay answers from, and which tells which situation the turn touched;
* when the run ends (normally or with an error, but not when cancelled at shutdown) it stores
  the run record and one cost-ledger row per request in one transaction. For a turn, that
  transaction also ends its work items (the caller's `finish`) and, once the turn is complete,
  deletes its journal: a turn whose record is stored is never run again, and one whose record
  is not (a crash) is re-run from its journal. Once the run has ended that store cannot be cut
  off: a stop arriving meanwhile waits the few milliseconds it takes.

Attention calls are stored one record per batch (``kind = attention``), holding every event
of the batch with its verdict and every request made for it (a re-ask included); a digest
refresh is one record (``kind = digest``) holding the changes it read, its request and answer
and the digest it wrote. With ``runs.record = false`` only the ledger rows are written.

Records hold prompts and player text: they go to the database only, never to the log. A failed
write is logged (without payload) and never fails the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta

from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.clock import Clock, uncancelled
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runs.attribution import Charge, RunContext, attributed
from storyteller_daemon.runs.records import (
    DIGEST_TRIGGER,
    AttentionRun,
    DigestRun,
    TurnRun,
    attention_run,
    digest_run,
    interrupted_run,
    ledger_entries,
    ledger_entry,
    turn_run,
)
from storyteller_daemon.runs.tape import Tape, record_services
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import NewRun, RunRepository
from storyteller_daemon.storage.spend_guard import SpendCaps
from storyteller_daemon.storage.turn_journal import TurnJournalRepository

log = logging.getLogger(__name__)
DAY = timedelta(days=1)


class RunRecorder:
    """Stores run records and ledger rows.

    Args:
        runs: the run repository; None stores no run records.
        ledger: the ledger repository; None stores no ledger rows either.
        clock: stamps runs and requests.
        record: False keeps only the ledger rows (``runs.record``).
        unit: makes one transaction of the writes inside it (`Database.unit`); None writes
            each on its own.
        journal: the turn journal, whose entries of a completed turn are deleted with its
            record.
    """

    def __init__(
        self,
        runs: RunRepository | None,
        ledger: LedgerRepository | None,
        clock: Clock,
        *,
        record: bool = True,
        unit: Callable[[], AbstractAsyncContextManager[None]] | None = None,
        journal: TurnJournalRepository | None = None,
    ) -> None:
        self._runs = runs
        self._ledger = ledger
        self._clock = clock
        self._unit = unit or contextlib.nullcontext
        self.journal = journal
        self._record = record and runs is not None
        self._listeners: list[Callable[[int], None]] = []
        self.prunes = 0
        """Completed daily prunes (tests wait on this instead of sleeping)."""
        self._pruned = asyncio.Condition()

    def listen(self, listener: Callable[[int], None]) -> None:
        """Call `listener` with the id of every run stored from now on (the dashboard's live
        timeline); it must not block or raise."""
        self._listeners.append(listener)

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
            if self.active:
                duration = self._clock.monotonic() - began
                stored = attention_run(
                    storyteller, triggers, key, item, run, started, duration, error
                )
                await self._store(stored, run.context)

        async with self._stored(run.context, store):
            yield run

    @contextlib.asynccontextmanager
    async def turn(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        services: TurnServices,
        finish: Callable[[str], Awaitable[bool]] | None = None,
    ) -> AsyncIterator[TurnRun]:
        """Attribute and tape the turn run inside, and store it when it ends.

        `finish` is called with the run's outcome in the transaction storing the record; when
        it returns True the turn is complete and its journal entries are deleted there too.
        """
        tape = Tape() if self.active else None
        taped = record_services(services, tape) if tape is not None else services
        run = TurnRun(self._context(storyteller, trigger, "turn"), taped, tape)

        async def store(started: datetime, began: float, error: Exception | None) -> None:
            duration = self._clock.monotonic() - began
            stored = turn_run(storyteller, trigger, key, run, started, duration, error)
            run_id: int | None = None
            async with self._unit():
                if self.active:
                    run_id = await self._write(stored, run.context)
                if finish is not None and await finish(stored.outcome) and self.journal:
                    await self.journal.forget(key)
            self._announce(run_id)

        async with self._stored(run.context, store):
            yield run

    @contextlib.asynccontextmanager
    async def digest(self, storyteller: Storyteller, key: str) -> AsyncIterator[DigestRun]:
        """Attribute the digest request made inside, and store the refresh when it ends."""
        context = self._context(storyteller, None, "digest")
        run = DigestRun(context)

        async def store(started: datetime, began: float, error: Exception | None) -> None:
            if self.active:
                duration = self._clock.monotonic() - began
                stored = digest_run(storyteller, key, run, started, duration, error)
                await self._store(stored, run.context)

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
            # A run cancelled at shutdown before it ended is not stored: it runs again.
            if not _cancelled(error):
                await uncancelled(store(started, began, error))

    def _context(
        self, storyteller: Storyteller, trigger: Trigger | None, purpose: str
    ) -> RunContext:
        return RunContext(
            storyteller_id=storyteller.id,
            storyteller_name=storyteller.name,
            purpose=purpose,
            trigger_kind=trigger.kind.value if trigger is not None else DIGEST_TRIGGER,
            room_id=trigger.room_id if trigger is not None else None,
            on_charge=self._write_charge if self._ledger is not None else None,
            on_request=self._write_provisional if self._ledger is not None else None,
            on_no_answer=self._discard_provisional if self._ledger is not None else None,
        )

    async def _write_provisional(
        self, run: RunContext, worst: Charge, caps: SpendCaps | None
    ) -> int | None:
        """A row for a request about to be sent, at its worst-case cost (its id, or None).

        If the daemon dies while the request is out, the row stays: the spend is counted at most
        too high, never missed. The answer replaces it with the real bill. A row that cannot
        be written raises: the request is then not sent (`metering`), since a daemon killed
        before its answer would leave it in no ledger. With `caps` (a cluster's budgets) it is
        written only if the shared ledger has room for it (`OverCap` otherwise).
        """
        if self._ledger is None:
            return None
        if caps is not None:
            return await self._ledger.add_within(ledger_entry(run, worst), caps)
        [row_id] = await self._ledger.add([ledger_entry(run, worst)])
        return row_id

    async def _discard_provisional(self, row_id: int) -> None:
        """Remove the row of a request that was held back before it was sent."""
        if self._ledger is None:
            return
        try:
            await self._ledger.discard(row_id)
        except Exception as exc:  # an unsent request counted at worst case: too high, not lost
            log.warning(
                "an unsent request's cost note could not be removed: %s", type(exc).__name__
            )

    async def _write_charge(
        self, run: RunContext, charge: Charge, provisional: int | None
    ) -> int | None:
        """The ledger row of a request, written as soon as it is answered or has failed (its
        id, or None).

        A crash later in the run then still leaves every request in the ledger, so the budgets
        reloaded at start-up count what it may have cost.
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

    async def _store(self, run: NewRun, context: RunContext) -> None:
        self._announce(await self._write(run, context))

    def _announce(self, run_id: int | None) -> None:
        if run_id is not None:
            for listener in self._listeners:
                listener(run_id)

    async def _write(self, run: NewRun, context: RunContext) -> int | None:
        """Store the run (and the ledger rows not written yet); its id, or None."""
        # Requests were written to the ledger as they were answered; only those that could
        # not be are written now.
        situation = run.situation_id
        entries = [ledger_entry(context, c, situation) for c in context.unrecorded]
        if context.on_charge is None:
            entries = ledger_entries(context, situation)
        try:
            if self._record and self._runs is not None:
                return await self._runs.add(run, entries, context.ledger_ids)
            if self._ledger is not None:
                await self._ledger.add(entries)
        except Exception as exc:  # losing a record must never fail the turn
            log.warning(
                "the %s run of storyteller %s could not be stored: %s",
                run.kind,
                run.storyteller_id,
                type(exc).__name__,
            )
        return None

    async def interrupted(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        attempt: int,
        *,
        given_up: bool = False,
    ) -> int | None:
        """Record that a turn was cut off by a stop or crash before it could be stored.

        Its model requests are already in the ledger (each was written when answered); its
        prog calls, if any, are answered again by the game from their idempotency keys when the
        turn is run again under the same key.
        """
        if not self._record or self._runs is None:
            return None
        at = self._clock.now()
        stored = interrupted_run(storyteller, trigger, key, attempt, at, given_up=given_up)
        run_id = await self._write(stored, RunContext(storyteller.id, storyteller.name, "turn"))
        self._announce(run_id)
        return run_id

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


def _cancelled(error: Exception | None) -> bool:
    """Whether the run is ending because its task is being cancelled."""
    task = asyncio.current_task()
    return error is None and task is not None and task.cancelling() > 0
