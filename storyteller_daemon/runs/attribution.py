"""Who a model request is for: the run (storyteller, trigger, room, purpose) it belongs to.

The model seam only sees a `ModelRequest`, yet budgets and the cost ledger need to know whose
request it is. The runner therefore opens each attention call and turn with `attributed`, which
puts a `RunContext` in a context variable for the running task (tasks copy their context, so
concurrent storytellers never see each other's run); the budget hook and the `MeteredModel`
read it with `current_run` and add the request, its answer and its bill to it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime

from storyteller_daemon.agent.models.interface import ModelRequest, ModelResponse, Usage
from storyteller_daemon.storage.spend_guard import IN_FLIGHT, SpendCaps

REQUEST_OK = "ok"
"""The ledger status of an answered request."""
REQUEST_SENT = IN_FLIGHT
"""The ledger status of a request sent and not (yet) answered: the daemon stopped or crashed
while it was out, or it is out now. Its row holds the worst case."""


@dataclass(frozen=True)
class Charge:
    """What one request cost, or may cost.

    Attributes:
        status: ``ok`` for an answered request; otherwise how it failed (``timeout``,
            ``http_503``...; see `ModelError.request_status`) or ``sent``.
    """

    at: datetime
    purpose: str
    model: str
    usage: Usage
    cost_usd: float
    status: str = REQUEST_OK


@dataclass
class Exchange:
    """One request of a run and what came of it (for attention records)."""

    request: ModelRequest
    response: ModelResponse | None = None
    error: str | None = None


@dataclass
class RunContext:
    """The run the current task's model requests belong to.

    Attributes:
        storyteller_id: whose requests they are (None for requests of no storyteller).
        storyteller_name: the name at the time, for alerts and the ledger.
        purpose: ``attention``, ``turn``, ``digest`` or ``replay``.
        trigger_kind: the trigger's kind value.
        room_id: the trigger's room, if any.
        charges: the requests' bills (answered, or failed with what the provider may bill),
            in order.
        exchanges: every request with its response or error, in order.
        tokens_used: input plus output tokens answered so far (the per-turn cap).
        on_charge: awaited with each charge as soon as its request is answered or has failed
            (the recorder writes its ledger row then, so a crash never loses a paid request);
            returns the ledger row's id, or None when it could not be written.
        on_request: awaited with a request's worst case before it is sent (a provisional row),
            and the caps today's shared ledger must have room for it under (or None).
        on_no_answer: awaited with a provisional row's id when its request was never sent.
        ledger_ids: ids of the ledger rows written by `on_charge`, in order.
        unrecorded: charges `on_charge` could not write (stored with the run at its end).
    """

    storyteller_id: int | None
    storyteller_name: str
    purpose: str
    trigger_kind: str | None = None
    room_id: int | None = None
    charges: list[Charge] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    tokens_used: int = 0
    on_charge: Callable[[RunContext, Charge, int | None], Awaitable[int | None]] | None = None
    on_request: Callable[[RunContext, Charge, SpendCaps | None], Awaitable[int | None]] | None = (
        None
    )
    on_no_answer: Callable[[int], Awaitable[None]] | None = None
    ledger_ids: list[int] = field(default_factory=list)
    unrecorded: list[Charge] = field(default_factory=list)

    async def sending(self, worst: Charge, caps: SpendCaps | None = None) -> int | None:
        """A request is about to go out: record it at its worst-case bill (the row's id).

        If the process dies before the answer comes, that row stays, so the spend is counted
        (at most too high, never too low). With `caps` the row is written only if today's
        ledger has room for it under them.

        Raises:
            OverCap: `caps` leave no room; no row was written.
        """
        if self.on_request is None:
            return None
        return await self.on_request(self, worst, caps)

    async def not_sent(self, provisional: int | None) -> None:
        """The request was held back after all (a paused model): it is no request, so its
        provisional row goes."""
        if provisional is not None and self.on_no_answer is not None:
            await self.on_no_answer(provisional)

    async def charge(self, charge: Charge, provisional: int | None = None) -> None:
        """Add a request's bill (answered or failed), and have it recorded at once when a
        recorder asks."""
        self.charges.append(charge)
        if self.on_charge is None:
            return
        row_id = await self.on_charge(self, charge, provisional)
        if row_id is None:
            self.unrecorded.append(charge)
        else:
            self.ledger_ids.append(row_id)

    @property
    def cost_usd(self) -> float:
        """USD of all requests (answered, and what failed ones may be billed)."""
        return sum(c.cost_usd for c in self.charges)


_current: ContextVar[RunContext | None] = ContextVar("storyteller_run", default=None)


def current_run() -> RunContext | None:
    """The run of the running task, if one was set with `attributed`."""
    return _current.get()


@contextlib.contextmanager
def attributed(run: RunContext) -> Iterator[RunContext]:
    """Make `run` the owner of the model requests made inside the block (this task only)."""
    token = _current.set(run)
    try:
        yield run
    finally:
        _current.reset(token)
