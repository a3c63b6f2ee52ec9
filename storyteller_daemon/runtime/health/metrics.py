"""``/metrics``: the daemon's own counters in the Prometheus text format.

`Exposition` builds one scrape's metric families with ``prometheus_client`` (counters, gauges
and histograms drawn from the daemon's `Histogram`-shaped counts) and writes them through a
custom collector, with the library's process metrics beside them. `daemon_metrics` fills it from
a running daemon: readiness, the world stream, the pipeline's counts and latencies, model usage
and spending, queue and backlog depths, missed heartbeats, model latency and alerts, and for a
daemon of a cluster its lease renewals and what ``storyteller cluster status`` shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from storyteller_daemon.agent.models.metering import LatencyHistogram
from storyteller_daemon.alerts import Alerts
from storyteller_daemon.domain.cluster import ClusterStatus
from storyteller_daemon.runtime.cluster import InvocationForwarder, LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The classic text format, which every Prometheus version reads."""


class Histogram(Protocol):
    """What a histogram family is drawn from (non-cumulative counts per bound, plus one)."""

    @property
    def bounds(self) -> tuple[float, ...]:
        """Upper bounds of the buckets."""
        ...

    @property
    def counts(self) -> list[int]:
        """Observations per bucket, the last for values above every bound."""
        ...

    @property
    def total(self) -> float:
        """Sum of the observations."""
        ...

    @property
    def count(self) -> int:
        """Number of observations."""
        ...


class Exposition:
    """The families of one scrape, built with ``prometheus_client``'s metric families."""

    def __init__(self, prefix: str = "storyteller_") -> None:
        self._prefix = prefix
        self.families: list[Metric] = []

    def family(
        self,
        name: str,
        kind: str,
        help_text: str,
        samples: Iterable[tuple[Mapping[str, str], float]],
    ) -> None:
        """One counter or gauge family, a sample per label set."""
        listed = list(samples)
        labels = sorted({key for sample_labels, _ in listed for key in sample_labels})
        full = self._prefix + name
        family: CounterMetricFamily | GaugeMetricFamily = (
            CounterMetricFamily(full, help_text, labels=labels)
            if kind == "counter"
            else GaugeMetricFamily(full, help_text, labels=labels)
        )
        for sample_labels, value in listed:
            family.add_metric([str(sample_labels[key]) for key in labels], float(value))
        self.families.append(family)

    def histogram(
        self, name: str, help_text: str, label: str | None, histograms: Mapping[str, Histogram]
    ) -> None:
        """A histogram family (cumulative ``le`` buckets, ``_sum``, ``_count``).

        With `label` None, `histograms` holds one unlabelled histogram (under any key).
        """
        family = HistogramMetricFamily(
            self._prefix + name, help_text, labels=[label] if label is not None else []
        )
        for value, histogram in sorted(histograms.items()):
            running, buckets = 0, []
            for bound, count in zip((*histogram.bounds, math.inf), histogram.counts, strict=True):
                running += count
                buckets.append(("+Inf" if math.isinf(bound) else str(float(bound)), float(running)))
            family.add_metric([value] if label is not None else [], buckets, histogram.total)
        self.families.append(family)

    def text(self) -> str:
        """The exposition, with the process metrics (CPU, memory, open files) first."""
        registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=registry)
        registry.register(_Families(self.families))
        return generate_latest(registry).decode()


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self._families = families

    def collect(self) -> Iterable[Metric]:
        return self._families


def _labelled(label: str, counts: Mapping[str, int]) -> list[tuple[Mapping[str, str], float]]:
    return [({label: key}, value) for key, value in sorted(counts.items())]


def _labelled_pairs(
    labels: tuple[str, str], counts: Mapping[tuple[str, str], int]
) -> list[tuple[Mapping[str, str], float]]:
    return [
        ({labels[0]: first, labels[1]: second}, value)
        for (first, second), value in sorted(counts.items())
    ]


