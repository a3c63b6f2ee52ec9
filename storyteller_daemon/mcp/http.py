"""Serving an MCP server's streamable-HTTP app on a loopback address, behind a bearer token.

`LoopbackHttp` runs an ASGI app (the SDK's Starlette app) with uvicorn inside the caller's
event loop, on a socket it binds itself, so the port is known (0 picks a free one) before the
first request and the server stops with the context. Every HTTP request must carry
``Authorization: Bearer TOKEN``, compared in constant time like the health listener's; a
missing or wrong token is answered 401 before the SDK sees the request. Only loopback
addresses are accepted, and there is no unauthenticated mode: remote admins reach it through
an SSH tunnel (docs/mcp.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import socket
from types import TracebackType

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from storyteller_daemon.errors import ConfigError
from storyteller_daemon.runtime.health.access import is_loopback

_REFUSED = json.dumps({"error": "a bearer token is required"}).encode()


class BearerToken:
    """ASGI middleware: HTTP requests without the bearer token are answered 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("a bearer token is required")
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
            if not hmac.compare_digest(given, self._expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": _REFUSED})
                return
        await self._app(scope, receive, send)


class LoopbackHttp:
    """Serves `app` on `host`:`port` behind `token` while the context is open.

    Raises (on entry):
        ConfigError: the host is not a loopback address, the token is empty, or the address
            cannot be bound.
    """

    def __init__(self, app: ASGIApp, *, host: str, port: int, token: str) -> None:
        if not is_loopback(host):
            raise ConfigError(
                "config",
                f"the MCP server listens on loopback addresses only, not {host!r}; "
                "reach it from elsewhere through an SSH tunnel",
                key="mcp.serve.host",
            )
        if not token:
            raise ConfigError(
                "config",
                "the MCP server's HTTP transport needs a bearer token: set the variable "
                "[mcp.serve] token_env names",
                key="mcp.serve.token_env",
            )
        self._app = BearerToken(app, token)
        self._host = host
        self._port = port
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The bound port (the chosen one when 0 was asked for)."""
        return self._port

    @property
    def url(self) -> str:
        """The MCP endpoint's URL."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{host}:{self._port}/mcp"

    async def __aenter__(self) -> LoopbackHttp:
        family = socket.AF_INET6 if ":" in self._host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host.strip("[]"), self._port))
            sock.listen(64)
        except OSError as exc:
            sock.close()
            raise ConfigError(
                "config",
                f"cannot listen on {self._host}:{self._port} ({exc.strerror})",
                key="mcp.serve.port",
            ) from None
        self._port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            self._app, log_level="warning", access_log=False, lifespan="on", log_config=None
        )
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._serve(self._server, sock), name="mcp-http")
        return self

    @staticmethod
    async def _serve(server: uvicorn.Server, sock: socket.socket) -> None:
        with sock:
            await server.serve(sockets=[sock])

    async def serve_until(self, stop: asyncio.Event) -> None:
        """Wait until `stop` is set, or the server ends on its own."""
        assert self._task is not None, "enter the context first"
        waiter = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait({waiter, self._task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await waiter

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        server, task = self._server, self._task
        self._server = self._task = None
        if server is None or task is None:
            return
        server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(task), 5.0)
        except TimeoutError:
            server.force_exit = True
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
