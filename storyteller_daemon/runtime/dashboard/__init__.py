"""The web dashboard: what each storyteller noticed, decided, did and spent.

Served by the daemon's HTTP listener (``[http]``, beside ``/healthz`` and ``/metrics``), or by
``storyteller dashboard`` from a database alone. Pages: the overview (``/``), the live
timeline (``/timeline``), runs and the run inspector (``/runs``, ``/runs/<id>``), costs
(``/costs``), situations and memories (``/situations``, ``/memories``); the same data as JSON
under ``/api/``. Access is `runtime.health.access.Gate`'s: the bearer token, or a login session.

Modules: `site` (pages, login, assets), `api` (JSON, the live stream, controls), `views` (what
each page shows), `records` (how a stored run, situation or memory is shown), `plot` (the cost
plots' geometry), `feed` (wakes the live stream), `params`
(query strings), `server` (the listener of ``storyteller dashboard``). Reads go through
`storage.dashboard_queries.DashboardQueries`; the controls write through the storyteller repository.
"""

from storyteller_daemon.runtime.dashboard.feed import RunFeed
from storyteller_daemon.runtime.dashboard.site import Dashboard
from storyteller_daemon.runtime.dashboard.views import Controls, DashboardData, LiveDaemon

__all__ = ["Controls", "Dashboard", "DashboardData", "LiveDaemon", "RunFeed"]
