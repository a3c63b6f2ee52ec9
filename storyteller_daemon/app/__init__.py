"""Composition root: the only place that names concrete adapters (world, model, database).

Everything below receives its collaborators; this package decides which ones to build from the
configuration and the environment.

The package's modules: `adapters` (the store, model, world, alerts and secrets the
configuration chooses), `runtime` (`Runtime`, the wired daemon that runs with its side work),
`wiring` (`build_runtime`, which puts the parts together) and `reflection` (one reflection
pass from the shell).
"""

from storyteller_daemon.app.adapters import (
    OFFLINE_BANNER,
    ModelChoice,
    build_alerts,
    build_world,
    choose_model,
    daemon_secrets,
    http_token,
    open_store,
    prog_catalogue,
    start_history,
)
from storyteller_daemon.app.reflection import one_shot_reflection
from storyteller_daemon.app.runtime import Runtime
from storyteller_daemon.app.wiring import attention_options, build_runtime

__all__ = [
    "OFFLINE_BANNER",
    "ModelChoice",
    "Runtime",
    "attention_options",
    "build_alerts",
    "build_runtime",
    "build_world",
    "choose_model",
    "daemon_secrets",
    "http_token",
    "one_shot_reflection",
    "open_store",
    "prog_catalogue",
    "start_history",
]
