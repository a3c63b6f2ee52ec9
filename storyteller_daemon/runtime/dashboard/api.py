"""The dashboard's JSON API under ``/api/``: what the pages show, for scripts too, plus the
live timeline stream and the controls.

Reads are GETs; the controls (pause, resume, kill switch) are POSTs, which `access.Gate` lets
through only with the bearer header or with the page's CSRF token.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from storyteller_daemon.errors import ValidationError
from storyteller_daemon.runtime.dashboard.feed import RunFeed
from storyteller_daemon.runtime.dashboard.params import (
    bounded_int,
    optional_int,
    run_filter,
    text,
)
from storyteller_daemon.runtime.dashboard.views import DashboardData

STREAM_BATCH = 50
"""Runs one look at the database sends at most; a longer backlog follows at once."""


def _json(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda v: json.dumps(v, ensure_ascii=False, default=str))


def storyteller_id(request: web.Request) -> int:
    """The ``{id}`` of the path.

    Raises:
        ValidationError: it is not a number.
    """
    raw = request.match_info["id"]
    if not raw.isdigit():
        raise ValidationError(f"'{raw}' is not a storyteller id.")
    return int(raw)


class Api:
    """The JSON routes over one `DashboardData`."""

    def __init__(self, data: DashboardData, feed: RunFeed) -> None:
        self.data = data
        self.feed = feed

    def routes(self) -> list[web.RouteDef]:
        """Every ``/api/`` route."""
        return [
            web.get("/api/overview", self.overview),
            web.get("/api/storytellers", self.storytellers),
            web.get("/api/runs", self.runs),
            web.get("/api/runs/{id}", self.run),
            web.get("/api/timeline", self.timeline),
            web.get("/api/timeline/stream", self.stream),
            web.get("/api/costs", self.costs),
            web.get("/api/policy", self.policy),
            web.get("/api/situations", self.situations),
            web.get("/api/memories", self.memories),
            web.get("/api/evals", self.evals),
            web.post("/api/storytellers/{id}/pause", self.pause),
            web.post("/api/storytellers/{id}/resume", self.resume),
            web.post("/api/kill-switch", self.kill_switch),
        ]

    async def overview(self, request: web.Request) -> web.Response:
        return _json(await self.data.overview())

    async def evals(self, request: web.Request) -> web.Response:
        return _json(await self.data.evals())

    async def storytellers(self, request: web.Request) -> web.Response:
        return _json({"storytellers": await self.data.storyteller_names()})

    async def runs(self, request: web.Request) -> web.Response:
        where = run_filter(request)
        limit = bounded_int(request, "limit", 50, 1, 200)
        return _json(await self.data.run_page(where, optional_int(request, "before"), limit))

    async def run(self, request: web.Request) -> web.Response:
        raw = request.match_info["id"]
        if not raw.isdigit():
            raise ValidationError(f"'{raw}' is not a run id.")
        return _json(await self.data.run(int(raw)))

    async def timeline(self, request: web.Request) -> web.Response:
        where = run_filter(request)
        limit = bounded_int(request, "limit", 50, 1, 200)
        after = optional_int(request, "after")
        return _json({"entries": await self.data.timeline(where, after=after, limit=limit)})

    async def stream(self, request: web.Request) -> web.StreamResponse:
        """Server-sent events: one ``run`` event per timeline entry stored after ``after``
        (or after the newest run when absent), as they are stored, until the client leaves."""
        where = run_filter(request)
        after = optional_int(request, "after")
        resumed = request.headers.get("Last-Event-ID", "")
        if resumed.isdigit():
            after = int(resumed)
        if after is None:
            after = await self.data.queries.newest_run_id()
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        await response.prepare(request)
        await response.write(b": stream open\n\n")
        seen = self.feed.version
        try:
            while True:
                entries = await self.data.timeline(where, after=after, limit=STREAM_BATCH)
                for entry in entries:
                    body = json.dumps(entry, ensure_ascii=False, default=str)
                    await response.write(
                        f"id: {entry['id']}\nevent: run\ndata: {body}\n\n".encode()
                    )
                    after = entry["id"]
                if len(entries) == STREAM_BATCH:
                    continue
                if not await self.feed.wait(seen):
                    break
                if self.feed.version == seen:
                    await response.write(b": still here\n\n")  # finds clients that left
                seen = self.feed.version
        except (ConnectionResetError, ConnectionError):
            pass  # the client left; nothing to clean up
        return response

    async def costs(self, request: web.Request) -> web.Response:
        return _json(await self.data.costs(bounded_int(request, "hours", 24, 1, 24 * 14)))

    async def policy(self, request: web.Request) -> web.Response:
        return _json(await self.data.policy(bounded_int(request, "hours", 24, 1, 24 * 14)))

    async def situations(self, request: web.Request) -> web.Response:
        resolved = text(request, "resolved") != "no"
        found = await self.data.situations(
            optional_int(request, "storyteller"), text(request, "q"), resolved
        )
        return _json(found)

    async def memories(self, request: web.Request) -> web.Response:
        found = await self.data.memories(
            optional_int(request, "storyteller"),
            optional_int(request, "character"),
            text(request, "q"),
        )
        return _json(found)

    async def pause(self, request: web.Request) -> web.Response:
        return _json(await self.data.set_paused(storyteller_id(request), True))

    async def resume(self, request: web.Request) -> web.Response:
        return _json(await self.data.set_paused(storyteller_id(request), False))

    async def kill_switch(self, request: web.Request) -> web.Response:
        body = await _body(request)
        on = body.get("on")
        if not isinstance(on, bool):
            raise ValidationError('Send {"on": true} or {"on": false}.')
        return _json(await self.data.set_kill_switch(on))


async def _body(request: web.Request) -> dict[str, Any]:
    """A JSON object body.

    Raises:
        ValidationError: the body is not a JSON object.
    """
    try:
        body = await request.json()
    except ValueError:
        raise ValidationError("The body must be a JSON object.") from None
    if not isinstance(body, dict):
        raise ValidationError("The body must be a JSON object.")
    return body
