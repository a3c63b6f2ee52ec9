"""docs/model.md's configurations are complete files that load and wire up, one per provider, and
its table of inferred capabilities is what the code infers."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from storyteller_daemon.agent.models.capabilities import capabilities_for, infer_capabilities
from storyteller_daemon.agent.models.endpoints import EndpointRouter, UnavailableEndpoint
from storyteller_daemon.app import choose_model
from storyteller_daemon.app.adapters import close_if_closable
from storyteller_daemon.config import Config, parse_config

DOC = (Path(__file__).resolve().parents[1] / "docs" / "model.md").read_text(encoding="utf-8")
PROVIDERS = ["OpenAI", "Azure OpenAI", "Ollama", "vLLM", "LM Studio", "OpenRouter"]


def examples() -> dict[str, str]:
    """Provider heading → the TOML block under it."""
    found: dict[str, str] = {}
    for section in re.split(r"^### ", DOC, flags=re.MULTILINE)[1:]:
        heading, _, body = section.partition("\n")
        blocks = re.findall(r"```toml\n(.*?)```", body, flags=re.DOTALL)
        assert len(blocks) == 1, f"{heading}: expected one TOML example"
        found[heading.strip()] = blocks[0]
    return found


def load(text: str) -> Config:
    return parse_config(tomllib.loads(text), "docs/model.md")


def test_every_provider_has_a_working_configuration() -> None:
    assert list(examples()) == PROVIDERS


def key_variables(cfg: Config) -> dict[str, str]:
    names = [cfg.model.api_key_env, *(e.api_key_env for e in cfg.endpoints.values())]
    names += [*cfg.model.header_envs.values()]
    names += [v for e in cfg.endpoints.values() for v in e.header_envs.values()]
    return {name: "test-key" for name in names if name}


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_each_example_loads_and_routes_every_model_to_a_usable_endpoint(
    provider: str,
) -> None:
    cfg = load(examples()[provider])
    choice = choose_model(cfg, key_variables(cfg))
    assert choice.model is not None, choice.description
    try:
        for model in cfg.models:
            if isinstance(choice.model, EndpointRouter):
                name, endpoint = choice.model.endpoint_for(model)
                assert endpoint is not None and not isinstance(endpoint, UnavailableEndpoint)
                assert name == cfg.models[model].endpoint
    finally:
        await close_if_closable(choice.model)


@pytest.mark.parametrize(
    ("provider", "model", "reasoning", "encrypted"),
    [
        ("Azure OpenAI", "storyteller-mini", True, True),
        ("Azure OpenAI", "storyteller-gate", False, False),
        ("Ollama", "llama3.2", False, False),
        ("Ollama", "gpt-oss:20b", True, False),
        ("vLLM", "Qwen/Qwen2.5-7B-Instruct", False, False),
        ("LM Studio", "openai/gpt-oss-20b", True, False),
        ("OpenRouter", "openai/gpt-5-mini", True, False),
        ("OpenRouter", "meta-llama/llama-3.3-70b-instruct", False, False),
    ],
)
def test_each_example_model_takes_what_its_text_says(
    provider: str, model: str, reasoning: bool, encrypted: bool
) -> None:
    caps = capabilities_for(model, load(examples()[provider]).models)
    assert (caps.reasoning, caps.encrypted_reasoning) == (reasoning, encrypted)


TABLE_ROW = re.compile(
    r"^\| (?P<ids>[^|]*`[^|]*) \| (?P<efforts>[^|]+) \| (?P<enc>yes|no) \| (?P<key>[^|]+) \|$"
)


def test_the_table_of_inferred_capabilities_is_what_the_code_infers() -> None:
    rows = [m for line in DOC.splitlines() if (m := TABLE_ROW.match(line))]
    assert len(rows) == 6
    for row in rows:
        ids = [i for i in re.findall(r"`([^`]+)`", row["ids"]) if "*" not in i]
        efforts = row["efforts"].strip()
        wanted = () if efforts == "does not reason" else tuple(efforts.split(", "))
        for model in ids:
            caps = infer_capabilities(model)
            assert caps.efforts == wanted, model
            assert caps.encrypted_reasoning is (row["enc"] == "yes"), model
            if row["key"].strip() in ("yes", "no"):
                assert caps.prompt_cache_key is (row["key"].strip() == "yes"), model
