"""Who may use the HTTP listener: the bearer token, login sessions, CSRF tokens.

With a token configured, every route but the static assets needs it: in an ``Authorization:
Bearer`` header (scripts, Prometheus), or once through the login form, which opens a session
kept in memory and named by an HttpOnly, SameSite=Strict cookie. An unauthorised page gets 401
with the login form as its body; an unauthorised API call gets 401 JSON.

Without a token (allowed on a loopback address only, see `check_http_settings`) nothing is
asked, but the dashboard answers only requests whose ``Host`` names this machine, so a web page
elsewhere cannot reach it through a DNS name rebound to 127.0.0.1.

Every POST made with a session (or without a token) must carry the page's CSRF token (form field
``csrf`` or header ``X-CSRF-Token``) and, when the browser sends one, an ``Origin`` of this
listener. A POST with the bearer header needs neither: a browser never attaches that header on
its own, so a forged cross-site request cannot carry it.

Wrong tokens are counted per client address: after `MAX_FAILURES` within `FAILURE_WINDOW`
seconds (a wrong bearer header or a failed login form), that address gets 429 until the window
has passed, so the token cannot be guessed at the speed of the network.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import web

from storyteller_daemon.clock import Clock

COOKIE = "storyteller_session"
SESSION_SECONDS = 12 * 3600.0
MAX_SESSIONS = 64
"""Sessions kept at once; logging in past this ends the oldest."""
PUBLIC_PREFIXES = ("/static/",)
"""Paths anyone may fetch: the stylesheet and scripts hold nothing private."""
HEALTH_PATHS = ("/healthz", "/metrics")
"""Answered to machines as before the dashboard existed: no host check, no login page."""

MAX_FAILURES = 10
FAILURE_WINDOW = 60.0
MAX_TRACKED_CLIENTS = 1024
"""Client addresses whose failures are remembered at once; the oldest are forgotten first."""

CSRF = web.RequestKey("csrf", str)
"""The CSRF token pages of this request must embed ("" for a request made with the header)."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
LoginPage = Callable[[web.Request, str, int], web.Response]
"""Renders the login form: (request, message, status)."""


@dataclass
class _Session:
    csrf: str
    expires: float


class Gate:
    """The listener's access control (an aiohttp middleware plus the login routes).

    Args:
        token: the bearer token; empty for none.
        clock: the clock sessions and throttled addresses expire on.
        login_page: renders the login form; None answers pages with JSON too.
    """

    def __init__(self, token: str, clock: Clock, login_page: LoginPage | None = None) -> None:
        self._token = token
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._failures: dict[str, list[float]] = {}
        self._open_csrf = secrets.token_urlsafe(32)
        """The CSRF token of a listener without a bearer token."""
        self.login_page = login_page

    @property
    def needs_token(self) -> bool:
        """Whether requests must present the token (or a session)."""
        return bool(self._token)

    # ------------------------------------------------------------------ checks

    def _header_ok(self, request: web.Request) -> bool:
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self._token}".encode())

    def _session(self, request: web.Request) -> _Session | None:
        sid = request.cookies.get(COOKIE, "")
        session = self._sessions.get(sid) if sid else None
        if session is None:
            return None
        if session.expires <= self._clock.monotonic():
            del self._sessions[sid]
            return None
        return session

    def token_matches(self, given: str) -> bool:
        """Whether `given` is the bearer token (in constant time)."""
        return bool(self._token) and hmac.compare_digest(given.encode(), self._token.encode())

    def _recent_failures(self, client: str) -> list[float]:
        since = self._clock.monotonic() - FAILURE_WINDOW
        recent = [t for t in self._failures.get(client, ()) if t > since]
        if recent:
            self._failures[client] = recent
        else:
            self._failures.pop(client, None)
        return recent

    def throttled(self, request: web.Request) -> bool:
        """Whether the request's address has given too many wrong tokens lately."""
        return len(self._recent_failures(request.remote or "")) >= MAX_FAILURES

    def failed(self, request: web.Request) -> None:
        """Count a wrong token given from the request's address."""
        client = request.remote or ""
        recent = self._recent_failures(client)
        while client not in self._failures and len(self._failures) >= MAX_TRACKED_CLIENTS:
            del self._failures[next(iter(self._failures))]
        self._failures[client] = [*recent, self._clock.monotonic()]

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Let a request through, or answer it with 401 or 403."""
        path = request.path
        if path.startswith(PUBLIC_PREFIXES):
            return await handler(request)
        health = path in HEALTH_PATHS
        if not self._token:
            if not health and not is_loopback(_host_name(request.host)):
                return _refuse(request, 403, "this listener answers only to a loopback host name")
            request[CSRF] = self._open_csrf
            return await self._checked(request, handler, by_header=False)
        if self.throttled(request):
            return _refuse(request, 429, "too many wrong tokens from this address; wait a minute")
        if self._header_ok(request):
            request[CSRF] = ""
            return await self._checked(request, handler, by_header=True)
        if "Authorization" in request.headers:
            self.failed(request)
        session = self._session(request)
        if session is not None:
            request[CSRF] = session.csrf
            return await self._checked(request, handler, by_header=False)
        if path == "/login":
            return await handler(request)
        if health or path.startswith("/api/") or self.login_page is None:
            return _refuse(request, 401, "a bearer token is required")
        return self.login_page(request, "", 401)

    async def _checked(
        self, request: web.Request, handler: Handler, *, by_header: bool
    ) -> web.StreamResponse:
        if request.method == "POST" and request.path != "/login" and not by_header:
            problem = await self._csrf_problem(request)
            if problem:
                return _refuse(request, 403, problem)
        return await handler(request)

    async def _csrf_problem(self, request: web.Request) -> str | None:
        origin = request.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != request.host:
            return "the request comes from another site"
        given = request.headers.get("X-CSRF-Token", "")
        if not given and request.content_type == "application/x-www-form-urlencoded":
            given = str((await request.post()).get("csrf", ""))
        expected = request.get(CSRF, "")
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            return "the CSRF token is missing or wrong; reload the page"
        return None

    # ------------------------------------------------------------------ sessions

    def open_session(self, response: web.StreamResponse, *, secure: bool) -> None:
        """Start a session and set its cookie on `response`."""
        now = self._clock.monotonic()
        for sid in [k for k, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[sid]
        while len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
        sid = secrets.token_urlsafe(32)
        self._sessions[sid] = _Session(secrets.token_urlsafe(32), now + SESSION_SECONDS)
        response.set_cookie(COOKIE, sid, httponly=True, samesite="Strict", secure=secure, path="/")

    def close_session(self, request: web.Request, response: web.StreamResponse) -> None:
        """End the request's session and clear its cookie."""
        self._sessions.pop(request.cookies.get(COOKIE, ""), None)
        response.del_cookie(COOKIE, path="/")


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine (a hostname other than localhost does not)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _host_name(host: str) -> str:
    """The name part of a ``Host`` header (``[::1]:80`` → ``::1``)."""
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _refuse(request: web.Request, status: int, message: str) -> web.Response:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if status == 429:
        headers["Retry-After"] = str(int(FAILURE_WINDOW))
    return web.json_response({"error": message}, status=status, headers=headers)


def safe_next(target: str) -> str:
    """`target` if it is a path on this site, else ``/`` (no open redirect after login)."""
    if target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"
