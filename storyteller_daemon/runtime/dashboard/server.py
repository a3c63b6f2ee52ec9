"""`DashboardServer`: the dashboard's own listener, for ``storyteller dashboard`` (no daemon).

It serves the same pages and API as the daemon's listener, from the database alone: pausing
writes the setting, which a daemon running elsewhere picks up at its next settings poll, and
the live timeline looks for new runs every few seconds instead of being woken by the recorder.
"""

from __future__ import annotations

from types import TracebackType

from aiohttp import web

from storyteller_daemon.clock import Clock
from storyteller_daemon.runtime.dashboard.site import Dashboard
from storyteller_daemon.runtime.health.access import Gate
from storyteller_daemon.runtime.health.server import listen


class DashboardServer:
    """Serves one `Dashboard` on host:port behind the token (empty: none, loopback only).

    The caller checks the address and token first (`check_http_settings`).
    """

    def __init__(
        self,
        dashboard: Dashboard,
        *,
        host: str,
        port: int,
        token: str,
        clock: Clock,
    ) -> None:
        self._dashboard = dashboard
        self._host = host
        self._port = port
        self.gate = Gate(token, clock)
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The bound port (the chosen one when 0 was asked for)."""
        return self._port

    async def __aenter__(self) -> DashboardServer:
        """Start listening.

        Raises:
            ConfigError: the address cannot be bound.
        """
        app = web.Application(middlewares=[self.gate.middleware])
        self._dashboard.install(app, self.gate)
        self._runner, self._port = await listen(app, self._host, self._port)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
