"""Replaying a recorded turn with today's code, and saying what came out differently.

A replay builds the ordinary turn runner (the runtime's `AgentTurnRunner`, which the caller
hands in as a `RunnerFactory`) over stand-ins and runs the recorded trigger through it: the
prompt is rebuilt, the tool loop runs, the tools run. What differs from a live turn is only what
the runner talks to:

* the model is a `ReplayModel`, which answers the n-th request with the n-th recorded response
  (or, with ``--model``, a live model asked under another name; both `agent.models.replayed`);
* the world and the repositories answer from the run's tape (`tape.Tape`): the recorded prog
  results, situations and lookups come back, and nothing acts on the real world or database.

The storyteller's *current* settings are used, so a replay also shows what a changed prompt or
tool set would have done. The report lists where today's run departs from the recording: request
bodies (instructions, tools, input...), tool calls (name, arguments, result envelope, flags),
calls the tape could not answer, recorded side effects today's code no longer causes, and the
outcome. No differences means the turn is *identical*.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from storyteller_daemon.agent.fencing import Fences
from storyteller_daemon.agent.models.interface import Model, Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.agent.models.replayed import RenamedModel, ReplayModel
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger, turn_key
from storyteller_daemon.agent.turn_runner import TurnRunner
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import LimitsConfig, ModelPrice, PolicyConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.runs.differences import (
    Difference,
    call_differences,
    request_differences,
    tape_differences,
)
from storyteller_daemon.runs.replay_policy import RecordedPolicy
from storyteller_daemon.runs.tape import Tape, decode_trigger, replay_services
from storyteller_daemon.storage.ledger import LedgerEntry

"""Tape methods that change something; one the replay no longer causes is a difference."""


@dataclass
class ReplayReport:
    """What a replay did and how it compares with the recording.

    Attributes:
        run_id: the replayed run.
        model: ``recorded`` or the live model asked.
        recorded: the recorded turn (``TurnRecord.to_dict`` form).
        replayed: the replayed turn, same form.
        differences: where they part; empty means identical.
        charges: ledger rows for the live requests (none for a recorded replay).
    """

    run_id: int
    model: str
    recorded: dict[str, Any]
    replayed: dict[str, Any]
    differences: list[Difference] = field(default_factory=list)
    charges: list[LedgerEntry] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        """No differences at all."""
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "run_id": self.run_id,
            "model": self.model,
            "identical": self.identical,
            "differences": [d.to_dict() for d in self.differences],
            "recorded": {"outcome": self.recorded["outcome"], "calls": self.recorded["calls"]},
            "replayed": {"outcome": self.replayed["outcome"], "calls": self.replayed["calls"]},
            "cost_usd": sum(c.cost_usd for c in self.charges),
        }


RunnerFactory = Callable[
    [TurnServices, Model, LimitsConfig, Clock, Fences, Policy | None], TurnRunner[TurnRecord]
]
"""Builds a turn runner over the given services and model with today's limits, on `clock`,
its prompts fenced with the recorded tokens, its calls passing the given policy point."""

LEGACY_SERVICES = ("world", "situations", "memories", "references", "mcp")
"""What the tape of a record written before records named their services always held."""


def held_services(record: Mapping[str, Any]) -> list[str]:
    """The services a recorded turn's tape was recorded with (`tape.taped_names`).

    Records written before they named them say so with flags: speech history (taped unless
    said otherwise), digests, and the director's plans, claims and providers' queries.
    """
    if "services" in record:
        return list(record["services"])
    held = list(LEGACY_SERVICES)
    held += ["speech"] if record.get("speech_history", True) else []
    held += ["digests"] if record.get("digests", False) else []
    held += ["plans", "claims", "queries"] if record.get("director", False) else []
    return held


async def replay_turn(
    run_id: int,
    record: dict[str, Any],
    storyteller: Storyteller,
    limits: LimitsConfig,
    *,
    runner: RunnerFactory,
    clock: Clock,
    live: Model | None = None,
    live_name: str | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    policy: PolicyConfig | None = None,
    secrets: Sequence[str] = (),
) -> ReplayReport:
    """Run a recorded turn again with today's code and compare.

    Args:
        run_id: the run's id (for the report).
        record: the stored run record of a turn.
        storyteller: the storyteller's current settings.
        limits: today's limits.
        runner: builds the turn runner (the daemon's own, `runtime.turns.replay_runner`).
        clock: the replayed turn's clock; it stamps the live requests' ledger entries too.
        live: a live model to ask instead of the recorded responses; its requests become
            ledger entries (purpose ``replay``) in the report, for the caller to store.
        live_name: the model name `live` is asked under.
        prices: the price table, for the live requests' cost.
        policy: today's ``[policy]`` (default: its defaults), for a turn that passed a policy
            point (`replay_policy.RecordedPolicy`); a record that does not say passed one.
        secrets: today's secrets, for the policy's secret rule.

    Raises:
        ValidationError: the record is not a turn, belongs to another storyteller, or today's
            code fails on it outside the tool loop (e.g. a recorded value it cannot read).
    """
    if record.get("kind") != "turn" or record.get("turn") is None:
        raise ValidationError(f"Run #{run_id} is not a recorded turn; only turns can be replayed.")
    if record["storyteller"]["id"] != storyteller.id:
        raise ValidationError(f"Run #{run_id} belongs to another storyteller.")
    recorded: dict[str, Any] = record["turn"]
    tape = Tape(record.get("tape", []))
    services = replay_services(TurnServices, tape, held_services(record))
    model: Model
    if live is None:
        model = ReplayModel(recorded["requests"])
    else:
        model = live if live_name is None else RenamedModel(live, live_name)
    fences = Fences(record.get("fence") or None, record.get("notes_fence") or None)
    point = None
    if record.get("policed", True):
        point = RecordedPolicy(policy or PolicyConfig(), clock, recorded["calls"], secrets=secrets)
    turns = runner(services, model, limits, clock, fences, point)
    try:
        trigger = decode_trigger(record["trigger"])
        turn = await turns.run_turn(storyteller, trigger, turn_key(storyteller, trigger))
    except Exception as exc:  # e.g. a recorded value today's code cannot read
        raise ValidationError(
            f"Run #{run_id} cannot be replayed with today's code: {type(exc).__name__}: {exc}"
        ) from exc
    replayed = turn.to_dict()
    report = ReplayReport(run_id, "recorded" if live is None else model.name, recorded, replayed)
    if live is not None:
        report.charges = _charges(turn, storyteller, trigger, live_name, prices, clock.now())
    if turn_key(storyteller, trigger) != record.get("turn_key"):
        report.differences.append(
            Difference("turn key", str(record.get("turn_key")), turn_key(storyteller, trigger))
        )
    every_request = live is None  # a live model's later requests follow its own answers
    report.differences += request_differences(recorded, replayed, every_request, live_name)
    report.differences += call_differences(recorded["calls"], replayed["calls"])
    report.differences += tape_differences(tape)
    if recorded["outcome"] != replayed["outcome"]:
        report.differences.append(Difference("outcome", recorded["outcome"], replayed["outcome"]))
    return report


def _charges(
    turn: TurnRecord,
    storyteller: Storyteller,
    trigger: Trigger,
    live_name: str | None,
    prices: Mapping[str, ModelPrice] | None,
    at: datetime,
) -> list[LedgerEntry]:
    """Ledger entries for the live requests of a replay (budgets do not apply to replays)."""
    return [
        replay_charge(
            at,
            storyteller,
            (trigger.kind.value, trigger.room_id),
            live_name or str(request.request.get("model", "")),
            request.usage,
            prices or {},
        )
        for request in turn.requests
    ]


def replay_charge(
    at: datetime,
    storyteller: Storyteller,
    trigger: tuple[str, int | None],
    model: str,
    usage: Usage,
    prices: Mapping[str, ModelPrice],
) -> LedgerEntry:
    """The ledger entry (purpose ``replay``) of one request a replay or comparison asked, for
    a trigger of (kind, room id)."""
    return LedgerEntry(
        occurred_at=at,
        purpose="replay",
        model=model,
        storyteller_id=storyteller.id,
        storyteller_name=storyteller.name,
        trigger_kind=trigger[0],
        room_id=trigger[1],
        input_tokens=usage.input_tokens,
        cached_tokens=usage.cached_tokens,
        output_tokens=usage.output_tokens,
        reasoning_tokens=usage.reasoning_tokens,
        cost_usd=cost_usd(prices, model, usage),
    )


# ---------------------------------------------------------------------- comparing
