"""``storyteller doctor``: each check against real local services, and the command's output."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from storyteller_daemon.cli.doctor.checks import Doctor
from storyteller_daemon.cli.doctor.findings import Finding
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import Config, parse_config
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer

KEY = "sk-test-doctor"
WEBHOOK = "/api/webhooks/42/doctor-token"


def config(url: str, **sections: dict[str, Any]) -> Config:
    return parse_config({"database": {"url": url}, **sections}, "test.toml")


def by_check(findings: list[Finding]) -> dict[str, list[Finding]]:
    grouped: dict[str, list[Finding]] = {}
    for finding in findings:
        grouped.setdefault(finding.check, []).append(finding)
    return grouped


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def doctor_answers(body: dict[str, Any]) -> Reply:
    """What a capable model answers the doctor's two probes: the ping call, the JSON."""
    if body.get("tools"):
        return Reply.calls(("ping", {"ok": True}))
    return Reply.text('{"ok": true}')


@pytest.fixture
async def endpoint() -> AsyncIterator[ScriptedResponsesServer]:
    async with ScriptedResponsesServer(responder=doctor_answers) as server:
        server.api_key = KEY
        yield server


@pytest.fixture
async def storytellers(sqlite_store: Store) -> Store:
    watch = await sqlite_store.storytellers.create("Harbour Watch")
    await sqlite_store.storytellers.save(replace(watch, attention_model="gpt-5-nano"))
    await sqlite_store.storytellers.create("Temple Bell")
    return sqlite_store


PRICE = {"input": 1.0, "cached_input": 0.1, "output": 2.0}


def model_section(server: ScriptedResponsesServer) -> dict[str, Any]:
    prices = dict.fromkeys(("gpt-5", "gpt-5-mini", "gpt-5-nano"), PRICE)
    return {"model": {"api_key_env": "DOCTOR_KEY", "base_url": server.base_url, "prices": prices}}


async def test_a_healthy_setup_passes_every_check(
    sqlite_url: str, storytellers: Store, endpoint: ScriptedResponsesServer
) -> None:
    endpoint.models = ["gpt-5", "gpt-5-nano", "gpt-5-mini"]
    cfg = config(sqlite_url, **model_section(endpoint))
    findings = await Doctor({"DOCTOR_KEY": KEY}).run(lambda: cfg)
    assert all(f.ok for f in findings), findings
    checks = by_check(findings)
    assert list(checks) == [
        "config", "http", "database", "model", "models", "prices", "model gpt-5",
        "model gpt-5-nano", "world", "fit", "webhook"
    ]  # fmt: skip
    assert checks["database"][0].detail.startswith("sqlite database reachable, schema current")
    assert checks["model"][0].detail == f"{endpoint.base_url} accepts the key and lists 3 models"
    assert checks["models"][0].detail == "all 2 model names in use are offered"
    assert checks["model gpt-5"][0].detail == (
        f"openai:{endpoint.base_url} ([model]) answers a tool call and a JSON schema"
    )
    assert checks["world"][0].detail == "sim world answers (2 zones)"
    # Two probes per model: a tool call, and a strict JSON schema.
    assert len(endpoint.requests) == 4
    tool_probe, json_probe = endpoint.requests[:2]
    assert tool_probe["tool_choice"] == "required" and tool_probe["tools"][0]["name"] == "ping"
    assert json_probe["text"]["format"]["type"] == "json_schema"
    assert tool_probe["reasoning"] == {"effort": "minimal"}  # gpt-5's least


async def test_offline_it_sends_no_request_to_a_model_endpoint(
    sqlite_url: str, storytellers: Store, endpoint: ScriptedResponsesServer
) -> None:
    cfg = config(sqlite_url, **model_section(endpoint))
    findings = await Doctor({"DOCTOR_KEY": KEY}, offline=True).run(lambda: cfg)
    assert all(f.ok for f in findings), findings
    checks = by_check(findings)
    assert checks["model"][0].detail == f"{endpoint.base_url} not contacted (--offline)"
    assert not any(check.startswith("model ") for check in checks)
    assert endpoint.requests == []


