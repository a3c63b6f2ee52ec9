"""Named endpoints and per-model capabilities: each request goes to its model's server, without
what that model does not take. Two shipped Responses servers stand in for OpenAI and a local
server whose models do not reason (it refuses reasoning fields as such servers do)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from storyteller_daemon.agent.models.capabilities import (
    ModelCapabilities,
    capabilities_for,
    infer_capabilities,
    shape_request,
)
from storyteller_daemon.agent.models.endpoints import EndpointRouter
from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec
from storyteller_daemon.app import choose_model
from storyteller_daemon.app.adapters import close_if_closable
from storyteller_daemon.config import Config, parse_config
from storyteller_daemon.errors import REQUEST_NOT_SENT, ModelFatalError
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer

USER = {"role": "user", "content": "A bell rings at the quay."}
NOOP = ToolSpec(
    "Noop",
    "Do nothing.",
    {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
)
VERDICT = {
    "type": "json_schema",
    "name": "verdict",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"decision": {"type": "string"}},
        "required": ["decision"],
        "additionalProperties": False,
    },
}
REASONING_FIELDS = ("reasoning", "include", "prompt_cache_key")


def request(model: str, effort: str | None = "low", **more: Any) -> ModelRequest:
    return ModelRequest(
        model=model,
        input=[USER],
        tools=(NOOP,),
        tool_choice="required",
        reasoning_effort=effort,
        prompt_cache_key="st1",
        **more,
    )


@dataclass
class Servers:
    openai: ScriptedResponsesServer
    local: ScriptedResponsesServer

    def config(self, **models: dict[str, Any]) -> Config:
        return parse_config(
            {
                "model": {"api_key_env": "OPENAI_KEY", "base_url": self.openai.base_url},
                "endpoints": {
                    "local": {
                        "base_url": self.local.base_url,
                        "headers": {"X-Title": "storyteller"},
                        "header_envs": {"X-Tenant": "LOCAL_TENANT"},
                        "max_retries": 0,
                    }
                },
                "models": {"llama3.2": {"endpoint": "local"}, **models},
            },
            "test",
        )


@pytest.fixture
async def servers() -> AsyncIterator[Servers]:
    async with (
        ScriptedResponsesServer(responder=lambda _: Reply.calls(("Noop", {}))) as openai,
        ScriptedResponsesServer(
            responder=lambda _: Reply.calls(("Noop", {})), reasoning=False
        ) as local,
    ):
        yield Servers(openai, local)


ENVIRON = {"OPENAI_KEY": "sk-test", "LOCAL_TENANT": "harbour"}


async def test_each_request_goes_to_its_models_server_without_what_it_does_not_take(
    servers: Servers,
) -> None:
    choice = choose_model(servers.config(), ENVIRON)
    assert isinstance(choice.model, EndpointRouter)
    try:
        await choice.model.respond(request("gpt-5-mini", "medium"))
        await choice.model.respond(request("llama3.2", "high", text_format=VERDICT))
        await choice.model.respond(request("gpt-5.1", "none"))
        await choice.model.respond(request("gpt-5-mini", "none"))
    finally:
        await close_if_closable(choice.model)
    reasoning_model, no_reasoning, first_model = (
        servers.openai.requests[0],
        servers.local.requests[0],
        servers.openai.requests[1],
    )
    assert [r["model"] for r in servers.openai.requests] == ["gpt-5-mini", "gpt-5.1", "gpt-5-mini"]
    assert [r["model"] for r in servers.local.requests] == ["llama3.2"]
    assert reasoning_model["reasoning"] == {"effort": "medium"}
    assert reasoning_model["include"] == ["reasoning.encrypted_content"]
    assert reasoning_model["prompt_cache_key"] == "st1"
    # The local model does not reason: no reasoning fields, so its server did not refuse it.
    assert not set(REASONING_FIELDS) & set(no_reasoning)
    assert no_reasoning["text"]["format"]["strict"] is True
    assert servers.local.headers[0]["x-title"] == "storyteller"
    assert servers.local.headers[0]["x-tenant"] == "harbour"
    assert servers.local.headers[0]["authorization"] == "Bearer none"  # a keyless endpoint
    # Effort none on a model that takes none: no reasoning fields either.
    assert "reasoning" not in first_model and "include" not in first_model
    # A model that cannot skip reasoning gets its lowest effort instead.
    assert servers.openai.requests[2]["reasoning"] == {"effort": "minimal"}


async def test_the_strict_server_refuses_reasoning_fields_as_such_servers_do(
    servers: Servers,
) -> None:
    cfg = servers.config(**{"llama3.2": {"endpoint": "local", "reasoning": True}})
    choice = choose_model(cfg, ENVIRON)
    assert choice.model is not None
    try:
        with pytest.raises(ModelFatalError, match=r"HTTP 400 \(unsupported_parameter\)") as err:
            await choice.model.respond(request("llama3.2", "low"))
    finally:
        await close_if_closable(choice.model)
    assert err.value.status == 400
    assert servers.local.requests[0]["reasoning"] == {"effort": "low"}


async def test_an_endpoint_without_its_key_fails_unsent_naming_the_variable(
    servers: Servers,
) -> None:
    cfg = parse_config(
        {
            "model": {"api_key_env": "OPENAI_KEY", "base_url": servers.openai.base_url},
            "endpoints": {"router": {"base_url": servers.local.base_url, "api_key_env": "RK"}},
            "models": {"openai/gpt-5-mini": {"endpoint": "router"}},
        },
        "test",
    )
    choice = choose_model(cfg, {"OPENAI_KEY": "sk-test"})
    assert choice.model is not None
    try:
        with pytest.raises(ModelFatalError, match="endpoint router .* RK is not set") as err:
            await choice.model.respond(request("openai/gpt-5-mini"))
        await choice.model.respond(request("gpt-5-nano"))  # the default endpoint still works
    finally:
        await close_if_closable(choice.model)
    assert err.value.request_status == REQUEST_NOT_SENT
    assert servers.local.requests == []
    assert [r["model"] for r in servers.openai.requests] == ["gpt-5-nano"]


def test_one_endpoint_is_still_a_plain_model(servers: Servers) -> None:
    cfg = parse_config({"model": {"base_url": servers.openai.base_url}}, "test")
    choice = choose_model(cfg, {"OPENAI_API_KEY": "sk-test"})
    assert not isinstance(choice.model, EndpointRouter)
    assert choice.description.startswith("openai:http://127.0.0.1:")
    assert choose_model(cfg, {}).model is None


@pytest.mark.parametrize(
    ("model", "reasoning", "efforts", "encrypted", "cache_key"),
    [
        ("gpt-5", True, ("minimal", "low", "medium", "high"), True, True),
        ("gpt-5-mini-2025-08-07", True, ("minimal", "low", "medium", "high"), True, True),
        ("gpt-5.1", True, ("none", "low", "medium", "high"), True, True),
        ("gpt-5-pro", True, ("high",), True, True),
        ("o4-mini", True, ("low", "medium", "high"), True, True),
        ("o3", True, ("low", "medium", "high"), True, True),
        ("openai/gpt-5-mini", True, ("minimal", "low", "medium", "high"), False, False),
        ("gpt-oss:20b", True, ("low", "medium", "high"), False, False),
        ("gpt-4.1", False, (), False, True),
        ("llama3.2", False, (), False, False),
        ("Qwen/Qwen2.5-7B-Instruct", False, (), False, False),
        ("omni-moderation", False, (), False, False),
    ],
)
def test_capabilities_are_inferred_from_the_id(
    model: str, reasoning: bool, efforts: tuple[str, ...], encrypted: bool, cache_key: bool
) -> None:
    found = infer_capabilities(model)
    assert (found.reasoning, found.efforts) == (reasoning, efforts)
    assert (found.encrypted_reasoning, found.prompt_cache_key) == (encrypted, cache_key)
    assert found.strict_json_schema


def test_the_configuration_overrides_what_was_inferred() -> None:
    cfg = parse_config(
        {
            "models": {
                "qwen3": {"efforts": ["high", "low"]},  # listing efforts makes it reason
                "gpt-5": {"strict_json_schema": False, "prompt_cache_key": False},
                "my-azure-deployment": {"reasoning": True, "encrypted_reasoning": True},
            }
        },
        "test",
    )
    qwen = capabilities_for("qwen3:8b", cfg.models)  # a key matches longer ids
    assert (qwen.reasoning, qwen.efforts, qwen.encrypted_reasoning) == (
        True,
        ("low", "high"),
        False,
    )
    azure = capabilities_for("my-azure-deployment", cfg.models)
    assert (azure.reasoning, azure.efforts, azure.encrypted_reasoning) == (
        True,
        ("low", "medium", "high"),
        True,
    )
    loose = shape_request(
        request("gpt-5-2025-08-07", text_format=VERDICT), capabilities_for("gpt-5", cfg.models)
    )
    assert loose.text_format is None and loose.prompt_cache_key is None
    assert [t.strict for t in loose.tools] == [False]
    assert loose.reasoning_effort == "low"


@pytest.mark.parametrize(
    ("efforts", "wanted", "sent"),
    [
        (("none", "low", "medium", "high"), "minimal", "low"),
        (("none", "low", "medium", "high"), "none", None),
        (("minimal", "low", "medium", "high"), "none", "minimal"),
        (("high",), "low", "high"),
        (("low", "medium", "high"), "medium", "medium"),
        (("low", "medium", "high"), None, None),
    ],
)
def test_an_effort_the_model_does_not_take_is_sent_as_the_nearest(
    efforts: tuple[str, ...], wanted: str | None, sent: str | None
) -> None:
    caps = ModelCapabilities(True, efforts, True, True, True)
    assert caps.effort(wanted) == sent


def test_endpoint_names_and_routes_are_checked() -> None:
    from storyteller_daemon.errors import ConfigError

    with pytest.raises(ConfigError, match=r"models\.x\.endpoint: no endpoint is called 'gpu'"):
        parse_config({"models": {"x": {"endpoint": "gpu"}}}, "t")
    with pytest.raises(ConfigError, match="endpoints: 'default' is \\[model\\]'s endpoint"):
        parse_config({"endpoints": {"default": {"base_url": "http://h/v1"}}}, "t")
    with pytest.raises(ConfigError, match="Authorization header comes from api_key_env"):
        parse_config(
            {"endpoints": {"a": {"base_url": "http://h/v1", "headers": {"Authorization": "x"}}}},
            "t",
        )
    with pytest.raises(ConfigError, match="endpoints.a.base_url"):
        parse_config({"endpoints": {"a": {"base_url": "h/v1"}}}, "t")
