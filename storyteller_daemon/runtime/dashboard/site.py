"""`Dashboard`: the web pages and the ``/api/`` routes, installed on an aiohttp application.

Pages are rendered on the server by Jinja2 with autoescaping on for every template, so anything
a player wrote (echoes, speech, names, tool results) reaches the browser as text. The pages'
one script (the live timeline) builds its entries with ``textContent``; the
Content-Security-Policy allows scripts and styles from this listener only, so markup that did
slip through could not run. Assets come from the package itself (no network at run time).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import datetime
from importlib import resources
from typing import Any
from urllib.parse import urlencode

import jinja2
from aiohttp import web

from storyteller_daemon.errors import NotFoundError, StorytellerError, ValidationError
from storyteller_daemon.runtime.dashboard.api import Api, storyteller_id
from storyteller_daemon.runtime.dashboard.feed import RunFeed
from storyteller_daemon.runtime.dashboard.params import (
    bounded_int,
    filter_query,
    optional_int,
    run_filter,
    text,
)
from storyteller_daemon.runtime.dashboard.views import DashboardData
from storyteller_daemon.runtime.health.access import CSRF, Gate, safe_next

STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    # Not "no-referrer": with it, Chromium sends "Origin: null" on form posts, which the CSRF
    # check must refuse. Same-origin still sends nothing to other sites.
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _when(value: str | datetime | None) -> str:
    if value is None:
        return ""
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("storyteller_daemon.runtime.dashboard", "templates"),
        autoescape=True,  # every template, whatever its name
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["usd"] = lambda v: f"${float(v or 0):.4f}"
    env.filters["pct"] = lambda v: "–" if v is None else f"{float(v) * 100:.0f}%"
    env.filters["when"] = _when
    env.filters["pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, default=str)
    env.filters["arguments"] = _arguments
    return env


def _arguments(raw: str) -> str:
    """A tool call's argument text, indented when it is JSON."""
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (ValueError, TypeError):
        return raw


def _static_files() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("storyteller_daemon.runtime.dashboard") / "static"
    files = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if suffix in STATIC_TYPES:
            files[entry.name] = (entry.read_bytes(), STATIC_TYPES[suffix])
    return files


