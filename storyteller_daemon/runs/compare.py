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

`estimate_usd` prices the recorded token counts at the target model before anything is asked, for
the confirmation a real endpoint needs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.models.interface import Model, Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.agent.records import usage_dict
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import LimitsConfig, ModelPrice, PolicyConfig
from storyteller_daemon.domain.storytellers import ReasoningEffort, Storyteller
from storyteller_daemon.errors import ModelError, ValidationError
from storyteller_daemon.runs.rejudge import Flip, Rejudged, rejudge
from storyteller_daemon.runs.replay import RunnerFactory, replay_turn
from storyteller_daemon.storage.ledger import LedgerEntry

NOT_RUN = "not run"
"""The outcome of a turn the change's attention verdicts would not have started."""


@dataclass(frozen=True)
class Change:
    """What is changed: the model asked, the reasoning effort sent, the system prompt.

    Attributes:
        model: every request is sent under this model name (None: each as recorded today).
        effort: every request is sent with this reasoning effort (None: the storyteller's).
        prompt: the system prompt of every compared turn (None: the storyteller's own);
            heartbeats use it too, instead of a separate time system prompt.
        prompt_file: where `prompt` was read from, for the report.
    """

    model: str | None = None
    effort: ReasoningEffort | None = None
    prompt: str | None = None
    prompt_file: str | None = None

    def apply(self, storyteller: Storyteller) -> Storyteller:
        """The storyteller's settings with the change: one model and one effort for turns,
        heartbeats and attention alike, and the changed prompt."""
        changed = storyteller
        if self.model is not None:
            model = self.model
            changed = replace(changed, model=model, time_model=model, attention_model=model)
        if self.effort is not None:
            effort = self.effort
            changed = replace(
                changed,
                reasoning_effort=effort,
                time_reasoning_effort=effort,
                attention_reasoning_effort=effort,
            )
        if self.prompt is not None:
            changed = replace(changed, system_prompt=self.prompt, time_system_prompt=None)
        return changed

    def asking(self, model: Model) -> str:
        """What is asked: `model`'s name, with the changed model and effort."""
        parts = [model.name]
        parts += [f"as {self.model}"] if self.model else []
        parts += [f"at {self.effort.value} effort"] if self.effort else []
        return " ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "model": self.model,
            "effort": self.effort.value if self.effort is not None else None,
            "prompt_file": self.prompt_file,
        }


@dataclass(frozen=True)
class RecordedTurn:
    """A stored turn to compare, with the attention runs that led to it.

    Attributes:
        storyteller: the storyteller's current settings (before the change).
        attention: (run id, record) of each attention batch with the turn's key.
    """

    run_id: int
    record: dict[str, Any]
    storyteller: Storyteller
    attention: tuple[tuple[int, dict[str, Any]], ...] = ()
    room_id: int | None = None


@dataclass
class Side:
    """One side of a turn's comparison: the recording, or the run under the change."""

    calls: list[str] = field(default_factory=list)
    refused: int = 0
    outcome: str = ""
    usage: Usage = field(default_factory=Usage)
    usd: float = 0.0

    @property
    def tokens(self) -> int:
        """Input and output tokens."""
        return self.usage.input_tokens + self.usage.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "outcome": self.outcome,
            "calls": list(self.calls),
            "refused": self.refused,
            "usage": usage_dict(self.usage),
            "tokens": self.tokens,
            "usd": self.usd,
        }


@dataclass
class TurnComparison:
    """One recorded turn before and after the change.

    Attributes:
        note: why the after side is empty or partial (the replay failed; a request failed).
    """

    run_id: int
    storyteller: str
    trigger: str
    before: Side
    after: Side
    flips: list[Flip] = field(default_factory=list)
    note: str = ""

    @property
    def added(self) -> Counter[str]:
        """Calls the change makes that the recording did not, by tool."""
        return Counter(self.after.calls) - Counter(self.before.calls)

    @property
    def removed(self) -> Counter[str]:
        """Calls the recording made that the change does not, by tool."""
        return Counter(self.before.calls) - Counter(self.after.calls)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "run_id": self.run_id,
            "storyteller": self.storyteller,
            "trigger": self.trigger,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "added": dict(sorted(self.added.items())),
            "removed": dict(sorted(self.removed.items())),
            "flips": [f.to_dict() for f in self.flips],
            "note": self.note,
        }


