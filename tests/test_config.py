"""The example config loads, and every class of mistake gives one message naming file and key."""

from __future__ import annotations

import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from storyteller_daemon.config import Config, load_config, parse_config
from storyteller_daemon.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "storyteller.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_example_config_loads_with_documented_defaults() -> None:
    cfg = load_config(ROOT / "config.example.toml")
    assert isinstance(cfg, Config)
    # every default written in the example equals the model's default
    assert cfg.limits == type(cfg.limits)()
    assert cfg.world == type(cfg.world)()
    assert cfg.logging == type(cfg.logging)()
    assert cfg.model.api_key_env == "OPENAI_API_KEY"
    assert cfg.model.prices["gpt-5"].output == 10.0


def test_example_config_documents_every_key() -> None:
    text = (ROOT / "config.example.toml").read_text(encoding="utf-8")
    sections = [(name, field.annotation) for name, field in Config.model_fields.items()]
    for section_name, model in list(sections):
        if typing.get_origin(model) is dict:  # named tables, e.g. [endpoints.NAME]: an example
            sections.remove((section_name, model))
            _, entry = typing.get_args(model)
            assert f"[{section_name}]" in text
            for key in entry.model_fields:
                assert f"\n# {key} = " in text or f"\n# # {key} = " in text, (
                    f"{section_name}.NAME.{key} is not documented"
                )
    for section_name, model in sections:
        assert f"[{section_name}]" in text
        for key, field in model.model_fields.items():  # type: ignore[union-attr]
            if key == "prices":
                continue
            if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
                sections.append((f"{section_name}.{key}", field.annotation))
                continue
            assert f"\n{key} = " in text, f"{section_name}.{key} is not documented"
    assert "[mcp.serve]" in text


def test_config_is_frozen() -> None:
    cfg = load_config(ROOT / "config.example.toml")
    with pytest.raises(Exception):  # noqa: B017 - pydantic raises its own ValidationError
        cfg.limits.queue_size = 3  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[database]\nurl = 'x'\nspeling = 1\n", "database.speling", "unknown key"),
        (
            "[database]\nurl = 'x'\n[limits]\nqueue_size = 'ten'\n",
            "limits.queue_size",
            "valid integer",
        ),
        (
            "[model.prices.gpt-5]\ninput = 1.0\n",
            "model.prices.gpt-5.output",
            "required key is missing",
        ),
        (
            "[database]\nurl = 'x'\n[limits]\nturn_seconds = -1\n",
            "limits.turn_seconds",
            "greater than 0",
        ),
        (
            "[database]\nurl = 'x'\n[limits]\nmax_rounds = 0\n",
            "limits.max_rounds",
            "greater than 0",
        ),
        (
            "[database]\nurl = 'x'\n[model]\napi_key_env = 'sk-proj-not-a-key'\n",
            "model.api_key_env",
            "NAME of an environment variable",
        ),
        (
            "[database]\nurl = 'x'\n[alerts]\n"
            "discord_webhook_env = 'https://discord.com/api/webhooks/1/abc'\n",
            "alerts.discord_webhook_env",
            "not the secret itself",
        ),
        ("[database]\nurl = 'x'\n[world]\nkind = 'mud'\n", "world.kind", "'sim' or 'bridge'"),
        (
            "[database]\nurl = 'x'\n[limits]\nprompt_max_chars = 24000\n",
            "limits",
            "prompt_max_chars was replaced by prompt_max_tokens",
        ),
        ("[policy]\ndictated_words = 1\n", "policy.dictated_words", "greater than or equal to 2"),
        (
            "[policy]\ndictated = { EchoToRoom = 'mumble' }\n",
            "policy.dictated.EchoToRoom",
            "'refuse', 'quote' or 'allow'",
        ),
    ],
)
def test_each_error_names_file_key_and_problem(
    tmp_path: Path, text: str, key: str, problem: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(str(path))
    assert key in message
    assert problem in message
    assert "\n" not in message
    assert info.value.exit_code == 78


def test_bad_toml_syntax_reports_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "[database]\nurl = 'x'\n\n[limits\nqueue_size = 3\n")
    with pytest.raises(ConfigError, match=r"invalid TOML: .*line 4"):
        load_config(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.toml")


@pytest.mark.parametrize(
    ("given", "opened"),
    [
        ("demo.db", "sqlite+aiosqlite:///demo.db"),
        ("/var/lib/storyteller/st.db", "sqlite+aiosqlite:////var/lib/storyteller/st.db"),
        ("sqlite:///demo.db", "sqlite+aiosqlite:///demo.db"),
        ("postgresql://st@db/st", "postgresql+asyncpg://st@db/st"),
        ("postgresql+asyncpg://st@db/st", "postgresql+asyncpg://st@db/st"),
    ],
)
def test_a_database_is_given_by_url_or_by_file_path(given: str, opened: str) -> None:
    assert parse_config({"database": {"url": given}}, "t").database.url == opened


def test_an_unsupported_database_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError, match="unsupported database URL scheme 'mysql'"):
        parse_config({"database": {"url": "mysql://st@db/st"}}, "t")


def test_a_config_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    path = tmp_path / "storyteller.toml"
    path.write_bytes(b'[database]\nurl = "\xff"\n')
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(path)
