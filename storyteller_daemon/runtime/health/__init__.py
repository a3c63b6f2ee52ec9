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
sessions and CSRF tokens) and `metrics` (the ``/metrics`` exposition).
"""

from storyteller_daemon.runtime.health.access import Gate, is_loopback
from storyteller_daemon.runtime.health.metrics import CONTENT_TYPE, Exposition, Histogram
from storyteller_daemon.runtime.health.server import (
    DB_CHECK_SECONDS,
    HealthServer,
    WebApp,
    check_http_settings,
)

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
