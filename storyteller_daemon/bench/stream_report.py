"""The stream benchmark's options and its report: what one run measured, as the rows ``bench
stream`` prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from storyteller_daemon.agent.attention import attention_instructions
from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.bench.stand_ins import CHARS_PER_TOKEN


@dataclass(frozen=True)
class StreamBenchOptions:
    """The knobs of one benchmark run."""

    stream: Path | None = None
    hours: float = 1.0
    seed: int = 1
    events_per_hour: int = 5000
    """Density of a generated stream."""
    attention_latency: float = 1.5
    round_latency: float = 4.0
    speedup: float = 60.0
    one_call_per_event: bool = False
    storytellers: int = 1
    split_rooms: bool = False
    """Each storyteller watches one room of the town (round robin) instead of the whole ward,
    so an event reaches a few storytellers rather than all of them."""
    price_model: str = "gpt-5"
    fail_share: float = 0.0
    """Share of model requests the stand-in fails (429, 500, 503)."""
    crash_every: float = 0.0
    """Kill the daemon (no drain) and start a new one every this many stream seconds (0: never)."""
    cut_every: float = 0.0
    """Cut every bridge connection every this many stream seconds (0: never); the daemon
    reconnects and the game replays what it missed."""
    quiet_seconds: float | None = None
    """Override of ``[attention] quiet_seconds`` (None: the default)."""
    max_wait_seconds: float | None = None
    """Override of ``[attention] max_wait_seconds`` (None: the default)."""
    calm_wait_factor: float | None = None
    """Override of ``[attention] calm_wait_factor`` (None: the default; 1: no pacing)."""
    calm_requests_per_hour: float | None = None
    """Override of ``[attention] calm_requests_per_hour`` (None: the default; 0: calm events
    always wait)."""
    max_age_seconds: float | None = None
    """Override of ``[attention] max_age_seconds`` (None: the default; for the one-call design,
    long enough that nothing expires), for runs that measure something other than what a
    machine too slow for the speed-up expires."""
    stop_every: float = 0.0
    """Stop the daemon as SIGTERM does (drain, then exit) and start a new one every this many
    stream seconds (0: never); the report gives the longest stop in wall-clock seconds."""
    acting_turns: bool = False
    """Each turn narrates once through a prog and opens a situation before it ends (see the
    module docstring)."""
    reasoning_tokens: int = 0
    """Hidden output tokens billed on every answered request."""
    drain_seconds: float | None = None
    """Stream seconds the daemon gets after the last event to settle its backlog (default:
    15 minutes, or, for the one-call design, long enough to judge every event one by one)."""
    contract_faults: float = 0.0
    """Share of attention replies in which the stand-in breaks the verdict contract."""
    short_prompts: bool = False
    """Cut the storyteller's system prompt to its remit, under the cache floor (see above)."""
    cache_floor: int | None = None
    """Override of ``[attention] cache_floor_tokens`` (None: the default)."""
    verdict_memory_hours: float | None = None
    """Override of ``[attention] verdict_memory_hours`` (None: the default; 0: off)."""


@dataclass(frozen=True)
class StreamFacts:
    """What a stream run left to report: its options, the stream, and what each part counted."""

    options: StreamBenchOptions
    cfg: Any
    items: list[Any]
    span: float
    labels: dict[Any, Any]
    work: list[Any]
    stats: Any
    earlier: list[Any]
    alerts: list[Any]
    oracle: Any
    ledger_rows: int
    instruction_tokens: int
    watch: Any
    crashes: int
    cuts: int
    interrupted: int
    runs_by_storyteller: dict[str, Counter[str]]
    """Storyteller → runs and model rounds by kind (turn rounds also by trigger kind)."""
    ended: Counter[Any]
    written: Counter[str]
    stop_times: list[float]
    progs: Any
    world_requests: int
    settled: Any
    behind: float
    at: datetime
    """When the run was made (the report's stamp)."""


