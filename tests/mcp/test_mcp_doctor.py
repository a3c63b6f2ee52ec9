"""``storyteller doctor`` starts each configured MCP server and asks it for its tools."""

from __future__ import annotations

from pathlib import Path

from mcp_doubles import DEAD_COMMAND, weather_command

from storyteller_daemon.cli.doctor.checks import Doctor
from storyteller_daemon.config import parse_config


async def test_each_configured_server_is_a_finding(sqlite_url: str, tmp_path: Path) -> None:
    command, *args = weather_command(tmp_path)
    dead, *dead_args = DEAD_COMMAND
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "mcp": {
                "servers": {
                    "weather": {"command": command, "args": args},
                    "gone": {"command": dead, "args": dead_args, "connect_timeout_seconds": 5},
                }
            },
        },
        "doctor",
    )
    findings = {f.check: f for f in await Doctor({}).run(lambda: cfg)}
    weather, gone = findings["mcp weather"], findings["mcp gone"]
    assert weather.ok and weather.detail == "lists 3 tool(s): broken, evacuate, forecast"
    assert not gone.ok
    assert "MCP server 'gone' is unavailable" in gone.detail
    assert "[mcp.servers.gone]" in gone.fix


async def test_without_mcp_servers_there_is_no_mcp_finding(sqlite_url: str) -> None:
    cfg = parse_config({"database": {"url": sqlite_url}}, "doctor")
    assert not [f for f in await Doctor({}).run(lambda: cfg) if f.check.startswith("mcp")]
