"""One run of one scenario through the whole daemon, on a throw-away database and virtual time.

The run is the daemon as it runs for a game: the scenario's world (`worlds.open_world`) is
served over the bridge protocol on a local port, the daemon connects to it with the bridge
client, and `build_runtime` wires attention, turns, policy and run records over a copy of a
database the pack was seeded into. Its clock is a `VirtualClock`: the runner makes each event
happen at its time and, whenever the daemon rests (no model call in flight, no attention pass
or turn running, nothing touching the clock), moves time on to the next event or the next
wake-up the daemon waits for. Afterwards `observe` reads what the storyteller did from the
backlog, the run records and the ledger.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse
from storyteller_daemon.alerts import Alerts
from storyteller_daemon.app.adapters import ModelChoice
from storyteller_daemon.app.evals.clock import VirtualClock
from storyteller_daemon.app.evals.observe import Transcript, observe
from storyteller_daemon.app.evals.worlds import (
    ScenarioActionError,
    SnapshotLoader,
    open_world,
    perform,
)
from storyteller_daemon.app.runtime import Runtime
from storyteller_daemon.app.wiring import build_runtime
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import Config, parse_config
from storyteller_daemon.domain.scenarios import Observation, Scenario, ScenarioEvent
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.runtime.pipeline.observers import LoggingObserver
from storyteller_daemon.storage.store import Store
from world_adapter.bridge.client import BridgeWorldClient
from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld
from world_adapter.sim.snapshot import load_snapshot as read_snapshot

START = datetime(2026, 6, 1, 19, 0, tzinfo=UTC)
"""Virtual time at a scenario's 0s: a summer evening, the same for every run."""
SETTLE_AFTER = timedelta(minutes=15)
"""How long after its last event a scenario may go on (attention windows, turns, retries)."""
QUIET_POLLS = 4
POLL_SECONDS = 0.01
"""The daemon rests once, over this many polls this far apart (real time, the runner's own
pacing), nothing was in flight (a model request, a database session, an attention pass, a
turn) and nothing touched the clock."""
TOKEN_ENV = "STORYTELLER_EVAL_BRIDGE_TOKEN"  # noqa: S105 - the name of a variable


class ScenarioRunError(Exception):
    """The run could not be carried out (the world refused an event, the daemon never rested);
    the scenario fails with this message."""


@dataclass(frozen=True)
class EvalModel:
    """The model a scenario is run against.

    Attributes:
        model: the endpoint (the offline stand-in, a configured endpoint, a scripted model).
        description: how reports name it.
        stand_in: the offline stand-in: scenarios needing a language model are skipped.
        model_name: every scope of the storyteller uses this model (None: the pack's).
    """

    model: Model
    description: str
    stand_in: bool = False
    model_name: str | None = None


@dataclass(frozen=True)
class RunOutcome:
    """What one run observed, how long it took (real seconds) and its turns' transcripts."""

    observation: Observation
    seconds: float
    transcripts: tuple[Transcript, ...] = ()
    error: str | None = None


class _Counting:
    """The model with a count of the requests in flight (the daemon is not at rest meanwhile).

    It has no ``close``: each run's runtime closes its model, and every run shares this one's
    client, which the caller closes once all have run.
    """

    def __init__(self, inner: Model) -> None:
        self._inner = inner
        self.in_flight = 0

    @property
    def name(self) -> str:
        return self._inner.name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.in_flight += 1
        try:
            return await self._inner.respond(request)
        finally:
            self.in_flight -= 1


def eval_config(base: Config, database_url: str, bridge_url: str) -> Config:
    """`base` (its model, endpoints, prices, attention, policy, limits and budgets) pointed at
    the throw-away database and the served world; no listener, no Discord, no MCP servers, no
    reflection while idle."""
    data: dict[str, Any] = base.model_dump(mode="json")
    data["database"] = {**data["database"], "url": database_url, "url_env": ""}
    data["world"] = {**data["world"], "kind": "bridge", "url": bridge_url, "token_env": TOKEN_ENV}
    data["http"] = {**data["http"], "enabled": False}
    data["alerts"] = {**data["alerts"], "discord_webhook_env": "", "start_history_file": ""}
    data["runs"] = {**data["runs"], "record": True}
    # Virtual time jumps while the bridge's own pings keep real time: no stall to report.
    data["daemon"] = {**data["daemon"], "intake_stall_seconds": 1e9}
    data["mcp"] = {}
    # Reflection while idle would spend on digests between a scenario's events, as it pleases.
    data["reflection"] = {**data["reflection"], "enabled": False}
    return parse_config(data, "eval")