def stream_report(f: StreamFacts) -> dict[str, object]:
    """The report's rows, in the order ``bench stream`` prints them."""
    stats = f.stats
    options = f.options
    cfg = f.cfg
    items = f.items
    span = f.span
    labels = f.labels
    work = f.work
    earlier = f.earlier
    oracle = f.oracle
    ledger_rows = f.ledger_rows
    instruction_tokens = f.instruction_tokens
    watch = f.watch
    crashes = f.crashes
    cuts = f.cuts
    interrupted = f.interrupted
    ended = f.ended
    written = f.written
    stop_times = f.stop_times
    progs = f.progs
    settled = f.settled
    behind = f.behind
    dropped = Counter(stats.dropped)
    filtered = Counter(stats.filtered)
    for before in earlier:
        dropped.update(before.dropped)
        filtered.update(before.filtered)
    heard_relevant = [w for w in work if labels.get(w.source)]
    reached = [w for w in heard_relevant if w.turn_key is not None]
    urgent = [w for w in work if w.source in labels and w.kind == "crime"]
    # The stream's events; heartbeat turns go on while the report is read, so one may be
    # running at that instant.
    streamed = [w for w in work if w.source in labels]
    states = Counter(w.state.value for w in streamed)
    alert_text = "\n".join(a.detail for a in f.alerts)
    failed_unalerted = [
        w
        for w in heard_relevant
        if w.state.value == "failed" and (w.turn_key is None or w.turn_key not in alert_text)
    ]
    requests = sum(oracle.log.requests.values())
    price = cfg.model.prices.get(options.price_model)
    usage_total = sum(oracle.log.usage.values(), Usage())
    hours = span / 3600
    usd = (
        cost_usd(cfg.model.prices, options.price_model, usage_total) / hours
        if price is not None
        else None
    )
    relevant_total = sum(1 for item in items if item.relevant)
    return {
        "design": "one call per event" if options.one_call_per_event else "batched",
        "events": len(items),
        "stream hours": round(hours, 2),
        "storytellers": options.storytellers,
        "each storyteller watches": "one room" if options.split_rooms else "the ward",
        "work items per event": round(len(work) / len(items), 2),
        "relevant events": relevant_total,
        "relevant events heard by a storyteller": len(heard_relevant),
        "relevant events reaching a turn": len(reached),
        "recall": round(len(reached) / len(heard_relevant), 4) if heard_relevant else None,
        "model requests failed by the stand-in": oracle.failed,
        "model requests in the cost ledger / answered": [ledger_rows, requests],
        "attention requests": oracle.log.requests["attention"],
        "turn rounds": oracle.log.requests["turn_round"],
        "model calls per 1,000 events": round(requests * 1000 / len(items), 1),
        "attention requests by why they were asked": _windows(stats, earlier),
        "runs and rounds by storyteller": {
            name: dict(sorted(counts.items())) for name, counts in f.runs_by_storyteller.items()
        },
        "events the attention model judged": int(stats.batch_sizes.total),
        "events per attention request": round(stats.batch_sizes.total / stats.batch_sizes.count, 1)
        if stats.batch_sizes.count
        else 0,
        "urgent events (crimes) heard / without a turn": [
            len(urgent),
            sum(1 for w in urgent if w.turn_key is None),
        ],
        "contract faults made by the stand-in": dict(oracle.faults.made),
        "events judged alone / failed open / violations": [
            stats.events_judged_alone,
            sum(1 for w in work if w.rule == "fail_open"),
            sum(1 for w in work if w.state.value == "violation"),
        ],
        "attention instructions / with contract examples (tokens, est.)": [
            instruction_tokens,
            len(attention_instructions(watch, cache_floor_tokens=cfg.attention.cache_floor_tokens))
            // CHARS_PER_TOKEN,
        ],
        "settled by rule": dict(filtered),
        "work item states": dict(states),
        "why work failed": dict(
            Counter(
                (w.reason or "no reason recorded")[:120]
                for w in streamed
                if w.state.value == "failed"
            ).most_common(5)
        ),
        "dropped by stage": dict(dropped),
        "crashes (daemon killed, restarted)": crashes,
        "bridge connections cut": cuts,
        "turns interrupted and run again": interrupted,
        "turns ended twice": sum(1 for count in ended.values() if count > 1),
        "situations / memories written twice by one turn": [
            sum(n - 1 for key, n in written.items() if key.startswith("situation:") and n > 1),
            sum(n - 1 for key, n in written.items() if key.startswith("memory:") and n > 1),
        ],
        "situations written": sum(n for key, n in written.items() if key.startswith("situation")),
        "relevant events failed / without an alert": [
            sum(1 for w in heard_relevant if w.state.value == "failed"),
            len(failed_unalerted),
        ],
        "stops (as on SIGTERM)": len(stop_times),
        "stop took at most (s, wall clock)": round(max(stop_times), 2) if stop_times else None,
        "prog runs / replayed by key / repeated": [
            sum(progs.runs.values()),
            progs.replayed,
            progs.repeated,
        ],
        "tokens by request kind (input / cached / output)": {
            kind: [u.input_tokens, u.cached_tokens, u.output_tokens]
            for kind, u in sorted(oracle.log.usage.items())
        },
        "tool-loop input tokens by part (share)": oracle.turn_tokens.shares(),
        "tool-loop input cached (share)": _cached_share(oracle.log.usage.get("turn_round")),
        "world requests per 1,000 events": round(f.world_requests * 1000 / len(items), 1),
        "input tokens": usage_total.input_tokens,
        "cached input tokens": usage_total.cached_tokens,
        "output tokens": usage_total.output_tokens,
        f"USD per hour at {options.price_model} prices": round(usd, 4) if usd is not None else None,
        "USD per hour at the storyteller's models": round(
            oracle.turn_tokens.usd(cfg.model.prices) / hours, 4
        ),
        "the storyteller's models": sorted(oracle.turn_tokens.by_model),
        "event → verdict p50 / p95 (s)": [
            round(stats.verdict_latency.percentile(0.5), 2),
            round(stats.verdict_latency.percentile(0.95), 2),
        ],
        "event → turn start p50 / p95 (s)": [
            round(stats.turn_latency.percentile(0.5), 2),
            round(stats.turn_latency.percentile(0.95), 2),
        ],
        "event → turn start p95 by kind (s, events)": {
            kind: [round(d.percentile(0.95), 2), d.count]
            for kind, d in sorted(stats.turn_latency_by_kind.items())
        },
        "backlog settled": settled,
        "playback behind the stream at most (s)": round(behind, 2),
        "window (quiet / max wait / calm max wait, s)": [
            cfg.attention.quiet_seconds,
            cfg.attention.max_wait_seconds,
            cfg.attention.calm_max_wait_seconds,
        ],
        "calm requests allowed per hour": cfg.attention.calm_requests_per_hour,
        "attention latency (s)": options.attention_latency,
        "round latency (s)": options.round_latency,
        "speed-up": options.speedup,
        "at": f.at.isoformat(timespec="seconds"),
    }


def _windows(stats: Any, earlier: list[Any]) -> dict[str, int]:
    """Attention requests by why their batch's window closed, and the re-asks and requests
    of one event judged alone that followed a broken reply."""
    windows: Counter[str] = Counter(stats.attention_windows)
    calls = stats.attention_calls
    for before in earlier:
        windows.update(before.attention_windows)
        calls += before.attention_calls
    return {**dict(windows.most_common()), "re-asks and alone": calls - sum(windows.values())}


def _cached_share(usage: Usage | None) -> float | None:
    """Cached input tokens as a share of input tokens (None without requests)."""
    if usage is None or not usage.input_tokens:
        return None
    return round(usage.cached_tokens / usage.input_tokens, 3)
