"""The optional HTTP listener: ``/healthz`` for liveness checks, ``/metrics`` for Prometheus.

``/healthz`` answers 200 when the daemon is ready, the world stream is subscribed, the heartbeat
scheduler runs and the database answers, and 503 otherwise; the JSON body says which check
failed. ``/metrics`` is written by ``prometheus_client`` from the daemon's own counters at each
scrape (a custom collector), with the library's process metrics beside them.

The listener binds to loopback by default. On any other address a bearer token is mandatory
(`check_http_settings` refuses to start without one), because the metrics name storytellers and
show spending.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CollectorRegistry, ProcessCollector, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.registry import Collector

from storyteller_daemon.alerts import Alerts
from storyteller_daemon.config import HttpConfig
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.metering import LatencyHistogram

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
"""The classic text format, which every Prometheus version reads."""
DB_CHECK_SECONDS = 3.0


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine (a hostname other than localhost does not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_http_settings(http: HttpConfig, token: str) -> None:
    """Refuse a listener on a non-loopback address without a bearer token.

    Raises:
        ConfigError: `http.token_env` is empty or its variable unset for a non-loopback host.
    """
    if not http.enabled or token or is_loopback(http.host):
        return
    if http.token_env:
        problem = f"environment variable {http.token_env} is not set"
    else:
        problem = "a bearer token is required when host is not a loopback address"
    raise ConfigError("config", f"{problem} (http.host = {http.host!r})", key="http.token_env")


# ---------------------------------------------------------------------- exposition


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


# ---------------------------------------------------------------------- the listener


class HealthServer:
    """Serves ``/healthz`` and ``/metrics`` about one running daemon.

    Args:
        daemon: the daemon to describe.
        db_check: awaits a round trip to the database (raises when it cannot).
        latency: model name → request latency histogram (from `MeteredModel.latency`).
        alerts: the alert service, for alert counters; None leaves them out.
        host: address to listen on.
        port: TCP port; 0 picks a free one (see `port` after `start`).
        token: bearer token every request must present; empty for none.
    """

    def __init__(
        self,
        *,
        daemon: Daemon,
        db_check: Callable[[], Awaitable[object]],
        latency: Mapping[str, LatencyHistogram],
        alerts: Alerts | None = None,
        host: str = "127.0.0.1",
        port: int = 9464,
        token: str = "",
    ) -> None:
        self._daemon = daemon
        self._db_check = db_check
        self._latency = latency
        self._alerts = alerts
        self._host = host
        self._port = port
        self._token = token
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The bound port (the chosen one when 0 was asked for)."""
        return self._port

    async def start(self) -> None:
        """Start listening.

        Raises:
            ConfigError: the address cannot be bound (in use, not local, no permission).
        """
        app = web.Application(middlewares=[self._authenticate])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
        except OSError as exc:
            await runner.cleanup()
            raise ConfigError(
                "config",
                f"cannot listen on {self._host}:{self._port} ({exc.strerror})",
                "http.port",
            ) from None
        self._port = int(runner.addresses[0][1])
        self._runner = runner

    async def stop(self) -> None:
        """Stop listening; safe to call twice."""
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> HealthServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @web.middleware
    async def _authenticate(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if self._token:
            given = request.headers.get("Authorization", "")
            expected = f"Bearer {self._token}"
            if not hmac.compare_digest(given.encode(), expected.encode()):
                return web.json_response(
                    {"error": "a bearer token is required"},
                    status=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
        return await handler(request)

    # ------------------------------------------------------------------ health

    async def checks(self) -> dict[str, dict[str, Any]]:
        """Each health check: ``{"ok": bool, "detail": str}``."""
        daemon = self._daemon
        world_ok = daemon.world_status == "subscribed"
        return {
            "daemon": {
                "ok": daemon.ready.is_set(),
                "detail": "ready" if daemon.ready.is_set() else "starting or stopping",
            },
            "world": {"ok": world_ok, "detail": daemon.world_status},
            "scheduler": {
                "ok": daemon.heartbeats.running,
                "detail": "running" if daemon.heartbeats.running else "stopped",
            },
            "database": await self._database(),
        }

    async def _database(self) -> dict[str, Any]:
        try:
            async with asyncio.timeout(DB_CHECK_SECONDS):
                await self._db_check()
        except TimeoutError:
            return {"ok": False, "detail": f"no answer within {DB_CHECK_SECONDS:g} s"}
        except Exception as exc:  # any failure means unreachable; the type says enough here
            return {"ok": False, "detail": f"unreachable ({type(exc).__name__})"}
        return {"ok": True, "detail": "reachable"}

    async def _healthz(self, request: web.Request) -> web.Response:
        checks = await self.checks()
        healthy = all(check["ok"] for check in checks.values())
        body = {"status": "ok" if healthy else "unhealthy", "checks": checks}
        return web.json_response(body, status=200 if healthy else 503)

    # ------------------------------------------------------------------ metrics

    def metrics_text(self, backlog: Mapping[tuple[int, str], int] | None = None) -> str:
        """Everything the daemon counts, in the Prometheus text format.

        Args:
            backlog: (storyteller id, state) → open work items, when known.
        """
        daemon = self._daemon
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
        out.family(
            "events_received_total", "counter", "World events received.", _bare(stats.events_in)
        )
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
        out.family(
            "turns_total", "counter", "Turns, by outcome.", _labelled("outcome", stats.turns)
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
        out.histogram(
            "model_request_seconds", "Model request latency, by model.", "model", self._latency
        )
        if self._alerts is not None:
            out.family(
                "alerts_total",
                "counter",
                "Alerts raised, by kind.",
                _labelled("kind", self._alerts.raised),
            )
            discord = self._alerts.discord
            if discord is not None:
                deliveries = {**discord.counts, "suppressed": discord.suppressed}
                out.family(
                    "alert_deliveries_total",
                    "counter",
                    "Discord alert posts, by result.",
                    _labelled("result", deliveries),
                )
        return out.text()

    async def _metrics(self, request: web.Request) -> web.Response:
        try:
            backlog = await self._daemon.pipeline.backlog_depth()
        except Exception:  # the database being down must not hide every other metric
            backlog = None
        return web.Response(
            body=self.metrics_text(backlog).encode(), headers={"Content-Type": CONTENT_TYPE}
        )
