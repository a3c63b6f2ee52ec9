"""Counters of what the daemon did, for the demo summary, logs and (later) metrics."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from storyteller_daemon.agent.model import Usage


@dataclass
class RuntimeStats:
    """Running totals since start-up."""

    events_in: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    """Stage name → triggers dropped there (pause, api_key, prefilter, attention, queue...)."""
    attention_calls: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    """interested / ignore / violation."""
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
    attention_failures: int = 0
    """Attention requests that failed (their events stayed pending)."""
    filtered: Counter[str] = field(default_factory=Counter)
    """Deterministic rule → events it settled without a model call."""
    batch_sizes: list[int] = field(default_factory=list)
    """Events per attention request (model-judged only), in order."""
    verdict_latency: list[float] = field(default_factory=list)
    """Seconds from an event's arrival in the backlog to its verdict."""
    turn_latency: list[float] = field(default_factory=list)
    """Seconds from an event's arrival in the backlog to the start of its turn."""

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
