"""``storyteller dashboard``: the web dashboard from the database, without the daemon.

The same pages and API as the daemon's ``[http]`` listener, for looking at what storytellers
did while the daemon is stopped (or from another machine's copy of the database). The address
and token rules are the listener's: ``[http] token_env`` names the token, and an address other
than loopback is refused without one.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from storyteller_daemon.cli.support import open_store, run_async, say, state

STREAM_POLL_SECONDS = 2.0
"""How often the live timeline looks for runs a daemon elsewhere stored."""


@run_async
async def dashboard(
    ctx: typer.Context,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default: [http] host).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option("--port", min=0, max=65535, help="TCP port; 0 picks a free one."),
    ] = None,
) -> None:
    """Serve the web dashboard from the database until Ctrl-C (no daemon needed)."""
    from storyteller_daemon.agent.policy_rules import kill_file_path
    from storyteller_daemon.app.adapters import http_token
    from storyteller_daemon.config import database_url
    from storyteller_daemon.runtime.daemon import stop_on_signals
    from storyteller_daemon.runtime.dashboard import Controls, Dashboard, DashboardData, RunFeed
    from storyteller_daemon.runtime.dashboard.server import DashboardServer

    cfg = state(ctx).config()
    http = cfg.http.model_copy(
        update={
            "enabled": True,
            "host": host if host is not None else cfg.http.host,
            "port": port if port is not None else cfg.http.port,
        }
    )
    cfg = cfg.model_copy(update={"http": http})
    token = http_token(cfg)  # refuses a non-loopback address without a token
    controls = Controls(cfg.policy, kill_file_path(cfg.policy, database_url(cfg)))
    async with open_store(ctx) as store:
        data = DashboardData(store, cfg.budgets, store.clock, controls)
        site = Dashboard(data, RunFeed(poll_seconds=STREAM_POLL_SECONDS))
        async with DashboardServer(
            site, host=http.host, port=http.port, token=token, clock=store.clock
        ) as server:
            shown = f"[{http.host}]" if ":" in http.host else http.host
            say(f"Dashboard at http://{shown}:{server.port}/ (Ctrl-C stops it)")
            if not token:
                say("No token: anyone on this machine can use it ([http] token_env sets one).")
            with stop_on_signals(asyncio.Event()) as stop:
                await stop.wait()