async def run_scenario(
    scenario: Scenario,
    *,
    storyteller: str,
    template: Path,
    workdir: Path,
    base: Config,
    model: EvalModel,
    real: Clock,
    load_snapshot: SnapshotLoader = read_snapshot,
    settle_seconds: float = 300.0,
) -> RunOutcome:
    """Run `scenario` once on a copy of `template` (a database the pack was seeded into).

    Args:
        storyteller: the storyteller's name in the database.
        workdir: where the copy is made (removed by the caller).
        real: times the run (latency) and nothing else.
        settle_seconds: real seconds the daemon may take to rest after each step.
    """
    began = real.monotonic()
    number = secrets.token_hex(4)
    db_file = workdir / f"run-{number}.db"
    await asyncio.to_thread(shutil.copyfile, template, db_file)
    clock = VirtualClock(START)
    world = open_world(scenario.world, clock.now, f"eval-{number}", load_snapshot=load_snapshot)
    token = secrets.token_hex(16)
    server = WorldServer(world, token, cells=frozenset(r.id for r in world.town_map.rooms))
    url = await server.start()
    counting = _Counting(model.model)
    store = Store.open(f"sqlite+aiosqlite:///{db_file}", clock=clock)
    runtime: Runtime | None = None
    stop = asyncio.Event()
    task: asyncio.Task[None] | None = None
    sources: list[list[str]] = [[] for _ in scenario.events]
    error: str | None = None
    try:
        st = await _prepared(store, storyteller, model.model_name)
        cfg = eval_config(base, f"sqlite+aiosqlite:///{db_file}", url)
        client = BridgeWorldClient(url, token, client_name="storyteller-eval")
        runtime = await build_runtime(
            cfg,
            environ={TOKEN_ENV: token},
            world=client,
            choice=ModelChoice(counting, model.description, offline=model.stand_in),
            store=store,
            clock=clock,
            reload_seconds=3600.0,
            # Each is one more wake-up to step through: counters are read, and the log's
            # minute summaries written, once an hour of virtual time instead.
            alerts=Alerts(clock=clock, watch_seconds=3600.0),
            observer=LoggingObserver(clock=clock),
        )
        # Only the scenario's own heartbeat events happen, at the times it gives.
        runtime.daemon.heartbeats.holding = True
        task = asyncio.create_task(runtime.run(stop), name="eval-daemon")
        driver = _Driver(runtime, task, world, clock, counting, st, settle_seconds)
        try:
            await driver.bounded(runtime.daemon.ready.wait(), "start")
            await driver.bounded(server.wait_subscriptions(1), "subscribe to the world")
            await driver.play(scenario.events, sources)
        except ScenarioRunError as exc:
            error = str(exc)
        seen, transcripts = await observe(runtime.store, st, sources)
    finally:
        stop.set()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
        if runtime is not None:
            await runtime.close()
        else:
            await store.close()
        await server.stop()
    return RunOutcome(seen, real.monotonic() - began, transcripts, error)


async def _prepared(store: Store, name: str, model_name: str | None) -> Storyteller:
    """The storyteller unpaused (and on `model_name` for every scope, when given)."""
    st = await store.storytellers.get(name)
    if model_name is not None:
        st = replace(st, model=model_name, time_model=model_name, attention_model=model_name)
    return await store.storytellers.save(replace(st, paused=False))


