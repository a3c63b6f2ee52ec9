"""The concrete adapters the configuration and the environment choose.

The database store, the model endpoint (OpenAI or a compatible server, the offline stand-in, or
none), the world (the embedded sim world or a game over the bridge protocol) and its prog
catalogue, alert delivery, the start history for crash-loop detection, the listener's bearer
token, and the secrets no tool argument may carry out. Secrets are read from the environment
variables the configuration names.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from progs.types import ProgSignature
from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.alerts import Alerts
from storyteller_daemon.alerts.crash_loop import StartHistory
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import DEFAULT_ENDPOINT, Config, database_url, endpoint_of
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.storage.store import Store
from world_adapter.errors import WorldAdapterError
from world_adapter.protocol import WorldClient

log = logging.getLogger(__package__)

OFFLINE_BANNER = (
    "No API key: using the OFFLINE STAND-IN, a rule-based responder. It is not a language "
    "model; it only shows the machinery working."
)


def daemon_secrets(cfg: Config, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The values of every secret the configuration names (API key, tokens, webhook, database
    URL): no tool argument may carry one out (see `agent.policy`)."""
    names = [
        cfg.model.api_key_env,
        *cfg.model.header_envs.values(),
        *(e.api_key_env for e in cfg.endpoints.values()),
        *(v for e in cfg.endpoints.values() for v in e.header_envs.values()),
        cfg.world.token_env,
        cfg.alerts.discord_webhook_env,
        cfg.http.token_env,
        cfg.database.url_env,
    ]
    return [environ[n] for n in names if n and environ.get(n, "").strip()]


def open_store(cfg: Config, clock: Clock, environ: Mapping[str, str] = os.environ) -> Store:
    """A store over the configured database, stamping rows with `clock`'s time.

    A daemon of a cluster has the server end a session left idle inside a transaction after
    a lease span (at least 5 s): one frozen mid-transaction then keeps no lease row locked
    past the time the others may take its leases over."""
    idle = max(cfg.cluster.lease_seconds, 5.0) if cfg.cluster.enabled else None
    return Store.open(
        database_url(cfg, environ),
        busy_timeout_ms=cfg.database.busy_timeout_ms,
        clock=clock,
        idle_in_transaction_seconds=idle,
    )


@dataclass
class ModelChoice:
    """The endpoint the daemon will use, and how to describe it to the admin."""

    model: Model | None
    description: str
    offline: bool = False


KEYLESS = "none"
"""The bearer token sent to an endpoint configured without a key variable (a local server)."""


def _endpoint_model(
    cfg: Config,
    environ: Mapping[str, str],
    *,
    base_url: str,
    key_env: str,
    headers: Mapping[str, str],
    header_envs: Mapping[str, str],
    timeout_seconds: float,
    max_retries: int,
) -> Model | str:
    """The model talking to one endpoint, or what is missing to use it (the OpenAI SDK is
    imported only when the endpoint can be used: the offline stand-in does without it)."""
    key = environ.get(key_env, "").strip() if key_env else KEYLESS
    if not key:
        return f"{key_env} is not set"
    sent = dict(headers)
    for header, variable in header_envs.items():
        value = environ.get(variable, "").strip()
        if not value:
            return f"{variable} (header {header}) is not set"
        sent[header] = value
    from storyteller_daemon.agent.models.capabilities import capabilities_for
    from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel

    models = cfg.models
    return OpenAIResponsesModel(
        api_key=key,
        base_url=base_url or None,
        timeout_seconds=timeout_seconds,
        max_retries=max_retries,
        headers=sent,
        capabilities=lambda model: capabilities_for(model, models),
    )


def endpoint_models(cfg: Config, environ: Mapping[str, str] = os.environ) -> dict[str, Model | str]:
    """Every configured endpoint (``default`` is ``[model]``'s): its model, or what is missing."""
    found: dict[str, Model | str] = {
        DEFAULT_ENDPOINT: _endpoint_model(
            cfg,
            environ,
            base_url=cfg.model.base_url,
            key_env=cfg.model.api_key_env,
            headers=cfg.model.headers,
            header_envs=cfg.model.header_envs,
            timeout_seconds=cfg.model.request_timeout_seconds,
            max_retries=cfg.model.max_retries,
        )
    }
    for name, endpoint in cfg.endpoints.items():
        found[name] = _endpoint_model(
            cfg,
            environ,
            base_url=endpoint.base_url,
            key_env=endpoint.api_key_env,
            headers=endpoint.headers,
            header_envs=endpoint.header_envs,
            timeout_seconds=endpoint.request_timeout_seconds or cfg.model.request_timeout_seconds,
            max_retries=(
                cfg.model.max_retries if endpoint.max_retries is None else endpoint.max_retries
            ),
        )
    return found


