"""Storytellers call tools of real MCP servers (written with the SDK) through the dispatcher.

A granted, allow-listed tool is offered under its prefixed name and called like a built-in; a
tool the allow-list leaves out is refused; a server's own failure is a tool error; a recorded
turn replays from its tape without any server. A dead server and a hanging one give the model a
tool error, raise one alert, and never hold the turn up (the timeout runs on the fake clock).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp_doubles import DEAD_COMMAND, TOKEN, SlowServer, weather_command

from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.ports import McpToolbox
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig, McpConfig, McpServerConfig, PolicyConfig
from storyteller_daemon.domain.mcp import McpGrant
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ToolError
from storyteller_daemon.mcp import McpHub
from storyteller_daemon.mcp.http import LoopbackHttp
from storyteller_daemon.runs import replay_turn
from storyteller_daemon.runtime.turns import AgentTurnRunner, replay_runner
from storyteller_daemon.storage.approvals import ApprovalRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.turns import store_services, turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
HEARTBEAT = Trigger(TriggerKind.DIRECT, T0, text="Check the weather.")


async def granted(store: Store, *grants: McpGrant) -> Storyteller:
    st = await store.storytellers.create("Harbour Watch")
    return await store.storytellers.save(replace(st, mcp_grants=grants))


def runner(
    store: Store, model: Model, hub: McpHub | None, clock: FakeClock, policy: Policy | None = None
) -> AgentTurnRunner:
    world = SimWorld.harbour_town()
    services = store_services(store, world, mcp=hub)
    return turn_runner(store, world, model, services=services, clock=clock, policy=policy)


def envelopes(record: TurnRecord) -> dict[str, dict[str, Any]]:
    return {c.name: c.envelope for c in record.calls}


def offered(model: ScriptedModel) -> list[str]:
    return [t.name for t in model.requests[0].tools if t.name.startswith("mcp__")]


async def test_a_turn_calls_an_allowed_tool_of_a_stdio_server_and_replays_from_the_tape(
    sqlite_store: Store, tmp_path: Path
) -> None:
    command, *args = weather_command(tmp_path)
    cfg = McpConfig(servers={"weather": McpServerConfig(command=command, args=tuple(args))})
    st = await granted(sqlite_store, McpGrant("weather", ("forecast", "broken")))
    model = ScriptedModel(
        calls(
            ("mcp__weather__forecast", {"city": "Oslo", "days": None}),
            ("mcp__weather__evacuate", {"city": "Oslo"}),
            ("mcp__weather__broken", {"city": "Bergen"}),
        ),
        text(""),
    )
    clock = FakeClock(T0)
    async with McpHub(cfg, clock=clock) as hub:
        record = await runner(sqlite_store, model, hub, clock).run_turn(st, HEARTBEAT)

    assert offered(model) == ["mcp__weather__forecast", "mcp__weather__broken"]
    forecast = model.requests[0].tools[-2]
    assert forecast.description.startswith("[MCP server weather] The weather forecast")
    assert forecast.parameters["required"] == ["city", "days"]  # strict: days became nullable
    assert record.outcome == "completed"
    results = envelopes(record)
    assert results["mcp__weather__forecast"] == {
        "ok": True,
        "result": {
            "Text": "Sunny in Oslo for 1 day(s).",
            "Structured": {"result": "Sunny in Oslo for 1 day(s)."},
        },
    }
    assert results["mcp__weather__evacuate"]["ok"] is False  # not on the allow-list
    assert "Unknown function" in results["mcp__weather__evacuate"]["error"]
    assert results["mcp__weather__broken"]["ok"] is False
    assert "no station near Bergen" in results["mcp__weather__broken"]["error"]

    # The hub is closed: the replay answers the listing and the calls from the tape alone.
    [summary] = await RunRepository(sqlite_store.db).list(kind="turn")
    stored = await RunRepository(sqlite_store.db).get(summary.id)
    taped = [e["method"] for e in stored.record["tape"] if e["service"] == "mcp"]
    assert taped == ["list_tools", "call_tool", "call_tool"]
    report = await replay_turn(
        summary.id, stored.record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    assert report.identical, report.differences
    assert report.replayed["calls"] == report.recorded["calls"]


async def test_what_a_turn_writes_after_reading_a_servers_answer_is_marked(
    sqlite_store: Store, tmp_path: Path
) -> None:
    command, *args = weather_command(tmp_path)
    cfg = McpConfig(servers={"weather": McpServerConfig(command=command, args=tuple(args))})
    st = await granted(sqlite_store, McpGrant("weather", ("forecast",)))
    note = {"Id": 1001, "Title": "Weather", "Details": "Sunny, says the server.", "Importance": 3}
    model = ScriptedModel(
        calls(("CreateMemory", {**note, "Title": "Before"})),
        calls(("mcp__weather__forecast", {"city": "Oslo", "days": None})),
        calls(("CreateMemory", note)),
        text(""),
    )
    clock = FakeClock(T0)
    async with McpHub(cfg, clock=clock) as hub:
        await runner(sqlite_store, model, hub, clock).run_turn(st, HEARTBEAT)
    assert st.id is not None
    marks = {m.title: m.provenance.from_player for m in await sqlite_store.memories.list(st.id)}
    assert marks == {"Before": False, "Weather": True}


async def test_a_servers_answer_is_kept_in_notes_only_as_a_quotation(
    sqlite_store: Store, tmp_path: Path
) -> None:
    command, *args = weather_command(tmp_path)
    cfg = McpConfig(servers={"weather": McpServerConfig(command=command, args=tuple(args))})
    st = await granted(sqlite_store, McpGrant("weather", ("forecast",)))
    note = {"Id": 1001, "Title": "Weather", "Importance": 3}
    model = ScriptedModel(
        calls(("mcp__weather__forecast", {"city": "Oslo", "days": None})),
        calls(
            ("CreateMemory", {**note, "Details": "Sunny in Oslo for 1 day(s)."}),
            ("CreateMemory", {**note, "Details": 'The server says "Sunny in Oslo for 1 day(s)."'}),
        ),
        text(""),
    )
    clock = FakeClock(T0)
    policy = Policy(PolicyConfig(), clock)
    async with McpHub(cfg, clock=clock) as hub:
        record = await runner(sqlite_store, model, hub, clock, policy).run_turn(st, HEARTBEAT)
    outcomes = [(c.envelope["ok"], c.rule) for c in record.calls if c.name == "CreateMemory"]
    assert outcomes == [(False, "dictated"), (True, None)]


async def test_a_dead_server_is_a_tool_error_and_one_alert(sqlite_store: Store) -> None:
    command, *args = DEAD_COMMAND
    cfg = McpConfig(servers={"weather": McpServerConfig(command=command, args=tuple(args))})
    st = await granted(sqlite_store, McpGrant("weather", ("forecast",)))
    clock, alerts = FakeClock(T0), RecordedAlerts()
    async with McpHub(cfg, clock=clock, alerts=alerts) as hub:
        for wait in (0.0, 1.0, 60.0):  # the third turn comes after retry_seconds: tried again
            await clock.advance(wait)
            model = ScriptedModel(calls(("mcp__weather__forecast", {"city": "Oslo"})), text(""))
            record = await runner(sqlite_store, model, hub, clock).run_turn(st, HEARTBEAT)
            assert offered(model) == []
            [call] = record.calls
            assert call.envelope["ok"] is False
            assert "MCP server 'weather' is unavailable" in call.envelope["error"]
            assert "closed" in call.envelope["error"].lower()  # what went wrong, in one line
            assert record.outcome == "completed"
    assert [(a.kind, a.title, a.key) for a in alerts.alerts] == [
        ("mcp_server", "MCP server weather is unavailable", "mcp_server:weather")
    ]


async def test_a_hanging_server_times_out_on_the_clock_and_is_not_asked_again(
    sqlite_store: Store,
) -> None:
    slow = SlowServer()
    st = await granted(sqlite_store, McpGrant("tides", ("hang", "tide")))
    model = ScriptedModel(
        calls(("mcp__tides__hang", {"harbour": "Quay"})),
        calls(("mcp__tides__tide", {"harbour": "Quay"})),
        text(""),
    )
    clock, alerts = FakeClock(T0), RecordedAlerts()
    async with LoopbackHttp(slow.app(), host="127.0.0.1", port=0, token=TOKEN) as http:
        server = McpServerConfig(url=http.url, token_env="TIDES_TOKEN", timeout_seconds=5.0)
        cfg = McpConfig(servers={"tides": server}, retry_seconds=60.0)
        hub = McpHub(cfg, clock=clock, alerts=alerts, environ={"TIDES_TOKEN": TOKEN})
        async with hub:
            turn = asyncio.create_task(
                runner(sqlite_store, model, hub, clock).run_turn(st, HEARTBEAT)
            )
            await asyncio.wait_for(slow.started.wait(), 30)
            await clock.advance(5.0)
            record = await asyncio.wait_for(turn, 30)

    results = envelopes(record)
    assert "did not answer within 5 s" in results["mcp__tides__hang"]["error"]
    # Marked down: the next call is refused at once, without reaching the server.
    assert "MCP server 'tides' is unavailable" in results["mcp__tides__tide"]["error"]
    assert slow.calls == ["hang Quay"]
    assert record.outcome == "completed"
    assert alerts.kinds == ["mcp_server"]


async def test_a_url_server_needs_its_token(sqlite_store: Store) -> None:
    slow = SlowServer()
    clock = FakeClock(T0)
    async with LoopbackHttp(slow.app(), host="127.0.0.1", port=0, token=TOKEN) as http:
        server = McpServerConfig(url=http.url, token_env="TIDES_TOKEN")
        cfg = McpConfig(servers={"tides": server})
        async with McpHub(cfg, clock=clock, environ={"TIDES_TOKEN": "wrong-token"}) as hub:
            with pytest.raises(ToolError, match="unavailable"):
                await hub.list_tools("tides")
        async with McpHub(cfg, clock=clock, environ={}) as hub:
            with pytest.raises(ToolError, match="TIDES_TOKEN is not set"):
                await hub.list_tools("tides")
        async with McpHub(cfg, clock=clock, environ={"TIDES_TOKEN": TOKEN}) as hub:
            toolbox: McpToolbox = hub  # the hub fits the agent's port (mypy and at run time)
            assert isinstance(toolbox, McpToolbox)
            assert [t.name for t in await hub.list_tools("tides")] == ["tide", "hang"]
            outcome = await hub.call_tool("tides", "tide", {"harbour": "Quay"})
            assert outcome.text == "High water at Quay: 14:20."
            with pytest.raises(ToolError, match="No MCP server named 'weather'"):
                await hub.call_tool("weather", "forecast", {})


async def test_mcp_calls_pass_the_policy_shadow_mode_keeps_them_from_the_server(
    sqlite_store: Store,
) -> None:
    slow = SlowServer()
    st = await granted(sqlite_store, McpGrant("tides", ("tide",)))
    clock = FakeClock(T0)
    policy = Policy(PolicyConfig(shadow=["Harbour Watch"]), clock)
    model = ScriptedModel(calls(("mcp__tides__tide", {"harbour": "Quay"})), text(""))
    async with LoopbackHttp(slow.app(), host="127.0.0.1", port=0, token=TOKEN) as http:
        cfg = McpConfig(servers={"tides": McpServerConfig(url=http.url, token_env="T")})
        async with McpHub(cfg, clock=clock, environ={"T": TOKEN}) as hub:
            record = await runner(sqlite_store, model, hub, clock, policy).run_turn(st, HEARTBEAT)
    [call] = record.calls
    assert call.shadowed and call.envelope["result"]["simulated"] is True
    assert slow.calls == []
    assert policy.stats.shadowed == 1
    assert json.loads(call.arguments) == {"harbour": "Quay"}


async def test_an_mcp_call_waiting_for_approval_runs_once_approved(sqlite_store: Store) -> None:
    slow = SlowServer()
    st = await granted(sqlite_store, McpGrant("tides", ("tide",)))
    clock = FakeClock(T0)
    approvals = ApprovalRepository(sqlite_store.db)
    policy = Policy(
        PolicyConfig(approve=["Harbour Watch/mcp__tides__tide"]),
        clock,
        approvals=approvals,
    )
    model = ScriptedModel(calls(("mcp__tides__tide", {"harbour": "Quay"})), text(""))
    async with LoopbackHttp(slow.app(), host="127.0.0.1", port=0, token=TOKEN) as http:
        cfg = McpConfig(servers={"tides": McpServerConfig(url=http.url, token_env="T")})
        async with McpHub(cfg, clock=clock, environ={"T": TOKEN}) as hub:
            agent = runner(sqlite_store, model, hub, clock, policy)
            record = await agent.run_turn(st, HEARTBEAT)
            [call] = record.calls
            assert call.parked and slow.calls == []
            [parked] = await approvals.list()
            envelope = await agent.run_approved(st, parked)
    assert envelope == {
        "ok": True,
        "result": {
            "Text": "High water at Quay: 14:20.",
            "Structured": {"result": "High water at Quay: 14:20."},
        },
    }
    assert slow.calls == ["tide Quay"]


def test_the_configuration_and_the_settings_accept_the_same_server_names() -> None:
    from storyteller_daemon.config import mcp as config_mcp
    from storyteller_daemon.domain import mcp as domain_mcp

    assert config_mcp.SERVER_NAME_PATTERN.pattern == domain_mcp.SERVER_NAME_PATTERN.pattern