async def test_it_tells_a_server_without_responses_from_one_with_it(
    sqlite_url: str, storytellers: Store, endpoint: ScriptedResponsesServer
) -> None:
    async with (
        ScriptedResponsesServer(responses_api=False) as chat_only,
        ScriptedResponsesServer(responder=doctor_answers, reasoning=False) as local,
    ):
        cfg = config(
            sqlite_url,
            model={"api_key_env": "DOCTOR_KEY", "base_url": endpoint.base_url},
            endpoints={
                "chat": {"base_url": chat_only.base_url},
                "local": {"base_url": local.base_url},
            },
            models={"llama3.2": {"endpoint": "local"}, "mistral": {"endpoint": "chat"}},
        )
        endpoint.models = ["gpt-5", "gpt-5-nano"]
        checks = by_check(await Doctor({"DOCTOR_KEY": KEY}).run(lambda: cfg))
        local_url = local.base_url
    (without,) = checks["model mistral"]
    assert not without.ok
    assert without.detail.endswith(
        "HTTP 404: the server has no POST /responses (it does not speak the Responses API)"
    )
    assert without.fix.startswith("point [endpoints.chat] base_url at a server that serves")
    (with_it,) = checks["model llama3.2"]
    assert with_it.ok, with_it
    assert with_it.detail == (
        f"openai:{local_url} ([endpoints.local]) answers a tool call and a JSON schema"
    )
    assert not {"reasoning", "include"} & set(local.requests[0])  # it would have refused them
    assert checks["models"][0].ok  # the models sent elsewhere are not looked for in [model]'s
    assert checks["prices"][0].ok


async def test_a_model_that_will_not_call_tools_or_a_refused_field_is_a_problem(
    sqlite_url: str, storytellers: Store, endpoint: ScriptedResponsesServer
) -> None:
    async with ScriptedResponsesServer(
        responder=lambda _: Reply.text("I am here."), reasoning=False
    ) as chatty:
        cfg = config(
            sqlite_url,
            **model_section(endpoint),
            endpoints={"local": {"base_url": chatty.base_url}},
            models={
                "llama3.2": {"endpoint": "local"},
                "qwen3": {"endpoint": "local", "reasoning": True},
            },
        )
        endpoint.models = ["gpt-5", "gpt-5-nano"]
        checks = by_check(await Doctor({"DOCTOR_KEY": KEY}).run(lambda: cfg))
    (lazy,) = checks["model llama3.2"]
    assert not lazy.ok
    assert lazy.detail.endswith(
        "answers, but it answered the tool request without calling the tool and its answer to "
        "the JSON-schema request was not the JSON asked for"
    )
    (refused,) = checks["model qwen3"]
    assert not refused.ok and "HTTP 400 (unsupported_parameter)" in refused.detail
    assert refused.fix.startswith("if it names reasoning, include or prompt_cache_key")


async def test_an_unknown_model_name_is_a_problem_naming_its_storytellers(
    sqlite_url: str, storytellers: Store, endpoint: ScriptedResponsesServer
) -> None:
    endpoint.models = ["gpt-5"]
    cfg = config(sqlite_url, **model_section(endpoint))
    findings = by_check(await Doctor({"DOCTOR_KEY": KEY}).run(lambda: cfg))
    (models,) = findings["models"]
    assert not models.ok
    assert models.detail == "'gpt-5-nano' (used by Harbour Watch) is not offered by the endpoint"
    assert models.fix.startswith('storyteller ais set "Harbour Watch" model NAME')


@pytest.mark.parametrize(
    ("key", "models", "ok", "detail"),
    [
        ("sk-wrong", ["gpt-5"], False, "rejected the API key (HTTP 401)"),
        (KEY, None, True, "answers but does not list its models, so names were not checked"),
    ],
)
async def test_the_model_endpoint_check_reads_the_models_route(
    sqlite_url: str,
    storytellers: Store,
    endpoint: ScriptedResponsesServer,
    key: str,
    models: list[str] | None,
    ok: bool,
    detail: str,
) -> None:
    endpoint.models = models
    cfg = config(sqlite_url, **model_section(endpoint))
    (model,) = by_check(await Doctor({"DOCTOR_KEY": key}).run(lambda: cfg))["model"]
    assert model.ok is ok
    assert model.detail.endswith(detail)
    assert KEY not in model.detail and "sk-wrong" not in model.detail


