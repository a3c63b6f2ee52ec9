"""`McpHub`: the configured MCP servers, as the storytellers' turns call them.

The hub implements the agent's `McpToolbox` port over the official SDK's client. Each server of
``[mcp.servers]`` gets a `_Link`: its session is opened on first use, by a task the hub owns
(the SDK's sessions must be closed by the task that opened them), and stays open until it
breaks or the hub closes, which ends every session and stops every command it started.

Nothing a server does can hold a turn up for long. Connecting and listing are bounded by the
server's ``connect_timeout_seconds``, each call by its ``timeout_seconds``, both on the injected
clock. A server that cannot be reached, or does not answer in time, is marked down for
``[mcp] retry_seconds``: meanwhile its tools answer at once with a tool error, and then it is
tried again. Going down raises one alert (kind ``mcp_server``), and coming back up allows the
next one. Every failure reaches the turn as a `ToolError` the model may read; SDK exceptions
never leave this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from storyteller_daemon.alerts.sink import AlertSink
from storyteller_daemon.clock import Clock, DeadlinePassed, within
from storyteller_daemon.config import McpConfig, McpServerConfig
from storyteller_daemon.domain.mcp import McpOutcome, McpToolInfo
from storyteller_daemon.errors import ToolError

if TYPE_CHECKING:  # the SDK is imported when a server is first opened, not with the daemon
    import mcp_types
    from mcp import Client

log = logging.getLogger(__name__)

MAX_LIST_PAGES = 20
"""Pages of a tool listing read at most, so a server that never stops paging cannot hang."""


def describe_failure(exc: BaseException) -> str:
    """One line for what went wrong: the innermost first error of nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@dataclass
