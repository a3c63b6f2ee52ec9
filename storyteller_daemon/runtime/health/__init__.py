"""The optional HTTP listener: ``/healthz`` for liveness checks, ``/metrics`` for Prometheus.

``/healthz`` answers 200 when the daemon is ready, the world stream is subscribed, the heartbeat
scheduler runs and the database answers, and 503 otherwise; the JSON body says which check
failed. ``/metrics`` is written by ``prometheus_client`` from the daemon's own counters at each
scrape (a custom collector), with the library's process metrics beside them.

The listener binds to loopback by default. On any other address a bearer token is mandatory
(`check_http_settings` refuses to start without one), because the metrics name storytellers and
show spending.

The same listener serves the web dashboard (`storyteller_daemon.runtime.dashboard`) when
``[http] dashboard`` is on; `access` decides who may use any of it.

The package's modules: `server` (the listener and ``/healthz``), `access` (the token, login
sessions and CSRF tokens), `metrics` (the ``/metrics`` exposition) and `systemd` (sd_notify).
The names below are imported from their module on first use, so a daemon without a listener
(and `systemd`, which every daemon imports) does not load aiohttp's server or prometheus_client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from storyteller_daemon.runtime.health.access import Gate, is_loopback
    from storyteller_daemon.runtime.health.metrics import CONTENT_TYPE, Exposition, Histogram
    from storyteller_daemon.runtime.health.server import (
        DB_CHECK_SECONDS,
        HealthServer,
        WebApp,
        check_http_settings,
    )

_HOMES = {
    "CONTENT_TYPE": "metrics",
    "DB_CHECK_SECONDS": "server",
    "Exposition": "metrics",
    "Gate": "access",
    "HealthServer": "server",
    "Histogram": "metrics",
    "WebApp": "server",
    "check_http_settings": "server",
    "is_loopback": "access",
}

__all__ = [
    "CONTENT_TYPE",
    "DB_CHECK_SECONDS",
    "Exposition",
    "Gate",
    "HealthServer",
    "Histogram",
    "WebApp",
    "check_http_settings",
    "is_loopback",
]


def __getattr__(name: str) -> Any:
    """One of `__all__`, from its module (imported now if it was not yet)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
