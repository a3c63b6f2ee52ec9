"""``storyteller bench stream``: replay a labelled world stream through the whole daemon.

The stream (a labelled JSON-lines file, or one generated from the sim world) is played into a sim
world served over the bridge protocol; the daemon connects to it like to any game, and calls the
shipped Responses-compatible test server, which stands in for the model:

* attention requests are answered from the labels (an oracle: an event is attended to when the
  labelled stream says it is relevant), after ``--attention-latency`` seconds;
* every tool-loop round answers ``Noop`` after ``--round-latency`` seconds; with
  ``--acting-turns`` a turn's first round narrates once in its room through the ``EchoToRoom``
  prog instead (with a situation, then ``Noop`` in the same response), so the report can count
  prog runs, runs replayed by idempotency key and runs repeated (the same turn's action run
  twice);
* ``--reasoning-tokens`` bills that many hidden output tokens on every answered request, as a
  reasoning model does (0 by default: only the visible reply is counted);
* token counts are estimated from the request and reply sizes (four characters a token), and
  cached input tokens from the prefix shared with the previous request of the same
  ``prompt_cache_key`` (from 1,024 tokens on, in 128-token steps, as the provider caches).

Time runs ``--speedup`` times faster than real time for the daemon's clock, the stream and the
model latency alike, so an hour of stream takes a minute at 60×. All times in the report are
stream seconds. ``--one-call-per-event`` runs the reference design (no window, no batching, no
repeats, one turn per event; its classifier sees an echo's raw text and the whole prompt of
speech and crimes) on the same stream for comparison; it is given the time to judge every event
(none expires), as that design judges them all.

``--contract-faults SHARE`` has the stand-in break the verdict contract on that share of
attention replies (`bench.contract_faults`); the report counts the faults, the events that
failed open and the violations, and the urgent events (crimes) that got no turn.
``--short-prompts`` cuts the system prompt to its remit (its first two sections), under the
1,024-token cache floor as most admins' prompts are; ``--cache-floor 0`` sends them as they are,
the default brings them to the floor with worked examples (``[attention] cache_floor_tokens``).
`stream_report` turns what a run measured into the report.
"""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from storyteller_daemon.agent.attention import attention_instructions
from storyteller_daemon.bench.stand_ins import (
    CACHE_MINIMUM_TOKENS,
    CHARS_PER_TOKEN,
    LIST_PRICES,
    Oracle,
    ProgLog,
    ScaledClock,
)
from storyteller_daemon.bench.stream_report import StreamBenchOptions, StreamFacts, stream_report
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.repeats import repeat_key
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from world_adapter.events import Cursor, RoomEcho, Speech, WorldEvent

SHORT_REMIT_END = "\nHow you act"
"""Where `--short-prompts` cuts the harbour watch's system prompt: after its remit."""


def short_remit(system_prompt: str) -> str:
    """A system prompt cut to what comes before `SHORT_REMIT_END` (all of it if absent)."""
    return system_prompt.split(SHORT_REMIT_END, 1)[0].strip()


def _event_text(event: WorldEvent) -> str | None:
    if isinstance(event, RoomEcho | Speech):
        return event.text
    return None