class Dashboard:
    """The pages and API over one `DashboardData` (a `health.WebApp`).

    Args:
        data: what the pages show.
        feed: wakes the live timeline.
    """

    def __init__(self, data: DashboardData, feed: RunFeed) -> None:
        self.data = data
        self.feed = feed
        self.api = Api(data, feed)
        self._env = _environment()
        self._static = _static_files()
        self._gate: Gate | None = None

    def install(self, app: web.Application, gate: Gate) -> None:
        """Add the pages, the API, the login routes and the assets to `app`."""
        self._gate = gate
        gate.login_page = self._login_page
        app.middlewares.append(self._errors)
        app.on_response_prepare.append(_security_headers)
        app.on_shutdown.append(self._closing)
        app.add_routes(
            [
                web.get("/", self.overview),
                web.get("/timeline", self.timeline),
                web.get("/runs", self.runs),
                web.get("/runs/{id}", self.run),
                web.get("/costs", self.costs),
                web.get("/policy", self.policy),
                web.get("/situations", self.situations),
                web.get("/memories", self.memories),
                web.get("/evals", self.evals),
                web.get("/login", self.login_form),
                web.post("/login", self.login),
                web.post("/logout", self.logout),
                web.post("/storytellers/{id}/pause", self.pause),
                web.post("/storytellers/{id}/resume", self.resume),
                web.post("/kill-switch", self.kill_switch),
                web.get("/static/{name}", self.static),
                *self.api.routes(),
            ]
        )

    async def _closing(self, app: web.Application) -> None:
        self.feed.close()

    # ------------------------------------------------------------------ rendering

    def render(
        self, request: web.Request, template: str, status: int = 200, **context: Any
    ) -> web.Response:
        """A page from `template`, with the navigation's and forms' shared values."""
        page = self._env.get_template(template).render(
            csrf=request.get(CSRF, ""),
            path=request.path,
            logged_in=bool(request.cookies.get("storyteller_session")),
            **context,
        )
        return web.Response(
            text=page,
            status=status,
            content_type="text/html",
            headers={"Cache-Control": "no-store"},
        )

    def _login_page(self, request: web.Request, message: str, status: int) -> web.Response:
        target = safe_next(request.query.get("next", request.path_qs))
        return self.render(request, "login.html", status, message=message, next=target)

    @web.middleware
    async def _errors(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Our errors as one line: JSON for the API, a page otherwise."""
        try:
            return await handler(request)
        except StorytellerError as exc:
            status = (
                404
                if isinstance(exc, NotFoundError)
                else 400
                if isinstance(exc, ValidationError)
                else 500
            )
            if request.path.startswith("/api/"):
                return web.json_response({"error": str(exc)}, status=status)
            return self.render(request, "error.html", status, message=str(exc))

    # ------------------------------------------------------------------ pages

    async def overview(self, request: web.Request) -> web.Response:
        return self.render(request, "overview.html", overview=await self.data.overview())

    async def timeline(self, request: web.Request) -> web.Response:
        where = run_filter(request)
        entries = await self.data.timeline(where)
        entries.reverse()  # newest first on the page; the stream adds at the top
        newest = await self.data.queries.newest_run_id()
        stream = urlencode({**filter_query(where), "after": newest})
        return self.render(
            request,
            "timeline.html",
            entries=entries,
            where=filter_query(where),
            stream=f"/api/timeline/stream?{stream}",
            storytellers=await self.data.storyteller_names(),
        )

    async def runs(self, request: web.Request) -> web.Response:
        where = run_filter(request)
        page = await self.data.run_page(where, optional_int(request, "before"), 50)
        more = None
        if page["next_before"] is not None:
            more = "/runs?" + urlencode({**filter_query(where), "before": page["next_before"]})
        return self.render(
            request,
            "runs.html",
            runs=page["runs"],
            more=more,
            where=filter_query(where),
            storytellers=await self.data.storyteller_names(),
        )

    async def run(self, request: web.Request) -> web.Response:
        raw = request.match_info["id"]
        if not raw.isdigit():
            raise ValidationError(f"'{raw}' is not a run id.")
        return self.render(request, "run.html", detail=await self.data.run(int(raw)))

    async def costs(self, request: web.Request) -> web.Response:
        hours = bounded_int(request, "hours", 24, 1, 24 * 14)
        return self.render(request, "costs.html", costs=await self.data.costs(hours))

    async def policy(self, request: web.Request) -> web.Response:
        hours = bounded_int(request, "hours", 24, 1, 24 * 14)
        return self.render(request, "policy.html", report=await self.data.policy(hours))

    async def situations(self, request: web.Request) -> web.Response:
        who = optional_int(request, "storyteller")
        words = text(request, "q")
        include_resolved = text(request, "resolved") != "no"
        found = await self.data.situations(who, words, include_resolved)
        return self.render(
            request,
            "situations.html",
            situations=found["situations"],
            q=words,
            storyteller=who,
            resolved=include_resolved,
            storytellers=await self.data.storyteller_names(),
        )

    async def memories(self, request: web.Request) -> web.Response:
        who = optional_int(request, "storyteller")
        character = optional_int(request, "character")
        words = text(request, "q")
        found = await self.data.memories(who, character, words)
        return self.render(
            request,
            "memories.html",
            memories=found["memories"],
            q=words,
            storyteller=who,
            character=character,
            storytellers=await self.data.storyteller_names(),
        )

    async def evals(self, request: web.Request) -> web.Response:
        return self.render(request, "evals.html", evals=await self.data.evals())

    # ------------------------------------------------------------------ login

    async def login_form(self, request: web.Request) -> web.StreamResponse:
        assert self._gate is not None
        if request.get(CSRF) is not None:  # the gate let it through: already allowed in
            raise web.HTTPSeeOther(safe_next(request.query.get("next", "/")))
        return self._login_page(request, "", 401)

    async def login(self, request: web.Request) -> web.StreamResponse:
        assert self._gate is not None
        form = await request.post()
        target = safe_next(str(form.get("next", "/")))
        if not self._gate.token_matches(str(form.get("token", ""))):
            self._gate.failed(request)
            return self.render(
                request, "login.html", 401, message="That token is not the right one.", next=target
            )
        response = _see_other(target)
        self._gate.open_session(response, secure=request.secure)
        return response

    async def logout(self, request: web.Request) -> web.StreamResponse:
        assert self._gate is not None
        response = _see_other("/login")
        self._gate.close_session(request, response)
        return response

    # ------------------------------------------------------------------ controls

    async def pause(self, request: web.Request) -> web.StreamResponse:
        await self.data.set_paused(storyteller_id(request), True)
        raise web.HTTPSeeOther("/")

    async def resume(self, request: web.Request) -> web.StreamResponse:
        await self.data.set_paused(storyteller_id(request), False)
        raise web.HTTPSeeOther("/")

    async def kill_switch(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        await self.data.set_kill_switch(form.get("on") == "yes")
        raise web.HTTPSeeOther("/")

    async def static(self, request: web.Request) -> web.Response:
        found = self._static.get(request.match_info["name"])
        if found is None:
            raise web.HTTPNotFound()
        body, content_type = found
        return web.Response(
            body=body, content_type=content_type, headers={"Cache-Control": "max-age=3600"}
        )


def _see_other(target: str) -> web.Response:
    return web.Response(status=303, headers={"Location": target})


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