@dataclass
class Comparison:
    """Every compared turn and the totals."""

    change: Change
    model: str
    estimate_usd: float
    turns: list[TurnComparison] = field(default_factory=list)

    def total(self, side: str) -> Side:
        """The sum of one side (``before`` or ``after``) over every turn."""
        total = Side()
        for turn in self.turns:
            part: Side = getattr(turn, side)
            total.calls += part.calls
            total.refused += part.refused
            total.usage = total.usage + part.usage
            total.usd += part.usd
        return total

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form with stable keys."""
        added: Counter[str] = sum((t.added for t in self.turns), Counter())
        removed: Counter[str] = sum((t.removed for t in self.turns), Counter())
        before, after = self.total("before"), self.total("after")
        return {
            "change": self.change.to_dict(),
            "model": self.model,
            "estimate_usd": self.estimate_usd,
            "turns": [t.to_dict() for t in self.turns],
            "total": {
                "turns": len(self.turns),
                "added": dict(sorted(added.items())),
                "removed": dict(sorted(removed.items())),
                "flips": sum(len(t.flips) for t in self.turns),
                "refused": {"before": before.refused, "after": after.refused},
                "tokens": {"before": before.tokens, "after": after.tokens},
                "usd": {"before": before.usd, "after": after.usd},
            },
        }


def _charges(record: Mapping[str, Any]) -> list[tuple[str, Usage]]:
    """(model, usage) of each request a record was charged for."""
    return [
        (str(c.get("model", "")), Usage(**c.get("usage", {}))) for c in record.get("charges") or []
    ]


def _recorded_requests(turn: RecordedTurn) -> list[tuple[str, Usage]]:
    found = [pair for _, record in turn.attention for pair in _charges(record)]
    return found + _charges(turn.record)


def estimate_usd(
    turns: Sequence[RecordedTurn], change: Change, prices: Mapping[str, ModelPrice]
) -> float:
    """What asking again is likely to cost: the recorded token counts of every turn and its
    attention batches, at the price of the model each request will be sent to."""
    return sum(
        cost_usd(prices, change.model or model, usage)
        for turn in turns
        for model, usage in _recorded_requests(turn)
    )


def recorded_side(turn: RecordedTurn, prices: Mapping[str, ModelPrice]) -> Side:
    """The recording: its calls, its outcome, its tokens at today's price of their model."""
    calls = (turn.record.get("turn") or {}).get("calls") or []
    requests = _recorded_requests(turn)
    return Side(
        calls=[str(c["name"]) for c in calls],
        refused=sum(1 for c in calls if c.get("refused")),
        outcome=str((turn.record.get("turn") or {}).get("outcome", "")),
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
        estimate = estimate_usd(turns, self.change, self.prices)
        comparison = Comparison(self.change, self.change.asking(self.model), estimate)
        for turn in turns:
            comparison.turns.append(await self.compare_turn(turn))
        return comparison

    async def compare_turn(self, turn: RecordedTurn) -> TurnComparison:
        """One turn: its attention batches asked again, then the turn replayed if they attend."""
        record = turn.record
        changed = self.change.apply(turn.storyteller)
        result = TurnComparison(
            turn.run_id,
            turn.storyteller.name,
            str((record.get("trigger") or {}).get("label", "")),
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
                attends = True  # judged as recorded: the turn is still compared
                continue
            self._charge(after, judged, changed, turn)
            result.flips += judged.flips
            attends = attends or judged.attends
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
            after.outcome = "failed"
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
        usd = cost_usd(self.prices, judged.model, judged.usage)
        side.usage = side.usage + judged.usage
        side.usd += usd
        usage = judged.usage
        self.charges.append(
            LedgerEntry(
                occurred_at=self.clock.now(),
                purpose="replay",
                model=judged.model,
                storyteller_id=storyteller.id,
                storyteller_name=storyteller.name,
                trigger_kind=str((turn.record.get("trigger") or {}).get("kind", "")),
                room_id=turn.room_id,
                input_tokens=usage.input_tokens,
                cached_tokens=usage.cached_tokens,
                output_tokens=usage.output_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                cost_usd=usd,
            )
        )