def _bare(value: float) -> list[tuple[Mapping[str, str], float]]:
    return [({}, value)]


def daemon_metrics(
    daemon: Daemon,
    latency: Mapping[str, LatencyHistogram],
    alerts: Alerts | None,
    backlog: Mapping[tuple[int, str], int] | None = None,
    *,
    leases: LeaseKeeper | None = None,
    cluster: ClusterStatus | None = None,
) -> str:
    """Everything the daemon counts, in the Prometheus text format.

    Args:
        daemon: the daemon to describe.
        latency: model name → request latency histogram (from `MeteredModel.latency`).
        alerts: the alert service, for alert counters; None leaves them out.
        backlog: (storyteller id, state) → open work items, when known.
        leases: this daemon's lease keeper, in a cluster.
        cluster: the daemons of the database and their leases, when known.
    """
    pipeline = daemon.pipeline
    stats = pipeline.stats
    usage = stats.usage
    out = Exposition()
    out.family("ready", "gauge", "1 while the daemon is ready.", _bare(daemon.ready.is_set()))
    out.family(
        "world_subscribed",
        "gauge",
        "1 while the world event stream is subscribed.",
        _bare(daemon.world_status == "subscribed"),
    )
    out.family(
        "world_stream_gaps_total",
        "counter",
        "Times the world could not replay missed events.",
        _bare(daemon.stream_gaps),
    )
    out.family("events_received_total", "counter", "World events received.", _bare(stats.events_in))
    out.family(
        "triggers_dropped_total",
        "counter",
        "Triggers dropped, by pipeline stage.",
        _labelled("stage", stats.dropped),
    )
    out.family(
        "attention_requests_total",
        "counter",
        "Attention model requests (one per batch of events, plus any re-asks).",
        _bare(stats.attention_calls),
    )
    out.family(
        "attention_failures_total",
        "counter",
        "Attention requests that failed; their events stayed pending.",
        _bare(stats.attention_failures),
    )
    out.family(
        "events_judged_total",
        "counter",
        "Events given a verdict (by the model, or inherited from a repeat).",
        _bare(stats.events_judged),
    )
    out.family(
        "events_settled_by_rule_total",
        "counter",
        "Events settled without a model call, by deterministic rule.",
        _labelled("rule", stats.filtered),
    )
    out.histogram(
        "attention_batch_events",
        "Events judged per attention request.",
        None,
        {"": stats.batch_sizes},
    )
    out.histogram(
        "event_verdict_seconds",
        "Seconds from an event's arrival in the backlog to its verdict.",
        None,
        {"": stats.verdict_latency},
    )
    out.histogram(
        "event_turn_seconds",
        "Seconds from an event's arrival in the backlog to the start of its turn.",
        None,
        {"": stats.turn_latency},
    )
    out.family(
        "attention_verdicts_total",
        "counter",
        "Attention verdicts, by verdict.",
        _labelled("verdict", stats.verdicts),
    )
    out.family("turns_total", "counter", "Turns, by outcome.", _labelled("outcome", stats.turns))
    out.family(
        "reflections_total",
        "counter",
        "Reflection while idle: digest refreshes by outcome (digest_refreshed, digest_unchanged, "
        "digest_failed...), memories merged (memories_merged) and failed passes (failed).",
        _labelled("what", stats.reflections),
    )
    out.family("model_requests_total", "counter", "Model requests.", _bare(stats.requests))
    out.family(
        "tool_calls_total", "counter", "Tool calls made by the model.", _bare(stats.tool_calls)
    )
    tokens = {
        "input": usage.input_tokens,
        "cached_input": usage.cached_tokens,
        "output": usage.output_tokens,
        "reasoning": usage.reasoning_tokens,
    }
    out.family("tokens_total", "counter", "Model tokens, by kind.", _labelled("kind", tokens))
    out.family("cost_usd_total", "counter", "Model spending in USD.", _bare(stats.cost_usd))
    depths = {
        st.name: pipeline.queue_depth(st.id)
        for st in pipeline.router.storytellers
        if st.id is not None
    }
    out.family(
        "queue_depth",
        "gauge",
        "Pending plus running turns, by storyteller.",
        _labelled("storyteller", depths),
    )
    if backlog is not None:
        names = {st.id: st.name for st in pipeline.router.storytellers}
        out.family(
            "backlog_items",
            "gauge",
            "Open work items in the durable backlog, by storyteller and state "
            "(pending: waiting for a verdict; interested: waiting for a turn; running).",
            _labelled_pairs(
                ("storyteller", "state"),
                {
                    (names.get(sid, f"#{sid}"), state): count
                    for (sid, state), count in backlog.items()
                },
            ),
        )
    out.family(
        "queue_overflow_total",
        "counter",
        "Triggers dropped because a storyteller's queue was full.",
        _labelled("storyteller", stats.queue_overflow),
    )
    out.family(
        "heartbeats_missed_total",
        "counter",
        "Heartbeats that did not run on time.",
        _bare(sum(daemon.heartbeats.missed.values())),
    )
    out.histogram("model_request_seconds", "Model request latency, by model.", "model", latency)
    if alerts is not None:
        out.family(
            "alerts_total",
            "counter",
            "Alerts raised, by kind.",
            _labelled("kind", alerts.raised),
        )
        discord = alerts.discord
        if discord is not None:
            deliveries = {**discord.counts, "suppressed": discord.suppressed}
            out.family(
                "alert_deliveries_total",
                "counter",
                "Discord alert posts, by result.",
                _labelled("result", deliveries),
            )
    if leases is not None:
        _lease_metrics(out, leases)
    if isinstance(daemon.forwarder, InvocationForwarder):
        forwarded = {"sent": daemon.forwarder.forwarded, "answered": daemon.forwarder.answered}
        out.family(
            "cluster_invocations_forwarded_total",
            "counter",
            "Game invocations sent to the daemon running their storyteller, and answered here "
            "for another daemon.",
            _labelled("direction", forwarded),
        )
    if cluster is not None:
        _cluster_metrics(out, cluster)
    return out.text()


