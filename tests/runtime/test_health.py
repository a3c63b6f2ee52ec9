"""The HTTP listener: /healthz from the daemon's real state, /metrics in Prometheus text format."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.models.metering import LatencyHistogram
from storyteller_daemon.app import Runtime, build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import HttpConfig, parse_config
from storyteller_daemon.errors import ConfigError, StorageError
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.health import (
    Exposition,
    HealthServer,
    check_http_settings,
    is_loopback,
)
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text
from storyteller_daemon.testing.pipeline import wired_pipeline
from world_adapter.sim import SimWorld

TOKEN = "s3cret-metrics-token"


@dataclass
class Running:
    runtime: Runtime
    stop: asyncio.Event
    task: asyncio.Task[None]

    @property
    def base(self) -> str:
        assert self.runtime.health is not None
        return f"http://127.0.0.1:{self.runtime.health.port}"


async def start(store: Store, environ: dict[str, str], **http: Any) -> Running:
    cfg = parse_config(
        {"database": {"url": "sqlite+aiosqlite:///unused.db"}, "http": {"port": 0, **http}},
        "test",
    )
    runtime = await build_runtime(
        cfg, environ=environ, world=SimWorld.harbour_town(), store=store, clock=FakeClock()
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    await asyncio.wait_for(runtime.daemon.ready.wait(), 5)
    return Running(runtime, stop, task)


@pytest.fixture
async def running(sqlite_store: Store) -> AsyncIterator[Running]:
    watch = await sqlite_store.storytellers.create('Harbour "Night" Watch')
    await sqlite_store.storytellers.save(replace(watch, paused=False))
    rig = await start(sqlite_store, {}, enabled=True)
    try:
        yield rig
    finally:
        rig.stop.set()
        await asyncio.wait_for(rig.task, 5)


async def get(url: str, token: str | None = None) -> tuple[int, str, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as response:
        return response.status, response.headers["Content-Type"], await response.text()


async def test_healthz_is_200_while_everything_is_up(running: Running) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(running.base + "/healthz") as response:
            assert response.status == 200
            body = await response.json()
    assert body == {
        "status": "ok",
        "checks": {
            "daemon": {"ok": True, "detail": "ready"},
            "world": {"ok": True, "detail": "subscribed"},
            "scheduler": {"ok": True, "detail": "running"},
            "database": {"ok": True, "detail": "reachable"},
        },
    }


async def test_metrics_describe_the_running_daemon(running: Running) -> None:
    stats = running.runtime.stats
    stats.events_in = 12
    stats.drop("pause")
    stats.verdicts["interested"] += 2
    stats.turns["completed"] += 3
    stats.queue_overflow['Harbour "Night" Watch'] += 1
    stats.cost_usd = 0.125
    stats.batch_sizes.observe(12)
    stats.turn_latency.observe(7.5)
    stats.filtered["heard_elsewhere"] += 4
    status, content_type, text = await get(running.base + "/metrics")
    assert status == 200
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    lines = text.splitlines()
    for expected in [
        "# TYPE storyteller_events_received_total counter",
        "storyteller_events_received_total 12.0",
        'storyteller_triggers_dropped_total{stage="pause"} 1.0',
        'storyteller_attention_verdicts_total{verdict="interested"} 2.0',
        'storyteller_turns_total{outcome="completed"} 3.0',
        'storyteller_queue_depth{storyteller="Harbour \\"Night\\" Watch"} 0.0',
        'storyteller_queue_overflow_total{storyteller="Harbour \\"Night\\" Watch"} 1.0',
        "storyteller_cost_usd_total 0.125",
        "storyteller_ready 1.0",
        "storyteller_world_subscribed 1.0",
        "# TYPE storyteller_model_request_seconds histogram",
        'storyteller_events_settled_by_rule_total{rule="heard_elsewhere"} 4.0',
        'storyteller_attention_batch_events_bucket{le="20.0"} 1.0',
        "storyteller_attention_batch_events_count 1.0",
        'storyteller_event_turn_seconds_bucket{le="5.0"} 0.0',
        'storyteller_event_turn_seconds_bucket{le="10.0"} 1.0',
        "storyteller_event_turn_seconds_sum 7.5",
        "# TYPE storyteller_backlog_items gauge",
        "# TYPE process_resident_memory_bytes gauge",
    ]:
        assert expected in lines, expected
    sample = re.compile(r'^[a-z_]+(\{([a-z_]+="([^"\\]|\\.)*",?)*\})? [-+0-9.eInf]+$')
    assert all(line.startswith("# ") or sample.match(line) for line in lines), text


async def test_healthz_is_503_naming_what_failed(sqlite_store: Store) -> None:
    rig = _StoppedDaemon(sqlite_store)

    async def unreachable() -> None:
        raise StorageError("cannot reach the database: connection refused")

    server = HealthServer(
        daemon=rig.daemon, db_check=unreachable, latency={}, port=0, clock=SystemClock()
    )
    async with server:
        async with aiohttp.ClientSession() as session:
            url = f"http://127.0.0.1:{server.port}/healthz"
            async with session.get(url) as response:
                assert response.status == 503
                body = await response.json()
    assert body["status"] == "unhealthy"
    assert body["checks"] == {
        "daemon": {"ok": False, "detail": "starting or stopping"},
        "world": {"ok": False, "detail": "starting"},
        "scheduler": {"ok": False, "detail": "stopped"},
        "database": {"ok": False, "detail": "unreachable (StorageError)"},
    }


async def test_a_token_is_required_on_every_route_when_configured(sqlite_store: Store) -> None:
    rig = await start(
        sqlite_store, {"METRICS_TOKEN": TOKEN}, enabled=True, token_env="METRICS_TOKEN"
    )
    try:
        for path in ("/healthz", "/metrics"):
            status, _, body = await get(rig.base + path)
            assert (status, body) == (401, '{"error": "a bearer token is required"}')
            assert (await get(rig.base + path, "wrong"))[0] == 401
            assert (await get(rig.base + path, TOKEN))[0] == 200
    finally:
        rig.stop.set()
        await asyncio.wait_for(rig.task, 5)
    with pytest.raises(aiohttp.ClientConnectionError):  # stopped with the daemon
        await get(rig.base + "/healthz")


@pytest.mark.parametrize(
    ("host", "token", "refused"),
    [
        ("127.0.0.1", "", False),
        ("::1", "", False),
        ("localhost", "", False),
        ("0.0.0.0", "", True),
        ("192.0.2.10", "", True),
        ("storyteller.example", "", True),
        ("0.0.0.0", TOKEN, False),
    ],
)
def test_a_non_loopback_listener_needs_a_token(host: str, token: str, refused: bool) -> None:
    http = HttpConfig(enabled=True, host=host, token_env="T")
    assert is_loopback(host) is (host in ("127.0.0.1", "::1", "localhost"))
    if refused:
        with pytest.raises(ConfigError) as caught:
            check_http_settings(http, token)
        assert caught.value.key == "http.token_env"
    else:
        check_http_settings(http, token)


async def test_the_daemon_refuses_to_start_a_public_listener_without_a_token(
    sqlite_store: Store,
) -> None:
    cfg = parse_config(
        {
            "database": {"url": "sqlite+aiosqlite:///unused.db"},
            "http": {"enabled": True, "host": "0.0.0.0"},
        },
        "test",
    )
    with pytest.raises(ConfigError, match="a bearer token is required when host is not a loopback"):
        await build_runtime(
            cfg, environ={}, world=SimWorld.harbour_town(), store=sqlite_store, clock=SystemClock()
        )


async def test_model_latency_is_measured_per_model_and_exported_as_a_histogram() -> None:
    clock = FakeClock()
    # Each answer moves the clock on by the model's latency.
    slow = ScriptedModel(then=text("", Usage(1, 0, 1, 0)), sleep=clock.advance)
    metered = metered_model(slow, RuntimeStats(), {}, clock=clock)
    for model, seconds in [("gpt-5", 1.5), ("gpt-5", 0.1), ("gpt-5", 90.0), ("gpt-5-nano", 0.3)]:
        slow.latency = seconds
        await metered.respond(ModelRequest(model=model, input=[]))
    assert metered.latency["gpt-5"].count == 3
    out = Exposition()
    out.histogram("model_request_seconds", "Model request latency.", "model", metered.latency)
    lines = out.text().splitlines()
    assert 'storyteller_model_request_seconds_bucket{le="0.25",model="gpt-5"} 1.0' in lines
    assert 'storyteller_model_request_seconds_bucket{le="2.0",model="gpt-5"} 2.0' in lines
    assert 'storyteller_model_request_seconds_bucket{le="60.0",model="gpt-5"} 2.0' in lines
    assert 'storyteller_model_request_seconds_bucket{le="+Inf",model="gpt-5"} 3.0' in lines
    assert 'storyteller_model_request_seconds_sum{model="gpt-5"} 91.6' in lines
    assert 'storyteller_model_request_seconds_count{model="gpt-5-nano"} 1.0' in lines


def test_a_histogram_with_its_own_bounds_counts_overflow() -> None:
    histogram = LatencyHistogram(bounds=(1.0,))
    for seconds in (0.5, 1.0, 3.0):
        histogram.observe(seconds)
    assert (histogram.counts, histogram.count, histogram.total_seconds) == ([2, 1], 3, 4.5)


class _StoppedDaemon:
    """A daemon that was built but never run."""

    def __init__(self, store: Store) -> None:
        wired = wired_pipeline(store, queue_size=1, model_available=False)
        pipeline, clock = wired.pipeline, wired.clock
        self.daemon = Daemon(
            settings=None, world=SimWorld.harbour_town(), pipeline=pipeline, clock=clock
        )
