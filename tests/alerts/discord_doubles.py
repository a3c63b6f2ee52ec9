"""A fake Discord webhook endpoint on 127.0.0.1 and a clock that reports what the sink waits for."""

from __future__ import annotations

import asyncio
import collections
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from storyteller_daemon.testing.clock import FakeClock

FLUSH_TICK = 30.0
WEBHOOK_PATH = "/api/webhooks/123456789012345678/" + "T0ken_-" * 10


@dataclass
class Answer:
    """One scripted answer of the fake webhook."""

    status: int = 204
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


class FakeDiscord:
    """Records every webhook post; answers from a script, then with 204 (like ``wait=false``).

    With `hang` set, requests are held until the server stops.
    """

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        self.script: collections.deque[Answer] = collections.deque()
        self.hang = False
        self._received = asyncio.Condition()
        self._stopping = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/api/webhooks/{id}/{token}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{WEBHOOK_PATH}"

    def answer(self, *answers: Answer) -> None:
        self.script.extend(answers)

    async def wait_for_posts(self, count: int) -> None:
        async with self._received:
            await asyncio.wait_for(self._received.wait_for(lambda: len(self.posts) >= count), 5)

    def titles(self) -> list[str]:
        return [post["embeds"][0]["title"] for post in self.posts]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.posts.append(await request.json())
        async with self._received:
            self._received.notify_all()
        if self.hang:
            await self._stopping.wait()
        answer = self.script.popleft() if self.script else Answer()
        if answer.body is None:
            return web.Response(status=answer.status, headers=answer.headers)
        return web.Response(
            status=answer.status,
            text=json.dumps(answer.body),
            content_type="application/json",
            headers=answer.headers,
        )


class WatchedClock(FakeClock):
    """A fake clock that records each requested sleep, so a test can wait for a retry's nap."""

    def __init__(self) -> None:
        super().__init__()
        self.naps: list[float] = []
        self._napped = asyncio.Condition()

    async def sleep(self, seconds: float) -> None:
        async with self._napped:
            self.naps.append(seconds)
            self._napped.notify_all()
        await super().sleep(seconds)

    async def retry_naps(self, count: int) -> list[float]:
        """The first `count` sleeps other than the sink's 30 s flush tick (waiting for them)."""

        def retries() -> list[float]:
            return [n for n in self.naps if n != FLUSH_TICK]

        async with self._napped:
            await asyncio.wait_for(self._napped.wait_for(lambda: len(retries()) >= count), 5)
        return retries()[:count]
