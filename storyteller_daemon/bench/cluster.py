"""``storyteller bench cluster``: several real daemons over one PostgreSQL, hurt on purpose.

``--daemons`` ``storyteller run`` processes with ``[cluster]`` on share ``--storytellers``
copies of the harbour watch (each watching one room of the sim town) on one database
(``--database-url``, or a throw-away embedded server). Each daemon has a bridge of its own onto
one shared sim world (`cluster_rig.GameSide`: prog calls are checked against the lease as they
arrive) and a stand-in model endpoint of its own (the `Oracle` of ``bench stream``, with acting
turns), so every request and prog call is known by sender. The labelled busy stream is played
into the world ``--speedup`` times faster than its own times (the daemons run on real time), and
while it plays the bench, in turn:

1. waits for the even spread and counts storytellers held and model requests per daemon;
2. kills one with ``kill -9`` and plays something that matters into its rooms: the seconds until
   each of its storytellers is held by another daemon and its first turn starts; it restarts;
3. stops one with SIGTERM: the seconds until its storytellers are all held by others;
4. freezes one with SIGSTOP until its storytellers are taken over, then resumes it.

After the stream it counts accepted events lost (an event of a watched room with no work item
for a storyteller watching it), narrations run twice, prog calls from a daemon that did not hold
the lease and work-item writes it made (a PostgreSQL trigger names the writing daemon's role;
a world event's work, which the daemon that stored the event adds for every storyteller, is
not such a write, every move of it is), and model requests against the ledger. Last,
throughput: ``--burst`` events at once to all the daemons, then to one alone (the others
stopped), each timed until every work item is settled.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import signal
import tempfile
from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

from storyteller_daemon.bench import cluster_rig as rig
from storyteller_daemon.bench.cluster_rig import REAL, ClusterBenchOptions, p95, spread
from storyteller_daemon.bench.throwaway_pg import throwaway_postgres
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.storage.store import Store


async def run_cluster_bench(
    options: ClusterBenchOptions, progress: Callable[[str], None] | None = None
) -> dict[str, object]:
    """Run the benchmark and return its report; `progress` hears each phase as it starts."""
    if not (options.database_url or "postgresql+asyncpg://").startswith("postgresql+asyncpg://"):
        raise ValidationError(
            "bench cluster: --database-url must be a postgresql+asyncpg:// URL (clustering "
            "needs PostgreSQL)"
        )
    with ExitStack() as stack:
        url = options.database_url or stack.enter_context(throwaway_postgres())
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="st-cluster-")))
        return await _Run(options, url, directory, progress or (lambda _: None)).run()


class _Run:
    def __init__(
        self, options: ClusterBenchOptions, url: str, directory: Path, say: Callable[[str], None]
    ) -> None:
        from world_adapter.sim import SimWorld
        from world_adapter.sim.stream import labelled_stream

        self.o = options
        self.url = url
        self.dir = directory
        self.say = say
        self.items = labelled_stream(
            seed=options.seed, hours=options.hours, events_per_hour=options.events_per_hour
        )
        burst_hours = options.burst / options.events_per_hour + 0.01
        self.burst_items = labelled_stream(
            seed=options.seed + 1, hours=burst_hours, events_per_hour=options.events_per_hour
        )[: options.burst]
        total = len(self.items) + 2 * len(self.burst_items) + 10
        self.token = secrets.token_hex(16)
        self.world = SimWorld.harbour_town(epoch=f"cluster-{self.token[:8]}", buffer_size=total)
        # Busiest rooms first (by relevant events, then all), so a few storytellers see work.
        weight = Counter((i.event.cell_id, i.relevant) for i in self.items)
        self.rooms = sorted(
            (room.id for room in self.world.town_map.rooms),
            key=lambda room: (-weight[room, True], -weight[room, False], room),
        )
        self.crime = next(i.event for i in self.items + self.burst_items if i.relevant)
        tag = self.token[:6]
        self.names = [f"bench_{tag}_{n}" for n in range(1, options.daemons + 1)]
        self.models = rig.ModelLog.answering(self.items + self.burst_items, options)
        self.calls = rig.ProgCalls()
        self.store = Store.open(url, clock=REAL)
        self.played: list[tuple[int, str]] = []
        self.daemons: dict[str, rig.Daemon] = {}
        self.report: dict[str, object] = {}
        self.pg: Any = None
        self.servers: list[Any] = []

    async def run(self) -> dict[str, object]:
        from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
        from world_adapter.bridge.world_server import WorldServer

        o = self.o
        servers: list[ScriptedResponsesServer] = self.servers
        bridges: list[WorldServer] = []
        audited = False
        try:
            self.pg = await rig.connect(self.url)
            self.room_of, audited = await rig.fill(
                self.store,
                self.pg,
                storytellers=o.storytellers,
                rooms=self.rooms,
                instances=self.names,
            )
            cluster = {
                "lease_seconds": o.lease_seconds,
                "renew_seconds": o.renew_seconds,
                "drain_seconds": o.drain_seconds,
            }
            env = {"BENCH_BRIDGE_TOKEN": self.token, "BENCH_MODEL_KEY": "bench-" + self.token}
            for name in self.names:
                model = ScriptedResponsesServer(responder=self.models.responder(name))
                await model.start()
                servers.append(model)
                side = rig.GameSide(self.world, name, self.calls, self.models, self.pg)
                size = len(self.items) + 2 * o.burst + 10
                bridge = WorldServer(
                    side, self.token, cells=frozenset(self.rooms), buffer_size=size
                )
                bridges.append(bridge)
                config = rig.daemon_config(
                    self.dir / f"{name}.toml",
                    url=rig.role_url(self.url, name if audited else None),
                    bridge=await bridge.start(),
                    model=model.base_url,
                    instance=name,
                    cluster=cluster,
                    speedup=o.speedup,
                )
                self.daemons[name] = rig.Daemon(name, config, self.dir / f"{name}.log", env)
            for daemon in self.daemons.values():
                daemon.start()
            self.say("starting the daemons")
            await self._until(self._even, 180, "the even spread")
            # Leases come before the game is followed: nothing is played before they subscribe.
            await asyncio.wait_for(asyncio.gather(*(b.wait_subscriptions(1) for b in bridges)), 180)
            await self._phases(audited)
        except RuntimeError as exc:  # what the daemons said is the clue
            tails = [d.tail() for d in self.daemons.values()]
            raise RuntimeError(f"{exc}; the daemons' logs end: {tails}") from None
        finally:
            for daemon in self.daemons.values():
                daemon.stop()
                if o.logs is not None:
                    o.logs.mkdir(parents=True, exist_ok=True)
                    shutil.copy(daemon.log, o.logs / daemon.log.name)
            for bridge in bridges:
                await bridge.stop()
            for model in servers:
                await model.stop()
            if self.pg is not None:
                if audited:
                    await rig.drop_roles(self.pg, self.names)
                await self.pg.close()
            await self.store.close()
        return self.report

    async def _phases(self, audited: bool) -> None:
        o, r = self.o, self.report
        r["daemons"], r["storytellers"], r["events"] = o.daemons, o.storytellers, len(self.items)
        r["stream hours, speedup"] = f"{o.hours:g} h at {o.speedup:g}×"
        r["lease, renew (s)"] = f"{o.lease_seconds:g}, {o.renew_seconds:g}"
        holders = await self.store.leases.holders()
        held = Counter(owner for owner, _ in holders.values() if owner is not None)
        r["storytellers held per daemon"] = dict(sorted(held.items()))
        r["held spread vs even"] = spread(dict(held))
        player = asyncio.create_task(self._play(self.items))
        steady = REAL.monotonic()
        await asyncio.sleep(min(20.0, o.hours * 3600 / o.speedup / 4))
        for kind in ("attention", "turn_round"):
            asked = Counter(
                q.daemon for q in self.models.requests if q.kind == kind and q.at >= steady
            )
            per = {n: asked.get(n, 0) for n in self.names}
            r[f"{kind} requests per daemon (steady)"] = per
            r[f"{kind} requests spread vs even"] = spread(per)
        await self._kill_9(self.names[-1])
        if o.daemons > 1:
            await self._sigterm(self.names[0])
            await self._sigstop(self.names[-1])
        self.say("playing the rest of the stream")
        await player
        await self._settle(self.played, "the stream")
        await self._invariants(audited)
        await self._throughput()

    async def _kill_9(self, name: str) -> None:
        self.say(f"kill -9 {name}")
        mine = await self._held_by(name)
        killed = REAL.monotonic()
        self.daemons[name].signal(signal.SIGKILL)
        self.daemons[name].wait()
        # Something that matters, in each of its rooms, while nobody runs them.
        for room in sorted({self.room_of[sid] for sid in mine}):
            self.played.append(self._replay(self.crime, cell_id=room))
        taken = await self._taken_over(mine, name, killed)
        first_ask: dict[int, float] = {}
        first_turn: dict[int, float] = {}
        while REAL.monotonic() - killed < 3 * self.o.lease_seconds + 30:
            for q in self.models.requests:
                if q.at < killed or q.daemon == name or q.storyteller not in mine:
                    continue
                first_ask.setdefault(q.storyteller, q.at - killed)
                if q.kind == "turn_round":
                    first_turn.setdefault(q.storyteller, q.at - killed)
            if len(first_turn) == len(mine):
                break
            await asyncio.sleep(0.2)
        r = self.report
        r["kill -9: storytellers it held"] = len(mine)
        r["kill -9: held by another, p95 / max (s)"] = (
            f"{p95(list(taken.values()))} / {round(max(taken.values(), default=0), 2)}"
        )
        r["kill -9: first model request, p95 (s)"] = p95(list(first_ask.values()))
        r["kill -9: first turn started, p95 (s)"] = p95(list(first_turn.values()))
        r["kill -9: of them with a turn since"] = len(first_turn)
        self.daemons[name].start()
        await self._rebalanced("kill -9")

    async def _sigterm(self, name: str) -> None:
        self.say(f"SIGTERM {name}")
        mine = await self._held_by(name)
        self.report["SIGTERM: storytellers it held"] = len(mine)
        stopped = REAL.monotonic()
        self.daemons[name].signal(signal.SIGTERM)
        taken = await self._taken_over(mine, name, stopped)
        self.report["SIGTERM: leases handed over in (s)"] = round(max(taken.values(), default=0), 2)
        self.report["SIGTERM: exit code"] = self.daemons[name].wait()
        self.daemons[name].start()
        await self._rebalanced("SIGTERM")

    async def _sigstop(self, name: str) -> None:
        self.say(f"SIGSTOP {name} past its leases, then SIGCONT")
        mine = await self._held_by(name)
        calls_before = self.calls.unleased[name]
        frozen = REAL.monotonic()
        self.daemons[name].signal(signal.SIGSTOP)
        try:
            taken = await self._taken_over(mine, name, frozen)
        finally:
            self.daemons[name].signal(signal.SIGCONT)
        await self._rebalanced("SIGSTOP")
        r = self.report
        r["SIGSTOP: taken over after (s)"] = round(max(taken.values(), default=0), 2)
        r["SIGSTOP: prog calls it sent without the lease"] = (
            self.calls.unleased[name] - calls_before
        )
        r["SIGSTOP: its writes the fence refused (log)"] = self.daemons[name].refusals()

    async def _play(self, items: list[Any]) -> None:
        start = items[0].event.occurred_at
        began = REAL.monotonic()
        for item in items:
            offset = (item.event.occurred_at - start).total_seconds() / self.o.speedup
            wait = offset - (REAL.monotonic() - began)
            if wait > 0:
                await asyncio.sleep(wait)
            self.played.append(self._replay(item.event))

    async def _settle(self, played: list[tuple[int, str]], what: str) -> float:
        """Wait until every work item of `played` exists and is settled; the seconds it took."""
        self.say(f"waiting for {what} to settle")
        watchers = Counter(self.room_of.values())
        expected = sum(watchers[cell] for cell, _ in played)
        sources = [source for _, source in played]
        began = REAL.monotonic()
        while REAL.monotonic() - began < self.o.settle_seconds:
            row = await self.pg.fetchrow(
                "SELECT count(*) AS total, count(*) FILTER (WHERE state IN "
                "('pending', 'interested', 'running')) AS open FROM work_items "
                "WHERE source = ANY($1::text[])",
                sources,
            )
            total, open_ = int(row["total"]), int(row["open"])
            if total >= expected and open_ == 0:
                return REAL.monotonic() - began
            await asyncio.sleep(0.25)
        return float("nan")

    async def _invariants(self, audited: bool) -> None:
        r = self.report
        rows = await self.pg.fetch(
            "SELECT storyteller_id, source FROM work_items WHERE source LIKE 'bridge:%'"
        )
        found = {(int(row["storyteller_id"]), str(row["source"])) for row in rows}
        expected = {
            (sid, source)
            for cell, source in self.played
            for sid, room in self.room_of.items()
            if room == cell
        }
        lost = sorted(expected - found)
        r["accepted events lost"] = len(lost)
        if lost:
            r["accepted events lost, first"] = [f"st{sid} {source}" for sid, source in lost[:5]]
        r["narrations run"] = sum(self.calls.runs.values())
        r["narrations run twice (prog calls repeated)"] = self.calls.repeated
        r["prog calls replayed by key"] = self.calls.replayed
        r["prog calls from a daemon without the lease"] = sum(self.calls.unleased.values())
        if audited:
            breaches = await rig.fencing_breaches(self.pg, self.names)
            r["work writes from a daemon without the lease"] = sum(breaches.values())
            r["SIGSTOP: its work writes accepted without the lease"] = breaches[self.names[-1]]
        else:
            r["work writes from a daemon without the lease"] = "not measured (no CREATE ROLE)"
        answered = len(self.models.requests)

        ledger = sum(x.requests for x in await self.store.ledger.totals("storyteller"))
        received = sum(len(m.requests) for m in self.servers)
        r["model requests received / answered / ledger rows"] = (
            f"{received} / {answered} / {ledger}"
        )
        holders = await self.store.leases.holders()
        live = set(await self.store.leases.live_instances())
        r["storytellers not held by one live daemon"] = sum(
            1 for owner, _ in holders.values() if owner not in live
        )

    async def _throughput(self) -> None:
        half = len(self.burst_items) // 2
        await self._burst("all daemons", self.burst_items[:half])
        if self.o.daemons > 1:
            for name in self.names[1:]:
                self.daemons[name].signal(signal.SIGTERM)
            for name in self.names[1:]:
                self.daemons[name].wait()
            await self._until(
                lambda h: all(owner == self.names[0] for owner, _ in h.values()), 60, "one daemon"
            )
            await self._burst("one daemon", self.burst_items[half:])

    async def _burst(self, label: str, items: list[Any]) -> None:
        """Play `items` at once: events/s until settled, and how busy the cores were."""
        cpu = rig.MachineCpu()
        played = [self._replay(item.event) for item in items]
        took = await self._settle(played, f"a burst of {len(items)} events")
        self.report[f"throughput, {label} (events/s)"] = round(len(items) / took, 1)
        self.report[f"machine CPU busy, {label} (share of {cpu.cores} cores)"] = cpu.busy()

    def _replay(self, event: Any, **changes: Any) -> tuple[int, str]:
        """Play `event` into the world now; its room and work-item source."""
        stamped = self.world.replay(replace(event, occurred_at=REAL.now(), **changes))
        return stamped.cell_id, f"bridge:{stamped.cursor}"

    async def _held_by(self, name: str) -> set[int]:
        return {
            sid for sid, (owner, _) in (await self.store.leases.holders()).items() if owner == name
        }

    async def _taken_over(self, mine: set[int], name: str, since: float) -> dict[int, float]:
        """Poll until every one of `mine` is held by another daemon, for at most 120 s:
        storyteller → seconds (those taken; the report says how many were not)."""
        taken: dict[int, float] = {}
        while len(taken) < len(mine) and REAL.monotonic() - since < 120:
            for sid, (owner, _) in (await self.store.leases.holders()).items():
                if sid in mine and sid not in taken and owner not in (None, name):
                    taken[sid] = REAL.monotonic() - since
            await asyncio.sleep(0.05)
        if len(taken) < len(mine):
            self.report[f"{name}: storytellers not taken over within 120 s"] = len(mine) - len(
                taken
            )
        return taken

    def _even(self, holders: dict[int, tuple[str | None, int]]) -> bool:
        return rig.evenly_held(holders, self.names, len(self.room_of))

    async def _rebalanced(self, fault: str) -> None:
        """Wait for the even spread after a fault's daemon is back; report how long it took
        (or that it was not reached: the bench goes on)."""
        began = REAL.monotonic()
        try:
            await self._until(self._even, 60, "the even spread")
        except RuntimeError:
            self.report[f"{fault}: even again after (s)"] = "not within 60"
        else:
            self.report[f"{fault}: even again after (s)"] = round(REAL.monotonic() - began, 1)

    async def _until(
        self, done: Callable[[dict[int, tuple[str | None, int]]], bool], within: float, what: str
    ) -> None:
        began = REAL.monotonic()
        while not done(await self.store.leases.holders()):
            if REAL.monotonic() - began > within:
                raise RuntimeError(f"bench cluster: {what} not reached within {within:g} s")
            await asyncio.sleep(0.1)
