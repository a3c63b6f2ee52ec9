"""Replaying a recorded turn with today's code, and saying what came out differently.

A replay builds the ordinary `AgentTurnRunner` over stand-ins and runs the recorded trigger
through it: the prompt is rebuilt, the tool loop runs, the tools run. What differs from a live
turn is only what the runner talks to:

* the model is a `ReplayModel`, which answers the n-th request with the n-th recorded response
  (or, with ``--model``, a live model asked under another name);
* the world and the repositories answer from the run's tape (`tape.Tape`): the recorded prog
  results, situations and lookups come back, and nothing acts on the real world or database.

The storyteller's *current* settings are used, so a replay also shows what a changed prompt or
tool set would have done. The report lists where today's run departs from the recording: request
bodies (instructions, tools, input...), tool calls (name, arguments, result envelope, flags),
calls the tape could not answer, recorded side effects today's code no longer causes, and the
outcome. No differences means the turn is *identical*.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from storyteller_daemon.agent.model import (
    FunctionCall,
    Model,
    ModelRequest,
    ModelResponse,
    Usage,
)
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import LimitsConfig, ModelPrice
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.errors import ModelFatalError, ModelTransientError, ValidationError
from storyteller_daemon.runtime.clock import SystemClock
from storyteller_daemon.runtime.costs import cost_usd
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.tape import Services, Tape, decode_trigger
from storyteller_daemon.runtime.turns import AgentTurnRunner, turn_key
from storyteller_daemon.storage.runs import LedgerEntry

EXCERPT = 160
SIDE_EFFECTS = frozenset({"execute_prog", "create", "update", "set_scope", "forget"})
"""Tape methods that change something; one the replay no longer causes is a difference."""


def response_from(entry: dict[str, Any]) -> ModelResponse:
    """The `ModelResponse` a recorded request entry holds."""
    body = entry["response"]
    return ModelResponse(
        id=body["id"],
        model=body["model"],
        status=body["status"],
        function_calls=tuple(
            FunctionCall(c["call_id"], c["name"], c["arguments"]) for c in body["function_calls"]
        ),
        output_text=body["output_text"],
        continuation=tuple(body["continuation"]),
        usage=Usage(**entry["usage"]),
        incomplete_reason=body.get("incomplete_reason"),
    )


class ReplayModel:
    """Answers the n-th request with the n-th recorded response (or recorded model error)."""

    name = "replay"

    def __init__(self, recorded: Sequence[dict[str, Any]]) -> None:
        self._recorded = list(recorded)
        self.sent: list[ModelRequest] = []

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The recorded answer to the request in this position."""
        self.sent.append(request)
        index = len(self.sent) - 1
        if index >= len(self._recorded):
            raise ModelFatalError(f"replay: the recording has no response #{index + 1}")
        entry = self._recorded[index]
        if entry.get("response") is None:
            error = str(entry.get("error") or "no response recorded")
            if error.startswith("ModelFatalError"):
                raise ModelFatalError(f"replayed: {error}")
            raise ModelTransientError(f"replayed: {error}")
        return response_from(entry)


class RenamedModel:
    """A live model asked every request under one model name (``runs replay --model``)."""

    def __init__(self, inner: Model, model_name: str) -> None:
        self._inner = inner
        self._model_name = model_name

    @property
    def name(self) -> str:
        """The wrapped endpoint's name and the model asked."""
        return f"{self._inner.name} as {self._model_name}"

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Ask the inner model, under the chosen name."""
        return await self._inner.respond(replace(request, model=self._model_name))


@dataclass(frozen=True)
class Difference:
    """One place where the replay departed from the recording."""

    where: str
    recorded: str
    replayed: str

    def to_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {"where": self.where, "recorded": self.recorded, "replayed": self.replayed}


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


async def replay_turn(
    run_id: int,
    record: dict[str, Any],
    storyteller: Storyteller,
    limits: LimitsConfig,
    *,
    live: Model | None = None,
    live_name: str | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
    now: Callable[[], datetime] | None = None,
) -> ReplayReport:
    """Run a recorded turn again with today's code and compare.

    Args:
        run_id: the run's id (for the report).
        record: the stored run record of a turn.
        storyteller: the storyteller's current settings.
        limits: today's limits.
        live: a live model to ask instead of the recorded responses; its requests become
            ledger entries (purpose ``replay``) in the report, for the caller to store.
        live_name: the model name `live` is asked under.
        prices: the price table, for the live requests' cost.
        now: stamps the live requests' ledger entries.

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
    services = Services.replayed_from(tape, speech=record.get("speech_history", True))
    model: Model
    if live is None:
        model = ReplayModel(recorded["requests"])
    else:
        model = live if live_name is None else RenamedModel(live, live_name)
    runner = AgentTurnRunner(
        world=services.world,
        situations=services.situations,
        memories=services.memories,
        references=services.references,
        speech=services.speech,
        model=model,
        limits=limits,
        clock=SystemClock(),
        stats=RuntimeStats(),
    )
    try:
        trigger = decode_trigger(record["trigger"])
        turn = await runner.run_turn(storyteller, trigger, fence=record.get("fence") or None)
    except Exception as exc:  # e.g. a recorded value today's code cannot read
        raise ValidationError(
            f"Run #{run_id} cannot be replayed with today's code: {type(exc).__name__}: {exc}"
        ) from exc
    replayed = turn.to_dict()
    report = ReplayReport(run_id, "recorded" if live is None else model.name, recorded, replayed)
    if live is not None:
        report.charges = _charges(turn, storyteller, trigger, live_name, prices, now)
    if turn_key(storyteller, trigger) != record.get("turn_key"):
        report.differences.append(
            Difference("turn key", str(record.get("turn_key")), turn_key(storyteller, trigger))
        )
    every_request = live is None  # a live model's later requests follow its own answers
    report.differences += _request_differences(recorded, replayed, every_request, live_name)
    report.differences += _call_differences(recorded["calls"], replayed["calls"])
    report.differences += _tape_differences(tape)
    if recorded["outcome"] != replayed["outcome"]:
        report.differences.append(Difference("outcome", recorded["outcome"], replayed["outcome"]))
    return report


