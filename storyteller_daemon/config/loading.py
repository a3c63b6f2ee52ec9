"""The whole configuration file, and reading it.

`Config` gathers the sections; `load_config` reads a TOML file and `parse_config` validates an
already-parsed table, both reporting the first problem as a `ConfigError` naming the file, the
dotted key and what is wrong. `database_url` resolves the database URL, from the environment
when ``database.url_env`` names a variable.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from storyteller_daemon.config.endpoints import (
    DEFAULT_ENDPOINT,
    EndpointConfig,
    ModelEntry,
    check_endpoint_names,
)
from storyteller_daemon.config.fields import _Section, normalise_database_url
from storyteller_daemon.config.mcp import McpConfig
from storyteller_daemon.config.policy import PolicyConfig
from storyteller_daemon.config.sections import (
    AlertsConfig,
    AttentionConfig,
    BudgetsConfig,
    ClusterConfig,
    DaemonConfig,
    DatabaseConfig,
    HttpConfig,
    LimitsConfig,
    LoggingConfig,
    ModelConfig,
    ReflectionConfig,
    RunsConfig,
    WorldConfig,
)
from storyteller_daemon.errors import ConfigError


class Config(_Section):
    """The whole configuration file."""

    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    attention: AttentionConfig = Field(default_factory=AttentionConfig)
    world: WorldConfig = Field(default_factory=WorldConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    cluster: ClusterConfig = Field(default_factory=ClusterConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    reflection: ReflectionConfig = Field(default_factory=ReflectionConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    endpoints: dict[str, EndpointConfig] = Field(default_factory=dict)
    models: dict[str, ModelEntry] = Field(default_factory=dict)


def _endpoint_problem(cfg: Config) -> tuple[str, str] | None:
    """The first endpoint name or ``[models]`` entry that names no endpoint: (key, problem)."""
    problem = check_endpoint_names(cfg.endpoints)
    if problem is not None:
        return "endpoints", problem
    for model, entry in cfg.models.items():
        if entry.endpoint != DEFAULT_ENDPOINT and entry.endpoint not in cfg.endpoints:
            known = ", ".join([DEFAULT_ENDPOINT, *sorted(cfg.endpoints)])
            return (
                f"models.{model}.endpoint",
                f"no endpoint is called {entry.endpoint!r} (known: {known})",
            )
    return None


def _format_pydantic_error(err: dict[str, Any]) -> tuple[str, str]:
    key = ".".join(str(p) for p in err.get("loc", ()))
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return key, "unknown key"
    if kind == "missing":
        return key, "required key is missing"
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    if kind.endswith("_type") or kind in {"bool_parsing", "int_parsing", "float_parsing"}:
        got = type(err.get("input")).__name__
        msg = f"{msg} (got {got} {err.get('input')!r})"
    return key, msg


def parse_config(data: dict[str, Any], path: str) -> Config:
    """Validate an already-parsed TOML table; raise `ConfigError` on the first problem."""
    try:
        cfg = Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key, problem = _format_pydantic_error(dict(first))
        raise ConfigError(path, problem, key=key or None) from None
    endpoint_problem = _endpoint_problem(cfg)
    if endpoint_problem is not None:
        raise ConfigError(path, endpoint_problem[1], key=endpoint_problem[0])
    return cfg


def load_config(path: str | Path) -> Config:
    """Read and validate the TOML file at `path`."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), "file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(str(p), f"not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(str(p), f"cannot read file: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), f"invalid TOML: {exc}") from None
    return parse_config(data, str(p))


def database_url(cfg: Config, environ: Mapping[str, str] = os.environ) -> str:
    """The database URL: from `database.url_env` when set, else `database.url`."""
    if cfg.database.url_env:
        value = environ.get(cfg.database.url_env, "")
        if not value:
            raise ConfigError(
                "config",
                f"environment variable {cfg.database.url_env} is not set",
                key="database.url_env",
            )
        try:
            return normalise_database_url(value)
        except ValueError as exc:
            raise ConfigError("config", str(exc), key="database.url_env") from None
    return cfg.database.url


def check_cluster_database(cfg: Config, url: str) -> None:
    """Refuse ``[cluster] enabled`` on a database other than PostgreSQL.

    Raises:
        ConfigError: clustering on SQLite, naming the setting.
    """
    if cfg.cluster.enabled and not url.startswith("postgresql"):
        raise ConfigError(
            "config",
            "clustering needs PostgreSQL: a SQLite database has one writer, so several "
            "daemons cannot share it (set cluster.enabled = false or use postgresql://)",
            key="cluster.enabled",
        )