def _lease_metrics(out: Exposition, leases: LeaseKeeper) -> None:
    out.family(
        "cluster_leases_held",
        "gauge",
        "Storytellers this daemon holds the lease of (and runs).",
        _bare(len(leases.held)),
    )
    out.family(
        "cluster_lease_renewals_total",
        "counter",
        "Lease renewals, by result (a failed one gives every lease up).",
        _labelled("result", {"ok": leases.renewals, "failed": leases.failures}),
    )
    out.family(
        "cluster_leases_taken_total", "counter", "Leases this daemon took.", _bare(leases.taken)
    )


def _cluster_metrics(out: Exposition, cluster: ClusterStatus) -> None:
    daemons = cluster.instances
    out.family(
        "cluster_instance_live",
        "gauge",
        "1 while a daemon of the database renews in time, by instance.",
        _labelled("instance", {i.name: int(i.live) for i in daemons}),
    )
    unowned = {"": cluster.unowned}
    out.family(
        "cluster_instance_leases",
        "gauge",
        'Storytellers held, by instance (instance="": held by no live daemon).',
        _labelled("instance", {**{i.name: i.leases for i in daemons}, **unowned}),
    )
    out.family(
        "cluster_instance_open_work",
        "gauge",
        'Open work items of the storytellers each daemon holds (instance="": of the rest).',
        _labelled("instance", {**{i.name: i.open_work for i in daemons}, "": cluster.unowned_work}),
    )
    out.family(
        "cluster_instance_last_renewal_timestamp_seconds",
        "gauge",
        "When each daemon last renewed (Unix time).",
        [({"instance": i.name}, i.renewed_at.timestamp()) for i in daemons],
    )