async def test_an_unreachable_model_endpoint_or_missing_key_is_a_problem(
    sqlite_url: str, storytellers: Store
) -> None:
    base = f"http://127.0.0.1:{closed_port()}/v1"
    cfg = config(sqlite_url, model={"api_key_env": "DOCTOR_KEY", "base_url": base})
    (model,) = by_check(await Doctor({"DOCTOR_KEY": KEY}).run(lambda: cfg))["model"]
    assert (model.ok, model.detail) == (False, f"cannot reach {base} (ClientConnectorError)")
    (model,) = by_check(await Doctor({}).run(lambda: cfg))["model"]
    assert (model.ok, model.detail) == (
        False,
        "DOCTOR_KEY is not set, so storytellers will not call a model",
    )


async def test_database_problems_say_how_to_fix_them(tmp_path: Path) -> None:
    missing = tmp_path / "absent.db"
    (finding,) = by_check(await Doctor({}).run(lambda: config(f"sqlite+aiosqlite:///{missing}")))[
        "database"
    ]
    assert (finding.ok, finding.detail) == (False, f"the SQLite file {missing} does not exist")
    assert not missing.exists()  # the doctor looks and does not touch

    empty = tmp_path / "empty.db"
    store = Store.open(f"sqlite+aiosqlite:///{empty}", clock=SystemClock())
    await store.db.current_revision()  # creates the file, with no schema
    await store.close()
    (finding,) = by_check(await Doctor({}).run(lambda: config(f"sqlite+aiosqlite:///{empty}")))[
        "database"
    ]
    assert not finding.ok
    assert finding.detail.startswith("sqlite database is at revision none; this version needs")
    assert finding.fix.startswith("run `storyteller db upgrade`")


async def test_an_unreadable_config_is_the_only_finding() -> None:
    def load() -> Config:
        raise ConfigError("bad.toml", "unknown key", key="limits.speling")

    assert await Doctor({}).run(load) == [
        Finding(
            "config",
            False,
            "bad.toml: limits.speling: unknown key",
            "edit the file; config.example.toml documents each key",
        )
    ]


async def test_a_listener_on_a_public_address_without_a_token_is_a_problem(
    sqlite_url: str, storytellers: Store
) -> None:
    cfg = config(sqlite_url, http={"enabled": True, "host": "0.0.0.0", "token_env": "HTTP_TOKEN"})
    (http,) = by_check(await Doctor({}).run(lambda: cfg))["http"]
    assert not http.ok and http.detail.startswith("environment variable HTTP_TOKEN is not set")
    (http,) = by_check(await Doctor({"HTTP_TOKEN": "t"}).run(lambda: cfg))["http"]
    assert http == Finding("http", True, "will listen on 0.0.0.0:9464 with a bearer token")


class Webhook:
    """A local stand-in for Discord's webhook endpoint."""

    def __init__(self, status: int) -> None:
        self.status = status
        self.posts: list[dict[str, Any]] = []

    async def handle(self, request: web.Request) -> web.Response:
        self.posts.append(await request.json())
        return web.Response(status=self.status)


async def serve(webhook: Webhook) -> tuple[web.AppRunner, str]:
    application = web.Application()
    application.router.add_post(WEBHOOK, webhook.handle)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}{WEBHOOK}"


@pytest.mark.parametrize(
    ("environ", "ok", "detail"),
    [
        ({}, False, "DOCTOR_HOOK is not set"),
        ({"DOCTOR_HOOK": "https://example.com/hook"}, False, "DOCTOR_HOOK: host 'example.com'"),
        (
            {"DOCTOR_HOOK": "https://discord.com/api/webhooks/1/secret"},
            True,
            "https://discord.com/api/webhooks/1/*** looks right (not contacted",
        ),
    ],
)
async def test_the_webhook_url_is_checked_without_contacting_it(
    sqlite_url: str, storytellers: Store, environ: dict[str, str], ok: bool, detail: str
) -> None:
    cfg = config(sqlite_url, alerts={"discord_webhook_env": "DOCTOR_HOOK"})
    (webhook,) = by_check(await Doctor(environ).run(lambda: cfg))["webhook"]
    assert webhook.ok is ok
    assert webhook.detail.startswith(detail)


