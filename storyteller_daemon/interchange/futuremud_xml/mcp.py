"""The MCP grants in the ``<ToolCalls>`` blob: an element of ours, not FutureMUD's.

``<McpServers>`` holds one ``<McpServer>`` per granted server, each naming the server (as the
configuration's ``[mcp.servers.NAME]`` does) and its allow-list of tools::

    <McpServers>
      <McpServer>
        <Name>weather</Name>                       <!-- a server of the configuration -->
        <Tools><Tool>forecast</Tool></Tools>       <!-- names exactly as the server lists them -->
      </McpServer>
    </McpServers>

Only names travel: how to start or reach a server stays in the operator's configuration, so an
imported document can never make the daemon run a program. `render_grants` writes nothing for
a storyteller without grants, so its blob stays exactly FutureMUD's.
"""

from __future__ import annotations

from collections.abc import Sequence

from lxml import etree

from storyteller_daemon.domain.mcp import McpGrant
from storyteller_daemon.errors import InterchangeError, ValidationError
from storyteller_daemon.interchange.futuremud_xml.elements import (
    leaf_text,
    named_entries,
    reject_stray_text,
    set_text,
    show,
    single_children,
)

MCP_TAG = "McpServers"
_FIELDS = ("Name", "Tools")


def parse_grants(element: etree._Element) -> tuple[McpGrant, ...]:
    """The grants of an ``<McpServers>`` element, in document order."""
    return named_entries(element, "McpServer", _parse_grant, lambda g: g.server)


def _parse_grant(element: etree._Element, position: int) -> McpGrant:
    label = f"ToolCalls <McpServer> #{position}"
    reject_stray_text(element, label)
    fields = single_children(element, _FIELDS, label)
    if "Name" not in fields:
        raise InterchangeError(f"{label} has no <Name>.")
    server = leaf_text(fields["Name"], f"{label} <Name>").strip()
    label = f"ToolCalls <McpServer> {show(server)}"
    tools: list[str] = []
    if "Tools" in fields:
        reject_stray_text(fields["Tools"], f"{label} <Tools>")
        for tool in fields["Tools"]:
            if tool.tag != "Tool":
                raise InterchangeError(
                    f"{label} <Tools> has an unexpected element <{tool.tag}>; expected <Tool>."
                )
            tools.append(leaf_text(tool, f"{label} <Tool>").strip())
    try:
        return McpGrant(server, tuple(tools))
    except ValidationError as exc:
        raise InterchangeError(f"{label} is rejected: {exc}") from None


def render_grants(root: etree._Element, grants: Sequence[McpGrant]) -> None:
    """Append ``<McpServers>`` holding `grants` to `root`, or nothing when there are none."""
    if grants:
        element = etree.SubElement(root, MCP_TAG)
        for grant in grants:
            entry = etree.SubElement(element, "McpServer")
            etree.SubElement(entry, "Name").text = grant.server
            tools = etree.SubElement(entry, "Tools")
            for tool in grant.tools:
                where = f"ToolCalls <McpServer> {grant.server!r} <Tool>"
                set_text(etree.SubElement(tools, "Tool"), tool, where)
