"""The HTTP listener: ``/healthz`` for liveness checks, the ``/metrics`` endpoint, and the web
dashboard when one is given.

`HealthServer` binds the configured address, lets `access.Gate` check every request (the bearer
token in constant time, or a dashboard login session), answers ``/healthz`` from the daemon's
readiness, world stream, heartbeat scheduler and a timed database round trip, and serves
``/metrics`` as `metrics` writes it. `check_http_settings` refuses a listener on a non-loopback
address without a token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, Protocol

from aiohttp import web

from storyteller_daemon.agent.models.metering import LatencyHistogram
from storyteller_daemon.alerts import Alerts
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import HttpConfig
from storyteller_daemon.domain.cluster import ClusterStatus
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.runtime.cluster import LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.health.access import Gate, is_loopback
from storyteller_daemon.runtime.health.metrics import CONTENT_TYPE, daemon_metrics

DB_CHECK_SECONDS = 3.0
SHUTDOWN_SECONDS = 5.0
"""How long a stop waits for requests being answered (live streams end at once)."""


async def listen(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    """Serve `app` on host:port; the runner (to clean up) and the bound port.

    Raises:
        ConfigError: the address cannot be bound (in use, not local, no permission).
    """
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_SECONDS)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError as exc:
        await runner.cleanup()
        raise ConfigError(
            "config", f"cannot listen on {host}:{port} ({exc.strerror})", "http.port"
        ) from None
    return runner, int(runner.addresses[0][1])


class WebApp(Protocol):
    """Routes served beside ``/healthz`` and ``/metrics`` (the dashboard), behind the gate."""

    def install(self, app: web.Application, gate: Gate) -> None:
        """Add the routes (and the login page) to `app`."""
        ...


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
        web_app: more routes to serve (the dashboard); None serves only health and metrics.
        clock: the clock login sessions expire on.
        leases: this daemon's lease keeper, in a cluster (its figures and the cluster's status
            from `cluster_status` go to ``/metrics``).
        cluster_status: reads the cluster's status from the database.
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
        web_app: WebApp | None = None,
        clock: Clock,
        leases: LeaseKeeper | None = None,
        cluster_status: Callable[[], Awaitable[ClusterStatus]] | None = None,
    ) -> None:
        self._daemon = daemon
        self._leases = leases
        self._cluster_status = cluster_status
        self._db_check = db_check
        self._latency = latency
        self._alerts = alerts
        self._host = host
        self._port = port
        self._web_app = web_app
        self.gate = Gate(token, clock)
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
        app = web.Application(middlewares=[self.gate.middleware])
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/metrics", self._metrics)
        if self._web_app is not None:
            self._web_app.install(app, self.gate)
        runner, self._port = await listen(app, self._host, self._port)
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

    def metrics_text(
        self,
        backlog: Mapping[tuple[int, str], int] | None = None,
        cluster: ClusterStatus | None = None,
    ) -> str:
        """`daemon_metrics` of this server's daemon, model latency and alerts.

        Args:
            backlog: (storyteller id, state) → open work items, when known.
            cluster: the cluster's daemons and leases, when known.
        """
        return daemon_metrics(
            self._daemon,
            self._latency,
            self._alerts,
            backlog,
            leases=self._leases,
            cluster=cluster,
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        try:
            backlog = await self._daemon.pipeline.backlog_depth()
        except Exception:  # the database being down must not hide every other metric
            backlog = None
        cluster = None
        if self._cluster_status is not None:
            try:
                cluster = await self._cluster_status()
            except Exception:  # as above
                cluster = None
        return web.Response(
            body=self.metrics_text(backlog, cluster).encode(),
            headers={"Content-Type": CONTENT_TYPE},
        )
