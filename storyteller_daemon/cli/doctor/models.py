"""``storyteller doctor``'s model probes: two tiny requests to each model, through its endpoint.

For every model in use (each storyteller's three, the digest model) and every ``[models]``
entry, the doctor sends one tool-calling request and one JSON-schema request through the same
adapter the daemon uses (so what the model does not take is left out, as in a turn) and reports,
in one finding per model, what works: tool calls, JSON answers, or what the endpoint said. A
404 that does not name the model means the server has no ``POST /responses``; a 400 names what
the server refused. Each probe costs a few tokens; ``doctor --offline`` sends none.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from storyteller_daemon.cli.doctor.findings import ENV_FILE_HINT, Finding, ok, problem
from storyteller_daemon.errors import REQUEST_NOT_SENT, ModelError, ModelFatalError

if TYPE_CHECKING:
    from storyteller_daemon.agent.models.interface import Model
    from storyteller_daemon.config import Config

PROBE_MAX_OUTPUT_TOKENS = 400
"""Room for a reasoning model's (lowest-effort) reasoning before its short answer."""
_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
    "additionalProperties": False,
}
RESPONSES_SERVERS = (
    "a server that serves POST /v1/responses (OpenAI, Azure OpenAI v1, Ollama 0.13.3+, vLLM, "
    "LM Studio 0.3.29+, llama.cpp's llama-server, OpenRouter; docs/model.md), with base_url "
    "ending in /v1"
)


def models_to_probe(cfg: Config, used: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Model id → who uses it: the storytellers', the digest model and the ``[models]`` ids."""
    found = {name: list(users) for name, users in used.items()}
    if cfg.reflection.model:
        found.setdefault(cfg.reflection.model, []).append("[reflection] model")
    for name in cfg.models:
        found.setdefault(name, []).append(f'[models."{name}"]')
    return found


async def probe_models(
    cfg: Config, environ: Mapping[str, str], used: Mapping[str, list[str]], request_seconds: float
) -> list[Finding]:
    """One finding per model: what its endpoint answered to a tool call and a JSON schema."""
    from storyteller_daemon.app.adapters import close_if_closable, endpoint_models
    from storyteller_daemon.config import DEFAULT_ENDPOINT, endpoint_of

    endpoints = endpoint_models(cfg, environ)
    findings: list[Finding] = []
    try:
        for model, users in sorted(models_to_probe(cfg, used).items()):
            name = endpoint_of(cfg.models, model)
            where = "[model]" if name == DEFAULT_ENDPOINT else f"[endpoints.{name}]"
            endpoint = endpoints.get(name)
            check = f"model {model}"
            if isinstance(endpoint, str) or endpoint is None:
                reason = endpoint or "not configured"
                if name == DEFAULT_ENDPOINT:
                    continue  # the `model` check already says the default key is missing
                findings.append(
                    problem(
                        check, f"{where} cannot be used: {reason}", f"set it in {ENV_FILE_HINT}"
                    )
                )
                continue
            findings.append(await _probe(endpoint, model, users, where, request_seconds))
    finally:
        for endpoint in endpoints.values():
            await close_if_closable(endpoint)
    return findings


async def _probe(
    endpoint: Model, model: str, users: list[str], where: str, request_seconds: float
) -> Finding:
    from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec

    check = f"model {model}"
    common: dict[str, Any] = {
        "model": model,
        "reasoning_effort": "none",  # the least the model takes
        "max_output_tokens": PROBE_MAX_OUTPUT_TOKENS,
        "timeout_seconds": request_seconds,
        "max_retries": 0,
    }
    ping = ToolSpec("ping", "Say that you are there.", _SCHEMA)
    tool_request = ModelRequest(
        input=[{"role": "user", "content": "Call the ping tool with ok set to true."}],
        tools=(ping,),
        tool_choice="required",
        **common,
    )
    json_request = ModelRequest(
        input=[{"role": "user", "content": 'Answer with the JSON object {"ok": true}.'}],
        text_format={
            "type": "json_schema",
            "name": "doctor_check",
            "strict": True,
            "schema": _SCHEMA,
        },
        **common,
    )
    try:
        called = await endpoint.respond(tool_request)
        answered = await endpoint.respond(json_request)
    except ModelError as exc:
        return _refusal(check, model, where, exc)
    lacking: list[str] = []
    if not any(call.name == "ping" for call in called.function_calls):
        lacking.append("it answered the tool request without calling the tool")
    if not _is_ok_json(answered.output_text):
        lacking.append("its answer to the JSON-schema request was not the JSON asked for")
    if lacking:
        return problem(
            check,
            f"{endpoint.name} answers, but " + " and ".join(lacking),
            "storytellers need tool calls and JSON answers: choose a model that supports both "
            f"(used by {', '.join(users)})",
        )
    return ok(check, f"{endpoint.name} ({where}) answers a tool call and a JSON schema")


def _is_ok_json(text: str) -> bool:
    try:
        value = json.loads(text.strip())
    except ValueError:
        return False
    return isinstance(value, dict) and "ok" in value


def _refusal(check: str, model: str, where: str, exc: ModelError) -> Finding:
    """The finding for a probe the endpoint refused or did not answer."""
    detail = str(exc)
    if exc.request_status == REQUEST_NOT_SENT:
        return problem(check, detail, f"set it in {ENV_FILE_HINT}")
    if not isinstance(exc, ModelFatalError):
        return problem(check, detail, f"check that the server runs and {where} base_url")
    if exc.status == 404:
        if "model_not_found" in detail or model in detail:
            return problem(
                check,
                detail,
                f"the endpoint does not serve {model}: check the model id (and pull or load it "
                "on a local server)",
            )
        return problem(
            check,
            f"{detail}: the server has no POST /responses (it does not speak the Responses API)",
            f"point {where} base_url at {RESPONSES_SERVERS}",
        )
    if exc.status in (401, 403):
        return problem(check, detail, f"check the API key variable of {where}")
    if exc.status == 400:
        return problem(
            check,
            detail,
            f"if it names reasoning, include or prompt_cache_key, tell the daemon what {model} "
            f'takes: [models."{model}"] reasoning = false, encrypted_reasoning = false or '
            "prompt_cache_key = false (docs/model.md)",
        )
    return problem(check, detail, f"check {where}")
