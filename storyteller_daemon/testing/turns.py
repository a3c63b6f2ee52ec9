"""A ready-wired `AgentTurnRunner` for tests: a store, a world and a model, the rest defaulted.

    runner = turn_runner(store, SimWorld.harbour_town(), ScriptedModel(...), "digests")
    record = await runner.run_turn(storyteller, trigger, turn_key(storyteller, trigger))

The turn uses the store's situations, memories and references, plus the store's repositories
of the optional services named (`TurnServices` fields: ``"speech"``, ``"digests"``, ``"plans"``,
``"claims"``, ``"queries"``); runs and their costs are stored in the store's database, as the
daemon does, on a `FakeClock` unless a clock is given.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.fencing import Fences
from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.protocol import WorldClient


def store_services(store: Store, world: WorldClient, *uses: str, **given: Any) -> TurnServices:
    """`world` and the store's situations, memories and references, plus the store's
    repository of each optional service in `uses`; `given` sets services outright (a spy, an
    MCP hub, a journal).

    Raises:
        ValueError: a name in `uses` or `given` is not a `TurnServices` field.
    """
    fields = {f.name for f in dataclasses.fields(TurnServices)}
    unknown = sorted((set(uses) | set(given)) - fields)
    if unknown:
        raise ValueError(f"not a turn service: {', '.join(unknown)}")
    chosen: dict[str, Any] = {name: getattr(store, name) for name in uses}
    return TurnServices(
        **{
            "world": world,
            "situations": store.situations,
            "memories": store.memories,
            "references": store.references,
            **chosen,
            **given,
        }
    )


def turn_runner(
    store: Store,
    world: WorldClient,
    model: Model,
    *uses: str,
    services: TurnServices | None = None,
    clock: Clock | None = None,
    limits: LimitsConfig | None = None,
    stats: RuntimeStats | None = None,
    recorder: RunRecorder | None = None,
    recorded: bool = True,
    alerts: AlertSink | None = None,
    attention: AttentionOptions | None = None,
    lookups: WorldClient | None = None,
    policy: Policy | None = None,
    fences: Fences | None = None,
) -> AgentTurnRunner:
    """A turn runner over `store` and `world` asking `model`.

    Args:
        store: whose repositories the turn uses.
        world: the game.
        model: the endpoint.
        uses: optional services to add from the store (see `store_services`).
        services: the turn's services outright (`uses` is then ignored).
        clock: the runner's clock (default: a new `FakeClock`).
        limits: default `LimitsConfig()`.
        stats: default a new `RuntimeStats`.
        recorder: the run recorder (default: one storing runs and their costs in the store's
            database, or, with `recorded` false, one storing nothing).
        recorded: whether the default recorder stores anything.
        alerts: see `AgentTurnRunner`.
        attention: see `AgentTurnRunner`.
        lookups: see `AgentTurnRunner`.
        policy: see `AgentTurnRunner`.
        fences: see `AgentTurnRunner`.
    """
    clock = clock or FakeClock()
    if recorder is None:
        recorder = (
            RunRecorder(store.runs, store.ledger, clock)
            if recorded
            else RunRecorder(None, None, clock)
        )
    return AgentTurnRunner(
        services or store_services(store, world, *uses),
        model=model,
        limits=limits or LimitsConfig(),
        clock=clock,
        stats=stats or RuntimeStats(),
        recorder=recorder,
        alerts=alerts,
        attention=attention,
        lookups=lookups,
        policy=policy,
        fences=fences,
    )
