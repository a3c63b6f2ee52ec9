"""The listener's gate counts wrong tokens per address and answers 429 for a while."""

from __future__ import annotations

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from storyteller_daemon.runtime.health.access import FAILURE_WINDOW, MAX_FAILURES, Gate
from storyteller_daemon.testing import FakeClock

TOKEN = "the-right-token-1234"


async def test_wrong_tokens_from_one_address_are_throttled_until_the_window_passes() -> None:
    clock = FakeClock()
    gate = Gate(TOKEN, clock)

    async def hello(request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    app = web.Application(middlewares=[gate.middleware])
    app.router.add_get("/api/hello", hello)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        right = {"Authorization": f"Bearer {TOKEN}"}
        wrong = {"Authorization": "Bearer guess"}
        for _ in range(MAX_FAILURES):
            assert (await client.get("/api/hello", headers=wrong)).status == 401
        refused = await client.get("/api/hello", headers=right)
        assert refused.status == 429  # even the right token, from this address, for now
        assert refused.headers["Retry-After"] == str(int(FAILURE_WINDOW))
        # no header at all is not a guess: it is not counted, but is throttled the same
        assert (await client.get("/api/hello")).status == 429

        await clock.advance(FAILURE_WINDOW + 1)
        assert (await client.get("/api/hello", headers=right)).status == 200
        assert (await client.get("/api/hello", headers=wrong)).status == 401
        assert (await client.get("/api/hello", headers=right)).status == 200