async def run_stream_bench(
    options: StreamBenchOptions, progress: Callable[[int, int], None] | None = None
) -> dict[str, object]:
    """Run the benchmark and return its report; `progress` hears (events played, total)."""
    from storyteller_daemon.alerts.service import Alerts
    from storyteller_daemon.app import Runtime, build_runtime
    from storyteller_daemon.config import parse_config
    from storyteller_daemon.domain.surveillance import Surveillance
    from storyteller_daemon.interchange.packs.files import read_pack
    from storyteller_daemon.runtime.stats import RuntimeStats
    from storyteller_daemon.storage.backlog import BacklogRepository
    from storyteller_daemon.storage.ledger import LedgerRepository
    from storyteller_daemon.storage.runs import RunRepository
    from storyteller_daemon.storage.seeding import load_pack
    from storyteller_daemon.storage.store import Store
    from storyteller_daemon.testing import RecordedAlerts
    from world_adapter.bridge.world_server import WorldServer
    from world_adapter.sim import SimWorld
    from world_adapter.sim.stream import labelled_stream
    from world_adapter.sim.stream_files import read_stream

    items = (
        read_stream(options.stream)
        if options.stream is not None
        else labelled_stream(
            seed=options.seed, hours=options.hours, events_per_hour=options.events_per_hour
        )
    )
    if not items:
        raise ValueError("the stream holds no events")
    start = items[0].event.occurred_at
    span = max(1.0, (items[-1].event.occurred_at - start).total_seconds())
    relevant_texts = {
        key
        for item in items
        if item.relevant and (text := _event_text(item.event)) is not None
        if (key := repeat_key("t", text)) is not None
    }
    drain = options.drain_seconds
    if drain is None:
        drain = 900.0
        if options.one_call_per_event:
            drain += len(items) * (options.attention_latency + 0.5)
    max_age = options.max_age_seconds
    if max_age is None and options.one_call_per_event:
        # The reference design judges every event, however long its queue: none expires.
        max_age = span + drain
    real = SystemClock()  # paces the playback, times the stops, stamps the store's rows
    clock = ScaledClock(real, options.speedup, start)
    oracle = Oracle(
        relevant_texts,
        attention_latency=options.attention_latency,
        round_latency=options.round_latency,
        speedup=options.speedup,
        fail_share=options.fail_share,
        seed=options.seed,
        acting=options.acting_turns,
        reasoning_tokens=options.reasoning_tokens,
        contract_faults=options.contract_faults,
    )
    token = secrets.token_hex(16)
    with tempfile.TemporaryDirectory(prefix="storyteller-bench-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        store = Store.open(url, clock=real)
        await store.db.upgrade()
        await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
        watch = await store.storytellers.get("Harbour Ward Watch")
        world = SimWorld.harbour_town(epoch=f"bench-{token[:8]}", buffer_size=len(items) + 10)
        progs = ProgLog()
        execute_prog = world.execute_prog

        async def counted(prog: str, arguments: Any, idempotency_key: str) -> Any:
            outcome = await execute_prog(prog, arguments, idempotency_key)
            if outcome.replayed:
                progs.replayed += 1
            elif isinstance(arguments, dict) and "Text" in arguments:
                # Narrations only: status progs run on every heartbeat and act on nothing.
                progs.runs[str(arguments["Text"])] += 1
            return outcome

        world.execute_prog = counted  # type: ignore[method-assign]
        rooms = sorted(room.id for room in world.town_map.rooms)
        cells = frozenset(rooms)

        def watching(number: int) -> Surveillance:
            if not options.split_rooms:
                return watch.surveillance
            return Surveillance(included=frozenset({rooms[(number - 1) % len(rooms)]}))

        if options.short_prompts:
            watch = replace(watch, system_prompt=short_remit(watch.system_prompt))
        instruction_tokens = len(attention_instructions(watch)) // CHARS_PER_TOKEN
        if options.short_prompts and instruction_tokens >= CACHE_MINIMUM_TOKENS:
            raise ValueError(
                f"--short-prompts left {instruction_tokens} tokens of attention instructions, "
                f"not under {CACHE_MINIMUM_TOKENS}"
            )
        watch = await store.storytellers.save(
            replace(watch, paused=False, surveillance=watching(1))
        )
        for number in range(2, options.storytellers + 1):
            twin = await store.storytellers.create(f"Harbour Ward Watch {number}", watch)
            await store.storytellers.save(
                replace(twin, paused=False, surveillance=watching(number))
            )
        bridge = WorldServer(world, token, cells=cells, buffer_size=len(items) + 10)
        bridge_url = await bridge.start()
        model_server = ScriptedResponsesServer(responder=oracle)
        await model_server.start()
        cfg = parse_config(
            {
                "database": {"url": url},
                "world": {"kind": "bridge", "url": bridge_url, "token_env": "BENCH_BRIDGE_TOKEN"},
                "model": {
                    "api_key_env": "BENCH_MODEL_KEY",
                    "base_url": model_server.base_url,
                    "request_timeout_seconds": 600.0,
                    "prices": LIST_PRICES,
                },
                "attention": {
                    "one_call_per_event": options.one_call_per_event,
                    **_given(
                        quiet_seconds=options.quiet_seconds,
                        max_wait_seconds=options.max_wait_seconds,
                        calm_wait_factor=options.calm_wait_factor,
                        calm_requests_per_hour=options.calm_requests_per_hour,
                        max_age_seconds=max_age,
                        cache_floor_tokens=options.cache_floor,
                        verdict_memory_hours=options.verdict_memory_hours,
                    ),
                },
                "limits": {"turn_seconds": 3600.0},
                # A stop mid-stream is measured with the shipped drain deadline.
                "daemon": {} if options.stop_every else {"drain_seconds": 1.0},
            },
            "bench",
        )
        environ = {"BENCH_BRIDGE_TOKEN": token, "BENCH_MODEL_KEY": "bench-" + token}
        subscriptions = 0
        alerted = RecordedAlerts()

        async def start_daemon(
            with_store: Store,
        ) -> tuple[Runtime, asyncio.Event, asyncio.Task[None]]:
            nonlocal subscriptions
            runtime = await build_runtime(
                cfg,
                environ=environ,
                clock=clock,
                store=with_store,
                alerts=Alerts(clock=clock, log_sink=alerted),
            )
            stop = asyncio.Event()
            task = asyncio.create_task(runtime.run(stop))
            await asyncio.wait_for(runtime.daemon.ready.wait(), 30)
            subscriptions += 1
            await asyncio.wait_for(bridge.wait_subscriptions(subscriptions), 30)
            return runtime, stop, task

        runtime, stop, task = await start_daemon(store)
        earlier: list[RuntimeStats] = []

        async def restart(*, graceful: bool) -> float:
            """Stop (or kill) the daemon and start a new one; the seconds the stop took."""
            nonlocal runtime, stop, task
            stopped_at = real.monotonic()
            if graceful:
                stop.set()
            else:
                task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await runtime.close()
            took = real.monotonic() - stopped_at
            earlier.append(runtime.stats)
            runtime, stop, task = await start_daemon(Store.open(url, clock=real))
            return took

        crashes = 0
        labels: dict[str, bool] = {}
        try:
            began = real.monotonic()
            last_crash = last_cut = last_stop = 0.0
            stop_times: list[float] = []
            played: list[tuple[int, Cursor]] = []
            behind = 0.0  # how far the playback fell behind the stream's own times
            cuts = 0
            for played_count, item in enumerate(items, start=1):
                if progress is not None and played_count % 50 == 0:
                    progress(played_count, len(items))
                offset = (item.event.occurred_at - start).total_seconds()
                wait = offset / options.speedup - (real.monotonic() - began)
                if wait > 0:
                    await real.sleep(wait)
                else:
                    behind = max(behind, -wait * options.speedup)
                if options.crash_every and offset - last_crash >= options.crash_every:
                    # A crash: the daemon's tasks die where they stand; nothing drains.
                    last_crash = offset
                    crashes += 1
                    await restart(graceful=False)
                if options.stop_every and offset - last_stop >= options.stop_every:
                    # What SIGTERM does: stop taking events, drain to the deadline, exit.
                    last_stop = offset
                    stop_times.append(await restart(graceful=True))
                if options.cut_every and offset - last_cut >= options.cut_every:
                    last_cut = offset
                    cuts += bridge.cut_all()
                stamped = world.replay(item.event)
                played.append((stamped.cell_id, stamped.cursor))
                labels[f"bridge:{stamped.cursor}"] = item.relevant
            settle = drain / options.speedup

            async def caught_up() -> None:
                # A daemon started late in the stream is still being sent what it missed.
                watched = runtime.pipeline.router.watched_cells()
                heard = [cursor for cell, cursor in played if cell in watched]
                if heard:  # the game sends only the watched rooms' events
                    await runtime.daemon.wait_cursor(heard[-1])
                await runtime.pipeline.wait_idle()

            try:
                await asyncio.wait_for(caught_up(), settle)
                settled = True
            except TimeoutError:
                settled = False
            db = runtime.store.db
            backlog = BacklogRepository(db, runtime.store.clock)
            ledger_rows = sum(
                line.requests for line in await LedgerRepository(db).totals("storyteller")
            )
            runs = await RunRepository(db).list(limit=1_000_000)
            turn_runs = [r for r in runs if r.kind == "turn"]
            by_storyteller: dict[str, Counter[str]] = {}
            for r in runs:
                counted_runs = by_storyteller.setdefault(r.storyteller_name, Counter())
                counted_runs[f"{r.kind} runs"] += 1
                counted_runs[f"{r.kind} rounds"] += r.rounds
                if r.kind == "turn":
                    counted_runs[f"turn rounds ({r.trigger_kind})"] += r.rounds
            interrupted = sum(1 for r in turn_runs if r.outcome == "interrupted")
            ended = Counter(r.turn_key for r in turn_runs if r.outcome != "interrupted")
            work = []
            written: Counter[str] = Counter()
            for st in await runtime.store.storytellers.list():
                assert st.id is not None
                work += await backlog.items(st.id, limit=len(items) * 2)
                for situation in await runtime.store.situations.list(st.id):
                    written[f"situation:{situation.provenance.run}"] += 1
                for memory in await runtime.store.memories.list(st.id):
                    written[f"memory:{memory.provenance.run}"] += 1
        finally:
            stop.set()
            await asyncio.gather(task, return_exceptions=True)
            await runtime.close()
            await model_server.stop()
            await bridge.stop()
    return stream_report(
        StreamFacts(
            options=options,
            cfg=cfg,
            items=items,
            span=span,
            labels=labels,
            work=work,
            stats=runtime.stats,
            earlier=earlier,
            alerts=alerted.alerts,
            oracle=oracle,
            ledger_rows=ledger_rows,
            instruction_tokens=instruction_tokens,
            watch=watch,
            crashes=crashes,
            cuts=cuts,
            interrupted=interrupted,
            runs_by_storyteller=by_storyteller,
            ended=ended,
            written=written,
            stop_times=stop_times,
            progs=progs,
            world_requests=bridge.stats.requests,
            settled=settled,
            behind=behind,
            at=real.now(),
        )
    )


def _given(**overrides: object) -> dict[str, object]:
    """The configuration overrides an option set (None: the setting's default)."""
    return {key: value for key, value in overrides.items() if value is not None}
