"""MCP both ways, through the official SDK (``mcp`` on PyPI), which only this package imports.

* `client`: `McpHub`, the MCP servers of ``[mcp.servers]`` as the storytellers' turns call them
  (the agent's `McpToolbox` port), each session owned by the hub and bounded by timeouts.
* `server`: the daemon's own MCP server (``storyteller mcp serve``), which admins' AI clients
  read storytellers, events, runs, situations, memories and costs through; `documents` builds
  what it answers from the store, `http` serves it over streamable HTTP behind a bearer token.
"""

from storyteller_daemon.mcp.client import McpHub

__all__ = ["McpHub"]
