"""Configuration: one TOML file, validated once into frozen objects.

Secrets never live in the file: keys that end in ``_env`` hold the *name* of an environment
variable, and the value is read from the environment by the composition root. Every problem is
reported as a `ConfigError` naming the file, the dotted key and what is wrong.

The package's modules: `fields` (the value types and the base of every section), `sections`
(every section but three), `policy` (the ``[policy]`` section), `mcp` (the ``[mcp]`` section),
`endpoints` (``[endpoints]`` and ``[models]``: which server answers which model) and `loading`
(the whole file, reading and validating it, the database URL).
"""

from storyteller_daemon.config.endpoints import (
    DEFAULT_ENDPOINT,
    EndpointConfig,
    ModelEntry,
    endpoint_of,
    model_entry,
)
from storyteller_daemon.config.fields import (
    ENV_NAME_PATTERN,
    EnvVarName,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    normalise_database_url,
)
from storyteller_daemon.config.loading import (
    Config,
    check_cluster_database,
    database_url,
    load_config,
    parse_config,
)
from storyteller_daemon.config.mcp import McpConfig, McpServeConfig, McpServerConfig
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
    ModelPrice,
    ReflectionConfig,
    RunsConfig,
    WorldConfig,
)

__all__ = [
    "DEFAULT_ENDPOINT",
    "ENV_NAME_PATTERN",
    "AlertsConfig",
    "AttentionConfig",
    "BudgetsConfig",
    "ClusterConfig",
    "Config",
    "DaemonConfig",
    "DatabaseConfig",
    "EndpointConfig",
    "EnvVarName",
    "HttpConfig",
    "LimitsConfig",
    "LoggingConfig",
    "McpConfig",
    "McpServeConfig",
    "McpServerConfig",
    "ModelConfig",
    "ModelEntry",
    "ModelPrice",
    "NonNegativeFloat",
    "NonNegativeInt",
    "PolicyConfig",
    "PositiveFloat",
    "PositiveInt",
    "ReflectionConfig",
    "RunsConfig",
    "WorldConfig",
    "check_cluster_database",
    "database_url",
    "endpoint_of",
    "load_config",
    "model_entry",
    "normalise_database_url",
    "parse_config",
]
