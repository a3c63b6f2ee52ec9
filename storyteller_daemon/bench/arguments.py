"""``storyteller bench arguments``: bad tool-call arguments through whole turns.

The case set (`tests/data/bad_arguments.json`, the project's own) holds calls to every built-in
and to a custom tool for every prog the sim world offers, so every prog parameter type: malformed
and empty JSON, deep nesting, huge strings, wrong types, nulls, negative, zero, huge, unknown and
wrong-kind ids, extra keys. Each case is one heartbeat turn of the real turn runner (prompt,
policy, tool loop, dispatch, run record on SQLite) against the sim world, with a scripted model
that makes the case's call and then calls Noop.

A case *crashes* when the turn raises, or when a tool's handler fails with an unexpected
exception (the model then reads only "Tool handler error"). An *invalid id sent* is a prog call
reaching the game with a character, room, item or exit it has no such thing for, or any request
carrying an id that is not a positive signed 64-bit integer. A case's envelope is also held to
what the case set expects of it (``error`` or ``ok``).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from progs.scalars import is_id
from progs.types import ProgParameter, ProgSignature, ProgType, supports_tool_parameter
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import LimitsConfig, PolicyConfig
from storyteller_daemon.domain.direction import Direction
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.lookup_cache import CachedWorld
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.world import InstrumentedWorld, WorldCall
from world_adapter.facts import EntityKind
from world_adapter.sim import SimWorld

CASES = Path(__file__).resolve().parents[2] / "tests" / "data" / "bad_arguments.json"
"""The case set, in a source checkout."""
HANDLER_ERROR = "Tool handler error: "
"""How an envelope begins when a handler failed unexpectedly (`agent.tools.base.invoke`)."""
_KINDS = {
    ProgType.CHARACTER: EntityKind.CHARACTER,
    ProgType.LOCATION: EntityKind.LOCATION,
    ProgType.ITEM: EntityKind.ITEM,
    ProgType.EXIT: EntityKind.EXIT,
}
_START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
_PERMISSIVE = PolicyConfig(
    max_prog_calls_per_turn=50,
    target_cooldown_seconds=0.0,
    max_prog_calls_per_hour=1_000_000,
    max_prog_calls_per_storyteller_per_hour=1_000_000,
    max_prog_calls_per_storyteller_per_day=1_000_000,
)
"""Caps and cooldowns out of the way, so that every case's call reaches its tool."""


@dataclass(frozen=True)
class Case:
    """One bad (or borderline) call and what the model should get back."""

    id: str
    tool: str
    kind: str
    text: str
    """The call's argument text, exactly as the model sends it."""
    expect: str
    """``error`` or ``ok``."""


@dataclass
class Outcome:
    """What one case did."""

    case: Case
    envelope: dict[str, Any] | None = None
    crash: str | None = None
    invalid_ids: list[str] = field(default_factory=list)
    prog_calls: int = 0

    @property
    def as_expected(self) -> bool:
        """Whether the envelope is the kind the case set expects."""
        return self.envelope is not None and self.envelope.get("ok") is (self.case.expect == "ok")


def load_cases(path: Path = CASES) -> list[Case]:
    """The case set, each case's argument text built (see `tests/data/bad_arguments.json`).

    Raises:
        FileNotFoundError: no case set at `path`.
        ValueError: a case is not well formed.
    """
    data = json.loads(path.read_text(encoding="utf-8"))
    bases: dict[str, dict[str, Any]] = data["bases"]
    cases = [_case(entry, bases) for entry in data["cases"]]
    seen = [c.id for c in cases]
    if len(set(seen)) != len(seen):
        raise ValueError("case ids repeat")
    return cases


def _case(entry: Mapping[str, Any], bases: Mapping[str, dict[str, Any]]) -> Case:
    if entry.get("expect") not in ("error", "ok"):
        raise ValueError(f"case {entry.get('id')}: expect must be 'error' or 'ok'")
    if "raw" in entry:
        text = str(entry["raw"])
    elif "deep" in entry:
        depth, key = int(entry["deep"]), json.dumps(entry.get("key", "Id"))
        if entry.get("nest") == "object":
            text = f"{{{key}: " * depth + "1" + "}" * depth
        else:
            text = f"{{{key}: " + "[" * depth + "]" * depth + "}"
    else:
        arguments = dict(bases[entry["base"]]) if "base" in entry else {}
        arguments.update(entry.get("set", {}))
        for key in entry.get("drop", ()):
            arguments.pop(key, None)
        for key, length in entry.get("long", {}).items():
            arguments[key] = "x" * int(length)
        for key, length in entry.get("digits", {}).items():
            arguments[key] = "7" * int(length)
        text = json.dumps(arguments, ensure_ascii=False)
    return Case(str(entry["id"]), str(entry["tool"]), str(entry["kind"]), text, entry["expect"])


def custom_tools(catalogue: Iterable[ProgSignature]) -> tuple[CustomTool, ...]:
    """A custom tool for every prog that compiles and whose parameters a call can supply."""
    return tuple(
        CustomTool(
            p.name,
            p.description or p.name,
            p.name,
            False,
            tuple((q.name, f"The {q.type.describe()}.") for q in p.parameters),
        )
        for p in catalogue
        if not p.compile_error and all(supports_tool_parameter(q.type) for q in p.parameters)
    )


