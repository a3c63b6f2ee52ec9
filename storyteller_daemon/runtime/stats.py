"""Counters of what the daemon did, for the demo summary, logs and (later) metrics."""

from __future__ import annotations

import statistics
from collections import Counter, deque
from collections.abc import Collection
from dataclasses import dataclass, field

from storyteller_daemon.agent.models.interface import Usage

WAIT_BUCKETS = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 900.0)
"""Upper bounds, in seconds, of the event → verdict and event → turn histograms."""
BATCH_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 100.0)
"""Upper bounds of the events-per-attention-request histogram."""
RECENT = 4096
"""Observations kept for percentiles (the histogram keeps counting beyond them)."""


@dataclass
class Distribution:
    """A histogram (counts per bucket, not cumulative; sum; count) plus recent observations.

    The histogram is what /metrics serves; the recent observations give percentiles for
    summaries and benchmarks. Memory stays bounded however long the daemon runs.
    """

    bounds: tuple[float, ...]
    counts: list[int] = field(init=False)
    total: float = 0.0
    count: int = 0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        """Record one observation."""
        index = next((i for i, bound in enumerate(self.bounds) if value <= bound), -1)
        self.counts[index] += 1
        self.total += value
        self.count += 1
        self.recent.append(value)

    def percentile(self, q: float) -> float:
        """The `q` quantile (0..1) of the recent observations; 0 without any."""
        return percentile(self.recent, q)


def percentile(values: Collection[float], q: float) -> float:
    """The `q` quantile (0.01..0.99) of `values`, interpolated (`statistics.quantiles`,
    inclusive); 0 for no values."""
    if len(values) < 2:
        return next(iter(values), 0.0)
    cut = min(99, max(1, round(q * 100)))
    return statistics.quantiles(values, n=100, method="inclusive")[cut - 1]


@dataclass
class RuntimeStats:
    """Running totals since start-up."""

    events_in: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    """Stage name → triggers dropped there (pause, api_key, prefilter, attention, queue...)."""
    attention_calls: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    """interested / ignore / violation / fail_open."""
    turns: Counter[str] = field(default_factory=Counter)
    """Turn outcome → count."""
    requests: int = 0
    tool_calls: int = 0
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    queue_overflow: Counter[str] = field(default_factory=Counter)
    """Storyteller name → work items rejected because its queue was full."""
    events_judged: int = 0
    """Events given a verdict (by the model, or inherited from a repeat)."""
    events_judged_alone: int = 0
    """Events judged in a request of their own after a batch and its re-ask left them
    unresolved."""
    attention_failures: int = 0
    """Attention requests that failed (their events stayed pending)."""
    filtered: Counter[str] = field(default_factory=Counter)
    """Deterministic rule → events it settled without a model call."""
    batch_sizes: Distribution = field(default_factory=lambda: Distribution(BATCH_BUCKETS))
    """Events per attention request (those the model judged)."""
    attention_windows: Counter[str] = field(default_factory=Counter)
    """Why each batch's first attention request was made: its window closed (``max_wait``,
    ``quiet``, ``urgent``, ``full``, ``backlog``, ``scene``) or, with calm pacing, what made
    it lively (``burst``, ``scene``, ``urgent``, ``full``) or ``calm`` (the oldest waited
    `calm_max_wait_seconds`); re-asks and events judged alone are the rest of
    `attention_calls`."""
    heard: Counter[str] = field(default_factory=Counter)
    """Storyteller name → events it heard (work items stored for it)."""
    spent: dict[str, float] = field(default_factory=dict)
    """Storyteller name → USD of its answered model requests."""
    verdict_latency: Distribution = field(default_factory=lambda: Distribution(WAIT_BUCKETS))
    """Seconds from an event's arrival in the backlog to its verdict."""
    turn_latency: Distribution = field(default_factory=lambda: Distribution(WAIT_BUCKETS))
    """Seconds from an event's arrival in the backlog to the start of its turn."""
    turn_latency_by_kind: dict[str, Distribution] = field(default_factory=dict)
    """`turn_latency` per event kind (room_echo, speech, crime, state, heartbeat, direct)."""
    reflections: Counter[str] = field(default_factory=Counter)
    """Reflection while idle: ``digest_<outcome>`` per refresh (refreshed, unchanged,
    budget_exceeded, failed, no_model), ``memories_merged`` per memory folded into another,
    ``failed`` per pass that crashed."""

    def turn_started(self, kind: str, seconds: float) -> None:
        """An event of `kind` reached the start of its turn `seconds` after it arrived."""
        self.turn_latency.observe(seconds)
        by_kind = self.turn_latency_by_kind.get(kind)
        if by_kind is None:
            by_kind = self.turn_latency_by_kind[kind] = Distribution(WAIT_BUCKETS)
        by_kind.observe(seconds)

    def spend(self, storyteller: str, usd: float) -> None:
        """Add a storyteller's model spend."""
        self.spent[storyteller] = self.spent.get(storyteller, 0.0) + usd

    def drop(self, stage: str, count: int = 1) -> None:
        """Count triggers dropped at `stage`."""
        self.dropped[stage] += count

    def summary_rows(self) -> list[tuple[str, str]]:
        """Label/value pairs for a human summary."""
        u = self.usage
        return [
            ("world events received", str(self.events_in)),
            (
                "attention requests",
                f"{self.attention_calls} for {self.events_judged} events judged"
                + (f" ({self.attention_failures} failed)" if self.attention_failures else ""),
            ),
            (
                "verdicts",
                ", ".join(f"{k} {v}" for k, v in sorted(self.verdicts.items())) or "none",
            ),
            ("turns", ", ".join(f"{k} {v}" for k, v in sorted(self.turns.items())) or "none"),
            ("model requests (attention and turns)", str(self.requests)),
            ("tool calls", str(self.tool_calls)),
            (
                "tokens",
                f"input {u.input_tokens} (cached {u.cached_tokens}), output {u.output_tokens} "
                f"(reasoning {u.reasoning_tokens})",
            ),
            ("cost", f"${self.cost_usd:.4f}"),
            (
                "dropped",
                ", ".join(f"{k} {v}" for k, v in sorted(self.dropped.items())) or "none",
            ),
            (
                "settled by rule",
                ", ".join(f"{k} {v}" for k, v in sorted(self.filtered.items())) or "none",
            ),
            (
                "queue overflow",
                ", ".join(f"{k} {v}" for k, v in sorted(self.queue_overflow.items())) or "none",
            ),
        ]
