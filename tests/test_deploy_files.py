"""The production files in deploy/ agree: the environment example names every variable the
production configuration reads (its `*_env` keys, defaults and commented alternatives included),
and nothing else; the configuration reaches a game over the bridge, not the sim."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from storyteller_daemon.config import load_config

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"
COMMENTED_ENV_KEY = re.compile(r'^#\s*\w+_env\s*=\s*"([A-Z][A-Z0-9_]*)"', re.MULTILINE)
ENV_LINE = re.compile(r"^(#\s*)?([A-Z][A-Z0-9_]*)=", re.MULTILINE)


def named_variables(model: BaseModel) -> set[str]:
    """Every variable named by a ``*_env`` field of the loaded configuration, at any depth."""
    names: set[str] = set()

    def walk(value: Any, key: str = "") -> None:
        if isinstance(value, BaseModel):
            for field in type(value).model_fields:
                walk(getattr(value, field), field)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif key.endswith("_env") and isinstance(value, str) and value:
            names.add(value)
        elif key.endswith("_env") and isinstance(value, tuple):
            names.update(value)

    walk(model)
    return names


def test_the_env_example_names_every_variable_the_deploy_config_reads() -> None:
    config_text = (DEPLOY / "storyteller.toml").read_text(encoding="utf-8")
    active = named_variables(load_config(DEPLOY / "storyteller.toml"))
    alternatives = set(COMMENTED_ENV_KEY.findall(config_text))
    example = (DEPLOY / "storyteller.env.example").read_text(encoding="utf-8")
    lines = {name: bool(hashed) for hashed, name in ENV_LINE.findall(example)}
    assert {"OPENAI_API_KEY", "STORYTELLER_BRIDGE_TOKEN"} <= active
    assert "STORYTELLER_DATABASE_URL" in alternatives
    missing = (active | alternatives) - set(lines)
    assert not missing, f"deploy/storyteller.env.example lacks {sorted(missing)}"
    assert set(lines) <= active | alternatives, "the example names variables nothing reads"
    # what the configuration reads as it stands is set, not left commented out; the token of
    # `mcp serve` is read only by that command
    needed = active - {"STORYTELLER_MCP_TOKEN"}
    assert [n for n in sorted(needed) if lines[n]] == []


def test_the_production_config_reaches_a_game_over_the_bridge() -> None:
    cfg = load_config(DEPLOY / "storyteller.toml")
    assert cfg.world.kind == "bridge"
    assert cfg.world.url.startswith("ws://") and cfg.world.token_env == "STORYTELLER_BRIDGE_TOKEN"