def choose_model(cfg: Config, environ: Mapping[str, str] = os.environ) -> ModelChoice:
    """OpenAI (or a compatible server) with a key; the offline stand-in if allowed; else none.

    With ``[endpoints]`` configured, the model is an `EndpointRouter` sending each request to
    its model's endpoint; an endpoint whose key is missing fails its requests unsent.
    """
    endpoints = endpoint_models(cfg, environ)
    default = endpoints[DEFAULT_ENDPOINT]
    if cfg.endpoints:
        from storyteller_daemon.agent.models.endpoints import EndpointRouter, UnavailableEndpoint

        usable = {
            name: UnavailableEndpoint(name, found) if isinstance(found, str) else found
            for name, found in endpoints.items()
        }
        models = cfg.models
        router = EndpointRouter(usable, lambda model: endpoint_of(models, model))
        return ModelChoice(router, router.name)
    if not isinstance(default, str):
        return ModelChoice(default, default.name)
    if cfg.model.offline_when_no_key:
        from storyteller_daemon.agent.models.offline import OfflineStandInModel

        offline = OfflineStandInModel()
        return ModelChoice(offline, offline.name, offline=True)
    return ModelChoice(None, f"none: {default}, so storytellers will not call a model")


def build_world(
    cfg: Config, environ: Mapping[str, str] = os.environ, *, request_seconds: float = 10.0
) -> WorldClient:
    """The configured world: the embedded sim world, or a game over the bridge protocol.

    A bridged game is not contacted here; it is first reached by the first query or
    subscription (each request gets `request_seconds`, reconnects included).
    """
    if cfg.world.kind == "sim":
        from world_adapter.sim import SimWorld

        return SimWorld.harbour_town(seed=cfg.world.sim_seed)
    from world_adapter.bridge.client import BridgeWorldClient, check_bridge_url
    from world_adapter.bridge.timing import BridgeTimings

    try:
        url = check_bridge_url(cfg.world.url)
    except ValueError as exc:
        raise ConfigError("config", str(exc), key="world.url") from None
    if not cfg.world.token_env:
        raise ConfigError("config", "a bridged world needs token_env", key="world.token_env")
    token = environ.get(cfg.world.token_env, "").strip()
    if not token:
        raise ConfigError(
            "config",
            f"environment variable {cfg.world.token_env} is not set",
            key="world.token_env",
        )
    timings = BridgeTimings(request_seconds=request_seconds)
    return BridgeWorldClient(url, token, timings=timings, client_name="storyteller")


async def prog_catalogue(cfg: Config) -> list[ProgSignature] | None:
    """The configured world's prog catalogue, or None when the world cannot be reached.

    The embedded sim world is always reachable; a bridged game may not be running, so it gets
    a short time budget.
    """
    if cfg.world.kind == "sim":
        return await build_world(cfg).progs()
    world = build_world(cfg, request_seconds=3.0)
    try:
        return await world.progs()
    except WorldAdapterError:
        return None
    finally:
        await close_if_closable(world)


def build_alerts(cfg: Config, clock: Clock, environ: Mapping[str, str] = os.environ) -> Alerts:
    """Alerts to the log, and to Discord when `alerts.discord_webhook_env` names a webhook.

    An unset variable leaves Discord out with a warning (storytelling matters more than its
    alerts; `storyteller doctor` reports it).

    Raises:
        ConfigError: the variable holds something that is not a Discord webhook URL.
    """
    name = cfg.alerts.discord_webhook_env
    discord = None
    url = environ.get(name, "").strip() if name else ""
    if name and not url:
        log.warning("%s is not set: alerts go to the log only", name)
    if url:  # the Discord sink's module (aiohttp's client) only for a webhook
        from storyteller_daemon.alerts.discord import DiscordWebhookSink, webhook_url_problem

        problem = webhook_url_problem(url)
        if problem is not None:
            raise ConfigError(
                "config",
                f"environment variable {name}: {problem}",
                key="alerts.discord_webhook_env",
            )
        discord = DiscordWebhookSink(
            url,
            clock=clock,
            source=f"storyteller@{socket.gethostname()}",
            period_seconds=cfg.alerts.repeat_window_seconds,
        )
    return Alerts(clock=clock, discord=discord)


def start_history(cfg: Config, environ: Mapping[str, str] = os.environ) -> StartHistory | None:
    """Where starts are recorded for crash-loop detection, or None for no detection.

    The configured file, else ``$STATE_DIRECTORY/start-history.json`` when systemd runs us.
    """
    if cfg.alerts.start_history_file:
        return StartHistory(Path(cfg.alerts.start_history_file))
    state = environ.get("STATE_DIRECTORY", "").split(":")[0]
    return StartHistory(Path(state) / "start-history.json") if state else None


def http_token(cfg: Config, environ: Mapping[str, str] = os.environ) -> str:
    """The listener's bearer token ("" for none), checked against the listen address.

    Raises:
        ConfigError: the listener would be reachable from other machines without a token.
    """
    token = environ.get(cfg.http.token_env, "").strip() if cfg.http.token_env else ""
    if cfg.http.enabled:  # the listener's module (aiohttp's server) only for a listener
        from storyteller_daemon.runtime.health.server import check_http_settings

        check_http_settings(cfg.http, token)
    return token


@runtime_checkable
class Closable(Protocol):
    """A part holding connections (an HTTP model client, a bridge client) to release at exit."""

    async def close(self) -> None:
        """Release what the part holds."""
        ...


async def close_if_closable(part: object) -> None:
    """Close `part` if it holds anything (the sim world and the offline model hold nothing)."""
    if isinstance(part, Closable):
        await part.close()