@dataclass
class ArgumentsRig:
    """A storyteller with every built-in and a custom tool per prog, on a sim world and a store."""

    store: Store
    sim: SimWorld
    game: InstrumentedWorld[SimWorld]
    storyteller: Storyteller
    clock: FakeClock
    limits: LimitsConfig = field(default_factory=LimitsConfig)

    async def run(self, case: Case) -> Outcome:
        """One heartbeat turn making the case's call; never raises for the case's sake."""
        outcome = Outcome(case)
        before = len(self.game.calls)
        model = ScriptedModel(calls((case.tool, case.text)), then=calls(("Noop", {})))
        services = TurnServices(
            world=self.game,
            situations=self.store.situations,
            memories=self.store.memories,
            references=self.store.references,
            plans=self.store.plans,
            claims=self.store.claims,
        )
        runner = AgentTurnRunner(
            services,
            # as the daemon wires it: turns ask the world, attention the cache
            lookups=CachedWorld(self.game, self.clock),
            model=model,
            limits=self.limits,
            clock=self.clock,
            stats=RuntimeStats(),
            recorder=RunRecorder(self.store.runs, None, self.clock),
            policy=Policy(_PERMISSIVE, self.clock),
        )
        trigger = Trigger(TriggerKind.HEARTBEAT, self.clock.now(), heartbeat=Heartbeat.HOUR)
        try:
            record = await runner.run_turn(self.storyteller, trigger, f"arguments:{case.id}")
        except Exception as exc:  # a crash is what this benchmark counts
            outcome.crash = f"{type(exc).__name__}: {exc}"[:300]
        else:
            outcome.envelope, outcome.crash = _first_call(record, case)
        sent = self.game.calls[before:]
        outcome.prog_calls = sum(c.method == "execute_prog" for c in sent)
        outcome.invalid_ids = await self.invalid_ids(sent)
        await self.clock.advance(60)
        return outcome

    async def invalid_ids(self, sent: Sequence[WorldCall]) -> list[str]:
        """The ids in `sent` that name nothing of their kind, or that are out of range."""
        found = [
            f"{c.method}: {n}"
            for c in sent
            if c.method != "execute_prog"  # a prog's numbers are checked by type below
            for n in _out_of_range(c.args, c.kwargs)
        ]
        catalogue = await self.sim.progs()
        for call in sent:
            if call.method != "execute_prog":
                continue
            prog = next(p for p in catalogue if p.matches(str(call.args[0])))
            arguments: Mapping[str, Any] = call.args[1]
            for parameter in prog.parameters:
                for kind, value in _named_things(parameter, arguments.get(parameter.name)):
                    known = isinstance(value, int) and await self.sim.entity(kind, value)
                    if not known:
                        found.append(f"{prog.name}.{parameter.name}: {kind.value} {value!r}")
        return found


def _first_call(record: TurnRecord, case: Case) -> tuple[dict[str, Any] | None, str | None]:
    if not record.calls:
        return None, f"the turn made no call ({record.outcome.value}: {record.error})"
    envelope = dict(record.calls[0].envelope)
    error = str(envelope.get("error", ""))
    return envelope, error if error.startswith(HANDLER_ERROR) else None


def _out_of_range(*values: Any) -> list[int]:
    """Integers anywhere in `values` (ids, among others) that no id can be."""
    found: list[int] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and not is_id(value):
            found.append(value)
        elif isinstance(value, Mapping):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
        elif hasattr(value, "__dataclass_fields__"):
            stack.extend(getattr(value, name) for name in value.__dataclass_fields__)
    return found


def _named_things(parameter: ProgParameter, value: Any) -> list[tuple[EntityKind, Any]]:
    """The things a converted argument names, by kind (nothing for other types)."""
    values = value if parameter.type.collection and isinstance(value, list) else [value]
    element = parameter.type.element
    things: list[tuple[EntityKind, Any]] = []
    for item in values:
        if element in _KINDS:
            things.append((_KINDS[element], item))
        elif element in (ProgType.OUTFIT, ProgType.OUTFIT_ITEM) and isinstance(item, dict):
            things.append((EntityKind.CHARACTER, item.get("owner_character_id")))
            if element is ProgType.OUTFIT_ITEM:
                things.append((EntityKind.ITEM, item.get("item_id")))
    return things


@asynccontextmanager
async def arguments_rig(database_url: str | None = None) -> AsyncIterator[ArgumentsRig]:
    """A rig on a migrated store (a throw-away SQLite file unless `database_url` is given)."""
    with tempfile.TemporaryDirectory(prefix="storyteller-arguments-") as tmp:
        url = database_url or f"sqlite+aiosqlite:///{Path(tmp) / 'arguments.db'}"
        store = Store.open(url, clock=SystemClock())
        try:
            await store.db.upgrade()
            clock = FakeClock(_START)
            sim = SimWorld.harbour_town(clock=clock.now)
            created = await store.storytellers.create(f"Bad Arguments {clock.now():%H%M%S%f}")
            storyteller = replace(
                created,
                custom_tools=custom_tools(await sim.progs()),
                direction=Direction(plans=True),
            )
            yield ArgumentsRig(store, sim, InstrumentedWorld(sim), storyteller, clock)
        finally:
            await store.close()


async def run_arguments_bench(
    path: Path = CASES, database_url: str | None = None
) -> tuple[dict[str, object], list[Outcome]]:
    """Run every case; the report's rows and each case's outcome."""
    cases = load_cases(path)
    async with arguments_rig(database_url) as rig:
        outcomes = [await rig.run(case) for case in cases]
    tools = {c.tool for c in cases}
    report: dict[str, object] = {
        "cases": len(cases),
        "tools covered": len(tools),
        "crashes": sum(o.crash is not None for o in outcomes),
        "invalid ids sent to the game": sum(len(o.invalid_ids) for o in outcomes),
        "tool errors": sum(o.envelope is not None and not o.envelope["ok"] for o in outcomes),
        "valid results": sum(o.envelope is not None and o.envelope["ok"] is True for o in outcomes),
        "not as the case set expects": [o.case.id for o in outcomes if not o.as_expected],
        "prog calls that reached the game": sum(o.prog_calls for o in outcomes),
    }
    return report, outcomes