class _Link:
    """One configured server: its open session, if any, and whether it is down."""

    name: str
    cfg: McpServerConfig
    client: Client | None = None
    tools: list[McpToolInfo] | None = None
    owner: asyncio.Task[None] | None = None
    close: asyncio.Event = field(default_factory=asyncio.Event)
    """Asks the current session's owner task to close it."""
    down_until: float = float("-inf")
    problem: str = ""
    alerted: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class McpHub:
    """The MCP servers storytellers may be granted (implements `McpToolbox`).

    Use it as an async context manager: sessions are opened inside it, on first use, and all of
    them are closed when it exits.

    Args:
        cfg: the ``[mcp]`` section.
        clock: bounds every wait (a fake one in tests).
        alerts: told once when a server goes down (None: logged only).
        environ: where ``token_env`` and ``pass_env`` variables are read.
    """

    def __init__(
        self,
        cfg: McpConfig,
        *,
        clock: Clock,
        alerts: AlertSink | None = None,
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self._cfg = cfg
        self._clock = clock
        self._alerts = alerts
        self._environ = environ
        self._links = {name: _Link(name, server) for name, server in cfg.servers.items()}
        self._group: asyncio.TaskGroup | None = None

    async def __aenter__(self) -> McpHub:
        group = asyncio.TaskGroup()
        await group.__aenter__()
        self._group = group
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        group, self._group = self._group, None
        for link in self._links.values():
            link.close.set()
        if group is not None:
            await group.__aexit__(exc_type, exc, tb)

    # ------------------------------------------------------------------ McpToolbox

    async def list_tools(self, server: str) -> list[McpToolInfo]:
        """The tools `server` offers (listed once per session)."""
        link = self._link(server)
        client = await self._session(link)
        if link.tools is None:
            try:
                link.tools = await within(
                    self._clock.sleep, link.cfg.connect_timeout_seconds, _list_tools(client)
                )
            except DeadlinePassed:
                self._down(link, f"listed no tools within {link.cfg.connect_timeout_seconds:g} s")
                raise ToolError(self._unavailable(link)) from None
            except Exception as exc:
                self._down(link, f"could not list its tools ({describe_failure(exc)})")
                raise ToolError(self._unavailable(link)) from None
        return list(link.tools)

    async def call_tool(self, server: str, tool: str, arguments: dict[str, Any]) -> McpOutcome:
        """Call one tool of `server`; a slow or broken server is a `ToolError`."""
        link = self._link(server)
        client = await self._session(link)
        seconds = link.cfg.timeout_seconds
        from mcp import MCPError

        try:
            result = await within(self._clock.sleep, seconds, client.call_tool(tool, arguments))
        except DeadlinePassed:
            self._down(link, f"did not answer a call of {tool} within {seconds:g} s")
            raise ToolError(
                f"MCP server '{server}' did not answer within {seconds:g} s; whether the call "
                "had any effect is unknown."
            ) from None
        except MCPError as exc:  # the server answered: it refused the request itself
            raise ToolError(f"MCP server '{server}' refused the call: {exc}") from None
        except Exception as exc:
            self._down(link, f"failed during a call of {tool} ({describe_failure(exc)})")
            raise ToolError(self._unavailable(link)) from None
        return _outcome(result, self._cfg.max_result_chars)

    # ------------------------------------------------------------------ sessions

    def _link(self, server: str) -> _Link:
        link = self._links.get(server)
        if link is None:
            raise ToolError(f"No MCP server named '{server}' is configured.")
        return link

    def _unavailable(self, link: _Link) -> str:
        return f"MCP server '{link.name}' is unavailable: {link.problem}"

    async def _session(self, link: _Link) -> Client:
        """The link's open session, opened now if needed (within the connect timeout)."""
        async with link.lock:
            if self._clock.monotonic() < link.down_until:
                raise ToolError(self._unavailable(link))
            if link.client is not None:
                return link.client
            if self._group is None:
                raise ToolError(f"MCP server '{link.name}' is unavailable: the daemon is stopping")
            opened = asyncio.Event()
            link.close = asyncio.Event()
            link.problem = ""
            link.owner = self._group.create_task(
                self._own(link, opened, link.close), name=f"mcp-{link.name}"
            )
            seconds = link.cfg.connect_timeout_seconds
            try:
                await within(self._clock.sleep, seconds, opened.wait())
            except DeadlinePassed:
                link.owner.cancel()
                self._down(link, f"did not start or answer within {seconds:g} s")
                raise ToolError(self._unavailable(link)) from None
            client = _opened(link)  # set by the owner task while this one waited
            if client is None:
                self._down(link, link.problem or "closed at once")
                raise ToolError(self._unavailable(link))
            if link.alerted:
                log.info("MCP server %s is reachable again", link.name)
            link.alerted = False
            return client

    async def _own(self, link: _Link, opened: asyncio.Event, close: asyncio.Event) -> None:
        """Open the link's session, keep it until asked to close or it breaks, then close it.

        `opened` is set once the attempt is over either way; `close` asks for the end. Both
        belong to this attempt, so an old session ending late cannot disturb a newer one.
        """
        session: Client | None = None
        try:
            async with self._open(link.cfg) as client:
                session = link.client = client
                opened.set()
                await close.wait()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the session could not open, or broke while open
            link.problem = link.problem or describe_failure(exc)
            log.info("MCP server %s: session ended (%s)", link.name, link.problem)
        finally:
            if session is not None and link.client is session:
                link.client, link.tools = None, None
            opened.set()

    @contextlib.asynccontextmanager
    async def _open(self, cfg: McpServerConfig) -> AsyncIterator[Client]:
        """An open SDK client for one server (stdio command or streamable-HTTP URL)."""
        from mcp import Client, StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        if cfg.url:
            headers: dict[str, str] = {}
            if cfg.token_env:
                token = self._environ.get(cfg.token_env, "")
                if not token:
                    raise ToolError(f"environment variable {cfg.token_env} is not set")
                headers["Authorization"] = f"Bearer {token}"
            async with create_mcp_http_client(headers=headers) as http:
                transport = streamable_http_client(cfg.url, http_client=http)
                async with Client(transport, cache=None) as client:
                    yield client
            return
        params = StdioServerParameters(
            command=cfg.command,
            args=list(cfg.args),
            cwd=cfg.cwd or None,
            env={k: self._environ[k] for k in cfg.pass_env if k in self._environ},
        )
        async with Client(stdio_client(params), cache=None) as client:
            yield client

    def _down(self, link: _Link, problem: str) -> None:
        """Mark the link down for ``retry_seconds``, close its session, alert once."""
        link.problem = problem
        link.down_until = self._clock.monotonic() + self._cfg.retry_seconds
        link.client, link.tools = None, None  # its owner task is closing it
        link.close.set()
        if link.alerted:
            return
        link.alerted = True
        log.warning("MCP server %s is unavailable: %s", link.name, problem)
        if self._alerts is not None:
            self._alerts.alert(
                "mcp_server",
                f"MCP server {link.name} is unavailable",
                f"It {problem}. Storytellers' calls to its tools get a tool error until it "
                f"answers again; it is tried again after {self._cfg.retry_seconds:g} s. "
                "Check [mcp.servers] in the configuration and the server itself.",
                severity="warning",
                key=f"mcp_server:{link.name}",
            )


def _opened(link: _Link) -> Client | None:
    return link.client


async def _list_tools(client: Client) -> list[McpToolInfo]:
    tools: list[McpToolInfo] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += [
            McpToolInfo(t.name, t.description or "", dict(t.input_schema)) for t in page.tools
        ]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _outcome(result: mcp_types.CallToolResult, max_chars: int) -> McpOutcome:
    """The parts of a tool result the model is shown: its text, cut to `max_chars`."""
    import mcp_types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content not shown]")
    text = "\n".join(parts)
    if len(text) > max_chars:
        text = text[:max_chars] + f" [cut: {len(text) - max_chars} more characters]"
    structured = result.structured_content
    if structured is not None and not isinstance(structured, dict):
        structured = {"value": structured}
    return McpOutcome(text, structured, result.is_error)
