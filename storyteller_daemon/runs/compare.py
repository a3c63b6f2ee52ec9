"""What would change if: recorded turns run again with a changed model, effort or system prompt.

``storyteller runs compare`` is the admin's evidence before switching a storyteller's model or
prompt. Each recorded turn is replayed over its tape (`replay.replay_turn`: today's code, the
recorded world and repositories, nothing acts) with the change applied, asking a live model
(the configured endpoint, or the offline stand-in), and the attention batch that led to it is
asked again (`rejudge`). The comparison reports per turn and in total:

* tool calls added and removed (by tool name, counting every call the model made) and calls the
  policy refused;
* attention verdict flips; a turn whose events the change would all ignore is not run, and
  counts as such (its calls removed, its turn tokens gone);
* tokens and USD before and after: before is what the recording's requests used, priced at
  today's price table for the model that answered them; after is what the changed requests used,
  at the price of the model they were sent to (``agent.models.pricing``).

`likely_cost_usd` prices the recorded token counts at the target model before anything is asked, for
the confirmation a real endpoint needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.models.interface import Model, Usage
from storyteller_daemon.agent.models.pricing import cost_usd, price_for
from storyteller_daemon.agent.verdicts import INTERESTED
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import LimitsConfig, ModelPrice, PolicyConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ModelError, ValidationError
from storyteller_daemon.runs.comparison import Change, Comparison, Side, TurnComparison
from storyteller_daemon.runs.rejudge import Rejudged, rejudge
from storyteller_daemon.runs.replay import RunnerFactory, replay_charge, replay_turn
from storyteller_daemon.storage.ledger import LedgerEntry

NOT_RUN = "not run"
"""The outcome of a turn the change's attention verdicts would not have started (and of the
turn an ignored batch did not start)."""
FAILED = "failed"
"""The outcome of a turn that could not be replayed (or a batch that could not be asked)."""
WOULD_RUN = "would run"
"""The outcome of the turn a batch the recording ignored would start under the change."""


@dataclass(frozen=True)
class RecordedTurn:
    """A stored turn to compare, with the attention runs that led to it; or an attention batch
    that ignored its events and started no turn (`record` empty, `run_id` the batch's).

    Attributes:
        storyteller: the storyteller's current settings (before the change).
        attention: (run id, record) of each attention batch with the turn's key.
    """

    run_id: int
    record: dict[str, Any]
    storyteller: Storyteller
    attention: tuple[tuple[int, dict[str, Any]], ...] = ()
    room_id: int | None = None

    @property
    def kind(self) -> str:
        """``turn``, or ``attention`` for an ignored batch."""
        return "turn" if self.record else "attention"

    @property
    def trigger(self) -> str:
        """What started it (the label of its trigger)."""
        return str(self._trigger.get("label", ""))

    @property
    def trigger_kind(self) -> str:
        """The kind of its trigger."""
        return str(self._trigger.get("kind", ""))

    @property
    def _trigger(self) -> dict[str, Any]:
        head = self.record or (self.attention[0][1] if self.attention else {})
        return dict(head.get("trigger") or {})


def _charges(record: Mapping[str, Any]) -> list[tuple[str, Usage]]:
    """(model, usage) of each request a record was charged for."""
    return [
        (str(c.get("model", "")), Usage(**c.get("usage", {}))) for c in record.get("charges") or []
    ]


def _recorded_requests(turn: RecordedTurn) -> list[tuple[str, Usage]]:
    found = [pair for _, record in turn.attention for pair in _charges(record)]
    return found + _charges(turn.record)


def likely_cost_usd(
    turns: Sequence[RecordedTurn], change: Change, prices: Mapping[str, ModelPrice]
) -> float:
    """What asking again is likely to cost: the recorded token counts of every turn and its
    attention batches, at the price of the model each request will be sent to."""
    return sum(
        cost_usd(prices, change.model or model, usage)
        for turn in turns
        for model, usage in _recorded_requests(turn)
    )


def _cursors(trigger: Mapping[str, Any]) -> list[str]:
    """The events' cursors of a stored trigger and those coalesced into it, as JSON text."""
    found = [json.dumps(trigger["event"]["cursor"])] if trigger.get("event") else []
    return found + [c for t in trigger.get("coalesced") or [] for c in _cursors(t)]


def batches_of(
    record: Mapping[str, Any], batches: Sequence[tuple[int, dict[str, Any]]]
) -> tuple[tuple[int, dict[str, Any]], ...]:
    """Of (run id, record) attention batches, those that judged an event the turn `record` is
    about (its trigger's, or one coalesced into it)."""
    wanted = set(_cursors(record.get("trigger") or {}))
    return tuple(
        (run_id, batch)
        for run_id, batch in batches
        if any(wanted & set(_cursors(e.get("trigger") or {})) for e in batch.get("events") or [])
    )


def _starts(turn: Mapping[str, Any], batch: Mapping[str, Any], judged: Rejudged) -> bool:
    """Whether the change attends to an event of the batch that the turn is about (any of the
    batch's events when the turn names none of them, or when there is no turn)."""
    wanted = set(_cursors(turn.get("trigger") or {}))
    events = batch.get("events") or []
    picked = [i for i, e in enumerate(events) if wanted & set(_cursors(e.get("trigger") or {}))]
    return any(judged.after[i] == INTERESTED for i in picked or range(len(judged.after)))


def recorded_side(turn: RecordedTurn, prices: Mapping[str, ModelPrice]) -> Side:
    """The recording: its calls, its outcome, its tokens at today's price of their model."""
    calls = (turn.record.get("turn") or {}).get("calls") or []
    requests = _recorded_requests(turn)
    return Side(
        calls=[str(c["name"]) for c in calls],
        refused=sum(1 for c in calls if c.get("refused")),
        outcome=str((turn.record.get("turn") or {}).get("outcome", NOT_RUN)),
        usage=sum((u for _, u in requests), Usage()),
        usd=sum(cost_usd(prices, m, u) for m, u in requests),
    )


@dataclass
class Comparer:
    """Runs recorded turns again under one change (see the module docstring).

    Attributes:
        model: the live model asked (the configured endpoint, or the offline stand-in).
        runner: builds the turn runner (the daemon's own, `runtime.turns.replay_runner`).
        policy: today's ``[policy]``, and `secrets` the daemon's, for the replays' policy point.
        charges: a ledger entry for every request asked, for the caller to store.
    """

    change: Change
    model: Model
    runner: RunnerFactory
    limits: LimitsConfig
    attention: AttentionOptions
    prices: Mapping[str, ModelPrice]
    clock: Clock
    policy: PolicyConfig | None = None
    secrets: Sequence[str] = ()
    charges: list[LedgerEntry] = field(default_factory=list)

    async def compare(self, turns: Sequence[RecordedTurn]) -> Comparison:
        """Every turn, oldest first as given, compared."""
        estimate = likely_cost_usd(turns, self.change, self.prices)
        comparison = Comparison(self.change, self.change.asking(self.model), estimate)
        for turn in turns:
            comparison.turns.append(await self.compare_turn(turn))
        models = {m for turn in turns for m, _ in _recorded_requests(turn)}
        models |= {charge.model for charge in self.charges}
        comparison.unpriced = sorted(m for m in models if price_for(self.prices, m) is None)
        return comparison

    async def compare_turn(self, turn: RecordedTurn) -> TurnComparison:
        """One turn: its attention batches asked again, then the turn replayed if they attend."""
        record = turn.record
        changed = self.change.apply(turn.storyteller)
        result = TurnComparison(
            turn.run_id,
            turn.kind,
            turn.storyteller.name,
            turn.trigger,
            recorded_side(turn, self.prices),
            Side(),
        )
        after = result.after
        attends = not turn.attention
        for attention_id, attention in turn.attention:
            try:
                judged = await rejudge(
                    attention_id,
                    attention,
                    changed,
                    self.model,
                    self.limits,
                    self.attention,
                )
            except ModelError as exc:
                result.note = f"attention run #{attention_id} could not be asked: {exc}"
                if not record:
                    after.outcome = FAILED
                    return result
                attends = True  # judged as recorded: the turn is still compared
                continue
            self._charge(after, judged, changed, turn)
            result.flips += judged.flips
            attends = attends or _starts(turn.record, attention, judged)
        if not record:  # a batch the recording ignored
            after.outcome = WOULD_RUN if attends else NOT_RUN
            if attends:
                result.note = "the change attends: a turn would run, which no tape can replay"
            return result
        if not attends:
            after.outcome = NOT_RUN
            return result
        try:
            report = await replay_turn(
                turn.run_id,
                record,
                changed,
                self.limits,
                runner=self.runner,
                clock=self.clock,
                live=self.model,
                prices=self.prices,
                policy=self.policy,
                secrets=self.secrets,
            )
        except ValidationError as exc:
            after.outcome = FAILED
            result.note = str(exc)
            return result
        calls = report.replayed["calls"]
        after.calls = [str(c["name"]) for c in calls]
        after.refused = sum(1 for c in calls if c.get("refused"))
        after.outcome = str(report.replayed["outcome"])
        for charge in report.charges:
            after.usage = after.usage + Usage(
                charge.input_tokens,
                charge.cached_tokens,
                charge.output_tokens,
                charge.reasoning_tokens,
            )
            after.usd += charge.cost_usd
        self.charges += report.charges
        return result

    def _charge(
        self, side: Side, judged: Rejudged, storyteller: Storyteller, turn: RecordedTurn
    ) -> None:
        """Count an attention request on `side`, and keep its ledger entry."""
        entry = replay_charge(
            self.clock.now(),
            storyteller,
            (turn.trigger_kind, turn.room_id),
            judged.model,
            judged.usage,
            self.prices,
        )
        side.usage = side.usage + judged.usage
        side.usd += entry.cost_usd
        self.charges.append(entry)
