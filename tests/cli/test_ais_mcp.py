"""``storyteller ais set REF mcp …``: MCP tools allowed, shown, exported, imported and removed."""

from __future__ import annotations

from typing import Any

import pytest
from test_ais_harness import Cli, cli_fixture

from storyteller_daemon.domain.mcp import McpGrant
from storyteller_daemon.errors import InterchangeError
from storyteller_daemon.interchange.futuremud_xml import parse_tool_calls

cli = cli_fixture("Watcher", "Crier")


def mcp(cli: Cli, *args: str) -> str:
    return cli.ok("ais", "set", "Watcher", "mcp", *args).rstrip("\n")


def granted(cli: Cli, ref: str = "Watcher") -> list[dict[str, Any]]:
    shown: list[dict[str, Any]] = cli.show(ref)["mcp_tools"]
    return shown


def test_allow_show_export_import_and_remove(cli: Cli) -> None:
    assert "MCP tools: none\n" in cli.ok("ais", "show", "Watcher")
    assert mcp(cli, "add", "weather", "forecast", "tides.high-water") == (
        "Storyteller Watcher may call forecast, tides.high-water of MCP server weather (no "
        "[mcp.servers.weather] in the configuration yet: not offered until there is)."
    )
    mcp(cli, "add", "weather", "forecast", "alerts")  # forecast is not listed twice
    mcp(cli, "add", "ledger", "balance")
    assert granted(cli) == [
        {"server": "weather", "tools": ["forecast", "tides.high-water", "alerts"]},
        {"server": "ledger", "tools": ["balance"]},
    ]
    assert "  weather: forecast, tides.high-water, alerts\n" in cli.ok("ais", "show", "Watcher")

    document = cli.ok("ais", "export", "Watcher", "--part", "tools")
    assert parse_tool_calls(document).mcp_grants == (
        McpGrant("weather", ("forecast", "tides.high-water", "alerts")),
        McpGrant("ledger", ("balance",)),
    )
    imported = cli.ok("ais", "import", "Crier", "--part", "tools", "-", input=document)
    assert "2 MCP server grant(s)" in imported
    assert granted(cli, "Crier") == granted(cli)

    assert mcp(cli, "remove", "weather", "alerts") == (
        "Storyteller Watcher may no longer call alerts of MCP server weather."
    )
    assert mcp(cli, "remove", "ledger") == "Storyteller Watcher no longer uses MCP server ledger."
    assert granted(cli) == [{"server": "weather", "tools": ["forecast", "tides.high-water"]}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "Weather", "forecast"), "MCP server name 'Weather' is invalid"),
        (("add", "weather", "x" * 60), "is over 64 characters"),
        (("remove", "weather"), "Storyteller Watcher has no tools of MCP server 'weather'."),
    ],
)
def test_bad_input_is_one_line(cli: Cli, args: tuple[str, ...], message: str) -> None:
    assert message in cli.fails("ais", "set", "Watcher", "mcp", *args)


def test_an_imported_document_names_servers_only() -> None:
    document = (
        "<ToolCalls><McpServers><McpServer><Name>weather</Name><Command>rm</Command>"
        "</McpServer></McpServers></ToolCalls>"
    )
    with pytest.raises(InterchangeError, match="unexpected element <Command>"):
        parse_tool_calls(document)
