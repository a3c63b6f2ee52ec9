"""``[endpoints.NAME]`` and ``[models."ID"]``: which server answers which model, and what it takes.

``[model]`` stays the default endpoint: a model id with no ``[models]`` entry (or one without an
``endpoint``) is sent there, so a configuration with a single endpoint needs neither table. A
named endpoint is another Responses-API server (a local Ollama, vLLM or LM Studio, OpenRouter,
Azure OpenAI) with its own URL, key variable and extra headers; ``[models."ID"]`` maps a model
id to it and may override the capabilities inferred from the id (`agent.models.capabilities`). A
``[models]`` key also matches longer ids that start with it (dated snapshots), the longest
match winning, as prices do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from storyteller_daemon.config.fields import (
    ENV_NAME_PATTERN,
    EnvVarName,
    NonNegativeInt,
    PositiveFloat,
    _Section,
)

DEFAULT_ENDPOINT = "default"
"""The name ``[models]`` entries use for ``[model]``'s endpoint."""
ENDPOINT_NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
Effort = Literal["none", "minimal", "low", "medium", "high"]
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


def _check_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"base_url must start with http:// or https://, got {url!r}")
    return url


def _check_headers(headers: dict[str, str]) -> dict[str, str]:
    for name in headers:
        if not _HEADER_NAME.match(name):
            raise ValueError(f"{name!r} is not an HTTP header name")
        if name.lower() == "authorization":
            raise ValueError("the Authorization header comes from api_key_env; leave it out")
    return headers


def _check_header_envs(envs: dict[str, str]) -> dict[str, str]:
    _check_headers(envs)
    for variable in envs.values():
        if not ENV_NAME_PATTERN.match(variable):
            raise ValueError(f"{variable!r} is not the name of an environment variable")
    return envs


Headers = Annotated[dict[str, str], AfterValidator(_check_headers)]
HeaderEnvs = Annotated[dict[str, str], AfterValidator(_check_header_envs)]


class EndpointConfig(_Section):
    """One more Responses-API server besides ``[model]``'s."""

    base_url: Annotated[str, AfterValidator(_check_url)]
    """The API root, e.g. ``http://127.0.0.1:11434/v1`` (required)."""
    api_key_env: EnvVarName = ""
    """The variable holding its API key; empty for a server that needs none."""
    headers: Headers = Field(default_factory=dict)
    """Extra headers sent with every request (not secret: they are in the file)."""
    header_envs: HeaderEnvs = Field(default_factory=dict)
    """Extra headers whose values are secrets: header name → environment variable name."""
    request_timeout_seconds: PositiveFloat | None = None
    """Per-request timeout; unset: ``[model] request_timeout_seconds``."""
    max_retries: NonNegativeInt | None = None
    """Retries on 429, 5xx, timeouts; unset: ``[model] max_retries``."""


class ModelEntry(_Section):
    """One model id: the endpoint that serves it and what it takes (unset: inferred)."""

    endpoint: str = DEFAULT_ENDPOINT
    """A name from ``[endpoints]``, or ``default`` for ``[model]``'s endpoint."""
    reasoning: bool | None = None
    """Whether it is a reasoning model (takes ``reasoning.effort``)."""
    efforts: Annotated[tuple[Effort, ...], Field(strict=False)] | None = None
    """The reasoning efforts it accepts, e.g. ``["none", "low", "medium", "high"]``; an effort
    it does not take is sent as the nearest one it does."""
    encrypted_reasoning: bool | None = None
    """Whether it returns encrypted reasoning (``include=["reasoning.encrypted_content"]``)."""
    strict_json_schema: bool | None = None
    """Whether it takes strict JSON schemas (``text.format`` json_schema, strict tools)."""
    prompt_cache_key: bool | None = None
    """Whether it takes ``prompt_cache_key``."""


def check_endpoint_names(endpoints: Mapping[str, EndpointConfig]) -> str | None:
    """The first problem with the endpoint names, or None."""
    for name in endpoints:
        if name == DEFAULT_ENDPOINT:
            return f"'{DEFAULT_ENDPOINT}' is [model]'s endpoint; give this one another name"
        if not ENDPOINT_NAME_PATTERN.match(name):
            return (
                f"endpoint name {name!r} is invalid: use 1-32 lower-case letters, digits, '_' or "
                "'-', starting with a letter or digit"
            )
    return None


def model_entry(models: Mapping[str, ModelEntry], model: str) -> ModelEntry | None:
    """The ``[models]`` entry of a model id: exact, else the longest key it starts with."""
    if model in models:
        return models[model]
    candidates = [key for key in models if model.startswith(key)]
    return models[max(candidates, key=len)] if candidates else None


def endpoint_of(models: Mapping[str, ModelEntry], model: str) -> str:
    """The name of the endpoint that serves `model` (``default``: ``[model]``'s)."""
    entry = model_entry(models, model)
    return entry.endpoint if entry is not None else DEFAULT_ENDPOINT