@pytest.mark.parametrize(("status", "ok"), [(204, True), (404, False)])
async def test_send_test_alert_posts_one_alert(
    sqlite_url: str, storytellers: Store, status: int, ok: bool
) -> None:
    webhook = Webhook(status)
    runner, url = await serve(webhook)
    try:
        cfg = config(sqlite_url, alerts={"discord_webhook_env": "DOCTOR_HOOK"})
        findings = await Doctor({"DOCTOR_HOOK": url}, 5).run(lambda: cfg, send_test_alert=True)
    finally:
        await runner.cleanup()
    (finding,) = by_check(findings)["webhook"]
    assert finding.ok is ok
    assert [p["embeds"][0]["title"] for p in webhook.posts] == [
        "Test alert from storyteller doctor"
    ]


def test_the_command_prints_a_line_per_check_and_exits_1_on_a_problem(tmp_path: Path) -> None:
    runner = CliRunner()
    url = f"sqlite+aiosqlite:///{tmp_path / 'doc.db'}"
    assert runner.invoke(app, ["--db", url, "db", "upgrade"]).exit_code == 0
    config_file = tmp_path / "storyteller.toml"
    config_file.write_text(
        f'[database]\nurl = "{url}"\n[model]\napi_key_env = "DOCTOR_TEST_UNSET_KEY"\n',
        encoding="utf-8",
    )
    result = runner.invoke(app, ["doctor", "--config", str(config_file)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert [line.split()[:2] for line in lines] == [
        ["ok", "config"],
        ["ok", "http"],
        ["ok", "database"],
        ["problem", "model"],
        ["fix", "put"],
        ["ok", "prices"],
        ["ok", "world"],
        ["ok", "fit"],
        ["ok", "webhook"],
    ]
    assert "DOCTOR_TEST_UNSET_KEY is not set" in lines[3]

    offline = tmp_path / "offline.toml"
    offline.write_text(
        config_file.read_text(encoding="utf-8") + "offline_when_no_key = true\n", encoding="utf-8"
    )
    result = runner.invoke(app, ["--config", str(offline), "doctor"])
    assert result.exit_code == 0, result.stdout


async def test_a_model_without_a_price_costs_nothing_and_is_no_problem(
    sqlite_url: str, storytellers: Store, endpoint: ScriptedResponsesServer
) -> None:
    endpoint.models = ["gpt-5", "gpt-5-nano", "gpt-5-mini"]
    section = model_section(endpoint)
    del section["model"]["prices"]["gpt-5"]  # gpt-5-nano keeps its own price
    findings = await Doctor({"DOCTOR_KEY": KEY}).run(lambda: config(sqlite_url, **section))
    assert all(f.ok for f in findings), findings
    (prices,) = by_check(findings)["prices"]
    assert prices.detail == "2 model(s) in use; without a price, so counted as $0: gpt-5"


async def test_a_missing_default_key_is_no_problem_when_every_model_is_served_elsewhere(
    sqlite_url: str, storytellers: Store
) -> None:
    async with ScriptedResponsesServer(responder=doctor_answers) as local:
        cfg = config(
            sqlite_url,
            endpoints={"local": {"base_url": local.base_url}},
            models={"gpt-5": {"endpoint": "local"}, "gpt-5-nano": {"endpoint": "local"}},
        )
        findings = await Doctor({}).run(lambda: cfg)
    assert all(f.ok for f in findings), findings
    checks = by_check(findings)
    assert checks["model"][0].detail == "no model in use is sent to [model]'s endpoint"
    assert checks["model gpt-5"][0].ok and checks["model gpt-5-nano"][0].ok
