"""The checks of ``storyteller doctor``: the config, database, models, world, MCP and webhook."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from storyteller_daemon.cli.doctor.findings import (
    ENV_FILE_HINT,
    OPENAI_BASE_URL,
    Finding,
    ok,
    problem,
)
from storyteller_daemon.errors import ConfigError, StorytellerError

if TYPE_CHECKING:
    from storyteller_daemon.config import Config


class Doctor:
    """Runs the checks against one configuration.

    Args:
        environ: where secrets are read from.
        timeout_seconds: limit of each network check.
        offline: contact no model endpoint (no model listing, no test requests).
    """

    def __init__(
        self, environ: Mapping[str, str], timeout_seconds: float = 10.0, *, offline: bool = False
    ) -> None:
        self._environ = environ
        self._timeout = timeout_seconds
        self._offline = offline

    async def run(
        self, load: Callable[[], Config], *, send_test_alert: bool = False
    ) -> list[Finding]:
        """Every check, in order; later checks are skipped when the config cannot be read."""
        try:
            cfg = load()
        except ConfigError as exc:
            return [
                problem("config", str(exc), "edit the file; config.example.toml documents each key")
            ]
        findings = [ok("config", "the configuration is valid"), self.http(cfg)]
        database, models = await self.database(cfg)
        findings.append(database)
        findings.extend(await self.model(cfg, models))
        findings.append(self.prices(cfg, models))
        if not self._offline:
            from storyteller_daemon.cli.doctor.models import probe_models

            findings.extend(await probe_models(cfg, self._environ, models, self._timeout))
        world = await self.world(cfg)
        findings.append(world)
        if database.ok and world.ok:
            findings.extend(await self.fit(cfg))
        findings.extend(await self.mcp(cfg))
        findings.append(await self.webhook(cfg, send_test_alert=send_test_alert))
        return findings

    def prices(self, cfg: Config, used: Mapping[str, list[str]]) -> Finding:
        """Which models in use have a price; one without costs $0 (a local model), which is
        no problem."""
        from storyteller_daemon.agent.models.pricing import price_for

        unpriced = sorted(name for name in used if price_for(cfg.model.prices, name) is None)
        if not unpriced:
            return ok("prices", f"{len(used)} model(s) in use, all priced")
        return ok(
            "prices",
            f"{len(used)} model(s) in use; without a price, so counted as $0: "
            + ", ".join(unpriced),
        )

    def http(self, cfg: Config) -> Finding:
        """The health listener's address and token rules."""
        from storyteller_daemon.app import http_token

        if not cfg.http.enabled:
            return ok("http", "the /healthz and /metrics listener is off")
        try:
            token = http_token(cfg, self._environ)
        except ConfigError as exc:
            return problem("http", exc.problem, f"set {cfg.http.token_env or '[http] token_env'}")
        guarded = "with a bearer token" if token else "without a token (loopback only)"
        return ok("http", f"will listen on {cfg.http.host}:{cfg.http.port} {guarded}")

    async def database(self, cfg: Config) -> tuple[Finding, dict[str, list[str]]]:
        """Reachable and migrated; also returns model name → storytellers using it."""
        from storyteller_daemon.app import open_store
        from storyteller_daemon.clock import SystemClock
        from storyteller_daemon.config import database_url
        from storyteller_daemon.domain.storytellers import Scope

        try:
            url = database_url(cfg, self._environ)
        except ConfigError as exc:
            return problem("database", exc.problem, f"set it in {ENV_FILE_HINT}"), {}
        missing = _missing_sqlite_file(url)
        if missing is not None:  # opening it would create an empty file: look, do not touch
            return problem(
                "database",
                f"the SQLite file {missing} does not exist",
                "run `storyteller db upgrade` to create it (the systemd unit does at each start)",
            ), {}
        store = open_store(cfg, SystemClock(), self._environ)
        models: dict[str, list[str]] = {}
        try:
            async with asyncio.timeout(self._timeout):
                current, head = await store.db.current_revision(), store.db.head_revision()
                if current != head:
                    found = f"{store.db.dialect} database is at revision {current or 'none'}"
                    return problem(
                        "database",
                        f"{found}; this version needs {head}",
                        "run `storyteller db upgrade` (the systemd unit does it at each start)",
                    ), {}
                for st in await store.storytellers.list():
                    for name in {st.model_for(scope) for scope in Scope}:
                        models.setdefault(name, []).append(st.name)
        except (StorytellerError, TimeoutError) as exc:
            detail = str(exc) or "no answer in time"
            return problem(
                "database", detail, "check [database] url and that the database is running"
            ), {}
        finally:
            await store.close()
        detail = f"{store.db.dialect} database reachable, schema current ({head})"
        return ok("database", detail), models

    async def model(self, cfg: Config, used: Mapping[str, list[str]]) -> list[Finding]:
        """The default endpoint answers with our key, and lists the models sent to it."""
        from storyteller_daemon.app.adapters import KEYLESS
        from storyteller_daemon.config import DEFAULT_ENDPOINT, endpoint_of

        sent_elsewhere = bool(used) and all(
            endpoint_of(cfg.models, m) != DEFAULT_ENDPOINT for m in used
        )
        if sent_elsewhere:
            return [ok("model", "no model in use is sent to [model]'s endpoint")]
        used = {m: u for m, u in used.items() if endpoint_of(cfg.models, m) == DEFAULT_ENDPOINT}
        env = cfg.model.api_key_env
        key = self._environ.get(env, "").strip() if env else KEYLESS
        if not key:
            if cfg.model.offline_when_no_key:
                return [ok("model", f"{env} is not set: the offline stand-in answers (no LLM)")]
            return [
                problem(
                    "model",
                    f"{env} is not set, so storytellers will not call a model",
                    f"put {env}=… in {ENV_FILE_HINT}",
                )
            ]
        import aiohttp  # here, not at the top: `storyteller --help` stays quick

        base = (cfg.model.base_url or OPENAI_BASE_URL).rstrip("/")
        if self._offline:
            return [ok("model", f"{base} not contacted (--offline)")]
        try:
            status, listed = await self._list_models(base, key)
        except (aiohttp.ClientError, TimeoutError) as exc:
            return [
                problem(
                    "model",
                    f"cannot reach {base} ({type(exc).__name__})",
                    "check [model] base_url, DNS and the firewall",
                )
            ]
        if status in (401, 403):
            return [
                problem("model", f"{base} rejected the API key (HTTP {status})", f"check {env}")
            ]
        if status in (404, 405, 501):
            detail = f"{base} answers but does not list its models, so names were not checked"
            return [ok("model", detail)]
        if status != 200 or listed is None:
            return [problem("model", f"GET {base}/models answered HTTP {status}", "check base_url")]
        findings = [ok("model", f"{base} accepts the key and lists {len(listed)} models")]
        for name, storytellers in sorted(used.items()):
            if name not in listed:
                who = ", ".join(storytellers)
                findings.append(
                    problem(
                        "models",
                        f"{name!r} (used by {who}) is not offered by the endpoint",
                        f'storyteller ais set "{storytellers[0]}" model NAME '
                        "(with --scope time or attention if it is that scope's model)",
                    )
                )
        if len(findings) == 1 and used:
            findings.append(ok("models", f"all {len(used)} model names in use are offered"))
        return findings

    async def _list_models(self, base: str, key: str) -> tuple[int, set[str] | None]:
        import aiohttp

        timeout = aiohttp.ClientTimeout(total=self._timeout)
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.get(f"{base}/models", headers=headers) as response,
        ):
            if response.status != 200:
                return response.status, None
            try:
                body = await response.json(content_type=None)
                names = {str(item["id"]) for item in body["data"]}
            except (ValueError, KeyError, TypeError):
                return 502, None  # a 200 that is not a model list
            return 200, names

    async def world(self, cfg: Config) -> Finding:
        """The configured world answers a zone query."""
        from storyteller_daemon.app import build_world

        try:
            world = build_world(cfg, self._environ)
        except ConfigError as exc:
            return problem("world", exc.problem, "fix [world] in the configuration")
        try:
            async with asyncio.timeout(self._timeout):
                zones = await world.zones()
        except Exception as exc:  # any failure to answer is the finding itself
            return problem(
                "world",
                f"{cfg.world.kind} world did not answer ({type(exc).__name__}: {exc})",
                "check that the game and its bridge run, and [world] url and token_env",
            )
        finally:
            close = getattr(world, "close", None)
            if close is not None:
                await close()
        return ok("world", f"{cfg.world.kind} world answers ({len(zones)} zones)")

    async def fit(self, cfg: Config) -> list[Finding]:
        """Each storyteller's zones, rooms and progs exist in the world, as it expects them.

        One problem per mismatch, naming the storyteller, the field and the value.
        """
        from storyteller_daemon.app import open_store
        from storyteller_daemon.app.world_access import reach_world, world_facts
        from storyteller_daemon.clock import SystemClock
        from storyteller_daemon.domain.world_fit import misfits

        store = open_store(cfg, SystemClock(), self._environ)
        try:
            storytellers = await store.storytellers.list()
        finally:
            await store.close()
        if not storytellers:
            return [ok("fit", "no storytellers yet to check against the world")]
        try:
            async with (
                asyncio.timeout(self._timeout * 3),
                reach_world(cfg, self._environ, seconds=self._timeout) as world,
            ):
                facts = await world_facts(world, storytellers)
        except (StorytellerError, TimeoutError) as exc:
            detail = str(exc) or "the world did not answer in time"
            return [problem("fit", detail, "check that the game and its bridge run")]
        found = [m for st in storytellers for m in misfits(st, facts)]
        if not found:
            detail = f"{len(storytellers)} storyteller(s) name only zones, rooms and progs "
            return [ok("fit", detail + f"that {facts.identity} has")]
        return [problem("fit", str(m), _fit_fix(m.field, m.storyteller)) for m in found]

    async def mcp(self, cfg: Config) -> list[Finding]:
        """Each configured MCP server starts (or answers) and lists its tools; none: no check."""
        if not cfg.mcp.servers:
            return []
        from storyteller_daemon.clock import SystemClock
        from storyteller_daemon.mcp.client import McpHub

        findings: list[Finding] = []
        async with McpHub(cfg.mcp, clock=SystemClock(), environ=self._environ) as hub:
            for name in cfg.mcp.servers:
                check = f"mcp {name}"
                try:
                    tools = await hub.list_tools(name)
                except StorytellerError as exc:
                    findings.append(
                        problem(
                            check,
                            str(exc),
                            f"check [mcp.servers.{name}]: its command or url, token_env, and "
                            "that the server runs",
                        )
                    )
                    continue
                names = ", ".join(sorted(t.name for t in tools)) or "none"
                findings.append(ok(check, f"lists {len(tools)} tool(s): {names}"))
        return findings

    async def webhook(self, cfg: Config, *, send_test_alert: bool) -> Finding:
        """The Discord webhook URL has the right shape; optionally post a test alert."""
        from storyteller_daemon.alerts.discord import (
            DiscordWebhookSink,
            redact_webhook_url,
            webhook_url_problem,
        )
        from storyteller_daemon.clock import SystemClock

        name = cfg.alerts.discord_webhook_env
        if not name:
            return ok("webhook", "no Discord webhook configured: alerts go to the log only")
        url = self._environ.get(name, "").strip()
        if not url:
            return problem("webhook", f"{name} is not set", f"put {name}=… in {ENV_FILE_HINT}")
        shape = webhook_url_problem(url)
        if shape is not None:
            return problem("webhook", f"{name}: {shape}", "copy the webhook URL from Discord again")
        shown = redact_webhook_url(url)
        if not send_test_alert:
            return ok("webhook", f"{shown} looks right (not contacted; --send-test-alert posts)")
        sink = DiscordWebhookSink(url, clock=SystemClock(), max_attempts=2)
        async with sink.running(grace_seconds=0):
            sink.alert(
                "test",
                "Test alert from storyteller doctor",
                "Alerts from the storyteller daemon reach this channel.",
                severity="info",
            )
            try:
                async with asyncio.timeout(self._timeout * 2):
                    await sink.idle()
            except TimeoutError:
                pass
        if sink.counts["sent"]:
            return ok("webhook", f"{shown} accepted a test alert")
        return problem(
            "webhook",
            f"{shown} did not accept the test alert (see the log lines above)",
            "check that the webhook still exists in the channel's Integrations",
        )


def _fit_fix(field: str, storyteller: str) -> str:
    """What to do about one misfit, by the kind of field."""
    if field == "world":
        return (
            "load a pack written for this world (`storyteller init` writes one), or, once the "
            "pack is adapted, set its [pack] world to this world's name and load it again"
        )
    if field.startswith("surveillance."):
        return (
            "`storyteller world zones` and `storyteller world rooms` list the ids; fix the pack "
            f'and load it again, or `storyteller ais set "{storyteller}" surveillance`'
        )
    return (
        "`storyteller world progs` lists the progs with their types; fix the pack and load it "
        "again, or change the storyteller with `storyteller ais set`"
    )


def _missing_sqlite_file(url: str) -> str | None:
    """The path of a SQLite database file that does not exist yet, else None."""
    scheme, _, rest = url.partition(":///")
    if not scheme.startswith("sqlite") or not rest:
        return None
    path = rest.split("?", 1)[0]
    if path in ("", ":memory:") or os.path.exists(path):
        return None
    return path