class _Driver:
    """Makes the events happen at their times and moves virtual time while the daemon rests."""

    def __init__(
        self,
        runtime: Runtime,
        daemon: asyncio.Task[None],
        world: SimWorld,
        clock: VirtualClock,
        counting: _Counting,
        storyteller: Storyteller,
        settle_seconds: float,
    ) -> None:
        self._runtime = runtime
        self._daemon = daemon
        self._world = world
        self._clock = clock
        self._counting = counting
        self._st = storyteller
        self._id = storyteller.id or 0
        self._settle_seconds = settle_seconds

    async def play(self, events: Sequence[ScenarioEvent], sources: list[list[str]]) -> None:
        """Every event at its time, then on until the storyteller's work is done (at most
        `SETTLE_AFTER` after the last event)."""
        end = (events[-1].at + SETTLE_AFTER).total_seconds() if events else 0.0
        upcoming = list(enumerate(events))
        while True:
            await self._settle()
            if upcoming and upcoming[0][1].at.total_seconds() <= self._clock.elapsed:
                index, event = upcoming.pop(0)
                sources[index] = await self._happen(event)
                continue
            if not upcoming and await self._done():
                return
            wanted = [t for t in (self._clock.next_deadline(),) if t is not None]
            if upcoming:
                wanted.append(upcoming[0][1].at.total_seconds())
            if not wanted or self._clock.elapsed >= end:
                return
            await self._clock.advance_to(min(min(wanted), end))

    async def _happen(self, event: ScenarioEvent) -> list[str]:
        """Make `event` happen; the backlog sources of the work it may have become."""
        if event.action == "heartbeat":
            beat = self._heartbeat(event)
            source = f"heartbeat:{beat.value}:{self._clock.now().isoformat()}"
            await self._runtime.pipeline.heartbeat(self._id, beat)
            return [source]
        try:
            caused = perform(self._world, event)
        except ScenarioActionError as exc:
            raise ScenarioRunError(f"the world refused a {event.action}: {exc}") from None
        watched = self._runtime.pipeline.router.watched_cells()
        heard = [e.cursor for e in caused if e.cell_id in watched]
        if heard:
            wait = self._runtime.daemon.wait_cursor(heard[-1])
            await self.bounded(wait, "receive the event")
        return [f"{self._runtime.cfg.world.kind}:{e.cursor}" for e in caused]

    def _heartbeat(self, event: ScenarioEvent) -> Heartbeat:
        named = event.values.get("heartbeat")
        if named is not None:
            beat = Heartbeat(str(named))
            if beat not in self._st.heartbeats:  # it would be ignored, not judged
                kept = ", ".join(sorted(h.value for h in self._st.heartbeats)) or "none"
                raise ScenarioRunError(
                    f"{self._st.name} has no {beat.value} heartbeat (it has: {kept})"
                )
            return beat
        if not self._st.heartbeats:
            raise ScenarioRunError(f"{self._st.name} subscribes to no heartbeat")
        return min(self._st.heartbeats, key=lambda h: h.seconds)

    async def _done(self) -> bool:
        pipeline = self._runtime.pipeline
        if pipeline.queue_depth(self._id) or self._busy():
            return False
        depth = await pipeline.backlog_depth()
        return not any(sid == self._id and count for (sid, _), count in depth.items())

    def _busy(self) -> bool:
        pipeline = self._runtime.pipeline
        return bool(
            self._counting.in_flight
            or self._runtime.store.db.in_use
            or pipeline.judging(self._id)
            or pipeline.turn_running(self._id)
        )

    async def _settle(self) -> None:
        """Return once the daemon rests (see `QUIET_POLLS`)."""

        async def rest() -> None:
            quiet, mark = 0, -1
            while quiet < QUIET_POLLS:
                await asyncio.sleep(POLL_SECONDS)
                if self._busy() or self._clock.activity != mark:
                    quiet, mark = 0, self._clock.activity
                else:
                    quiet += 1

        await self.bounded(rest(), "come to rest")

    async def bounded(self, work: Awaitable[object], what: str) -> None:
        """`work` done, while the daemon runs and within the settle time."""
        await until_or_stopped(self._daemon, work, self._settle_seconds, what)


async def until_or_stopped(
    daemon: asyncio.Task[None], work: Awaitable[object], seconds: float, what: str
) -> None:
    """Wait for `work` (the daemon to `what`), unless the daemon's task ends first or `seconds`
    of real time pass: then `work` is cancelled and the run fails saying which.

    Raises:
        ScenarioRunError: the daemon stopped, or did not `what` in time.
    """
    job = asyncio.ensure_future(work)
    try:
        done, _ = await asyncio.wait(
            {job, daemon}, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        if not job.done():
            job.cancel()
            await asyncio.gather(job, return_exceptions=True)
    if job in done:
        job.result()
        return
    if daemon in done:
        failure = None if daemon.cancelled() else daemon.exception()
        why = f"{type(failure).__name__}: {failure}" if failure is not None else "it returned"
        raise ScenarioRunError(f"the daemon stopped before it could {what} ({why})")
    raise ScenarioRunError(f"the daemon did not {what} within {seconds:g} s (real time)")