def _charges(
    turn: TurnRecord,
    storyteller: Storyteller,
    trigger: Trigger,
    live_name: str | None,
    prices: Mapping[str, ModelPrice] | None,
    now: Callable[[], datetime] | None,
) -> list[LedgerEntry]:
    """Ledger entries for the live requests of a replay (budgets do not apply to replays)."""
    at = (now or SystemClock().now)()
    entries = []
    for request in turn.requests:
        model = live_name or str(request.request.get("model", ""))
        usage = request.usage
        entries.append(
            LedgerEntry(
                occurred_at=at,
                purpose="replay",
                model=model,
                storyteller_id=storyteller.id,
                storyteller_name=storyteller.name,
                trigger_kind=trigger.kind.value,
                room_id=trigger.room_id,
                input_tokens=usage.input_tokens,
                cached_tokens=usage.cached_tokens,
                output_tokens=usage.output_tokens,
                reasoning_tokens=usage.reasoning_tokens,
                cost_usd=cost_usd(prices or {}, model, usage),
            )
        )
    return entries


# ---------------------------------------------------------------------- comparing


def excerpt(value: Any) -> str:
    """A value as short, one-line text for a report line."""
    text = excerpt_text(value)
    return text if len(text) <= EXCERPT else text[: EXCERPT - 1] + "…"


def excerpts(before: Any, after: Any) -> tuple[str, str]:
    """Both values as short text, starting shortly before the first place they differ."""
    a, b = excerpt_text(before), excerpt_text(after)
    same = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )
    cut = max(same - EXCERPT // 4, 0)
    if cut == 0:
        return excerpt(a), excerpt(b)
    return excerpt("…" + a[cut:]), excerpt("…" + b[cut:])


def excerpt_text(value: Any) -> str:
    """A value as one line of text."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return " ".join(text.split())


def _without_call_ids(value: Any) -> Any:
    """Input items with call ids left out: made-up ids differ between runs by design."""
    if isinstance(value, list):
        return [_without_call_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_call_ids(v) for k, v in value.items() if k != "call_id"}
    return value


def _request_differences(
    recorded: dict[str, Any], replayed: dict[str, Any], every: bool, live_name: str | None
) -> list[Difference]:
    found: list[Difference] = []
    old, new = recorded["requests"], replayed["requests"]
    count = max(len(old), len(new)) if every else min(1, len(old), len(new))
    for index in range(count):
        where = f"request {index + 1}"
        if index >= len(new):
            found.append(Difference(where, "sent", "not sent by today's code"))
            continue
        if index >= len(old):
            found.append(Difference(where, "not in the recording", "sent by today's code"))
            continue
        before, after = old[index]["request"], new[index]["request"]
        for key in sorted(set(before) | set(after)):
            if key == "model" and live_name is not None:
                continue
            a, b = _without_call_ids(before.get(key)), _without_call_ids(after.get(key))
            if a == b:
                continue
            if key == "input" and isinstance(a, list) and isinstance(b, list):
                found.append(_first_item_difference(where, a, b))
            else:
                found.append(Difference(f"{where} {key}", *excerpts(a, b)))
    return found


def _first_item_difference(where: str, before: list[Any], after: list[Any]) -> Difference:
    for index in range(max(len(before), len(after))):
        a = before[index] if index < len(before) else None
        b = after[index] if index < len(after) else None
        if a != b:
            return Difference(f"{where} input item {index + 1}", *excerpts(a, b))
    return Difference(f"{where} input", excerpt(before), excerpt(after))


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments


def call_line(call: dict[str, Any]) -> str:
    """``Name {"arg": ...}`` for a recorded call."""
    return f"{call['name']} {call['arguments']}"


def _flags(call: dict[str, Any]) -> str:
    return (
        ",".join(
            k for k in ("skipped", "refused", "malformed", "shadowed", "parked") if call.get(k)
        )
        or "run"
    )


def _call_differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[Difference]:
    found: list[Difference] = []
    for index in range(max(len(old), len(new))):
        where = f"call {index + 1}"
        if index >= len(new):
            found.append(Difference(where, call_line(old[index]), "not made"))
            continue
        if index >= len(old):
            found.append(Difference(where, "not made", call_line(new[index])))
            continue
        a, b = old[index], new[index]
        if a["name"] != b["name"] or _canonical(a["arguments"]) != _canonical(b["arguments"]):
            found.append(Difference(where, call_line(a), call_line(b)))
        elif a["envelope"] != b["envelope"]:
            found.append(
                Difference(f"{where} {a['name']} result", *excerpts(a["envelope"], b["envelope"]))
            )
        if _flags(a) != _flags(b):
            found.append(Difference(f"{where} {a['name']}", _flags(a), _flags(b)))
    return found


def _tape_differences(tape: Tape) -> list[Difference]:
    found = [
        Difference(
            f"{miss['service']}.{miss['method']}",
            "not in the recording",
            excerpt(miss["args"]),
        )
        for miss in tape.misses
    ]
    for entry in tape.unused():
        if entry["method"] in SIDE_EFFECTS:
            found.append(
                Difference(
                    f"{entry['service']}.{entry['method']}",
                    excerpt(entry["args"]),
                    "not asked by today's code",
                )
            )
    return found
