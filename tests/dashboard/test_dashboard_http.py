"""The dashboard over HTTP on a running daemon: access control, CSRF, escaping, the API, pause."""

from __future__ import annotations

import asyncio
import json
import re

import aiohttp
import pytest
from dashboard_rig import SCRIPT_ECHO, TOKEN, Rig, start_rig, stop_rig

from storyteller_daemon.storage.runs import RunRepository

BEARER = {"Authorization": f"Bearer {TOKEN}"}
PAGES = [
    "/",
    "/timeline",
    "/runs",
    "/runs/1",
    "/costs",
    "/policy",
    "/situations",
    "/memories",
    "/evals",
]
API_GETS = [
    "/api/overview",
    "/api/storytellers",
    "/api/runs",
    "/api/runs/1",
    "/api/timeline",
    "/api/timeline/stream",
    "/api/costs",
    "/api/policy",
    "/api/situations",
    "/api/memories",
    "/api/evals",
    "/metrics",
    "/healthz",
]
API_POSTS = ["/api/storytellers/1/pause", "/api/storytellers/1/resume", "/api/kill-switch"]


async def login(
    client: aiohttp.ClientSession, rig: Rig, token: str = TOKEN
) -> aiohttp.ClientResponse:
    async with client.post(
        f"{rig.base}/login", data={"token": token, "next": "/costs"}, allow_redirects=False
    ) as response:
        await response.read()
        return response


async def csrf_of(client: aiohttp.ClientSession, rig: Rig) -> str:
    async with client.get(f"{rig.base}/") as response:
        page = await response.text()
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page
    return found.group(1)


async def test_every_page_and_api_route_is_401_without_the_token(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    await rig.one_turn()  # so /runs/1 exists: the 401 is not a 404 in disguise
    for path in PAGES:
        async with client.get(rig.base + path, allow_redirects=False) as response:
            assert response.status == 401, path
            page = await response.text()
            assert 'name="token"' in page, path  # the login form, as the 401's body
            assert "Cutpurse" not in page and "Maren" not in page, path
    for path in API_GETS:
        async with client.get(rig.base + path) as response:
            assert response.status == 401, path
            assert response.headers["WWW-Authenticate"] == "Bearer"
    wrong = {"Authorization": "Bearer not-the-token"}
    for path in API_POSTS:
        async with client.post(rig.base + path, headers=wrong, json={"on": True}) as response:
            assert response.status == 401, path
    assert (await rig.store.storytellers.get(rig.watch_id)).paused is False
    for path in ["/", "/api/overview"]:
        async with client.get(rig.base + path, headers=BEARER) as response:
            assert response.status == 200, path


async def test_the_login_form_sets_a_strict_http_only_cookie_once(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    refused = await login(client, rig, "wrong")
    assert refused.status == 401
    assert not client.cookie_jar.filter_cookies(rig.base)
    accepted = await login(client, rig)
    assert accepted.status == 303
    assert accepted.headers["Location"] == "/costs"
    cookie = accepted.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
    assert TOKEN not in cookie
    for path in PAGES[:3]:  # the cookie alone lets the browser in from now on
        async with client.get(rig.base + path, allow_redirects=False) as response:
            assert response.status == 200, path
            assert response.headers["Content-Security-Policy"].startswith("default-src 'none'")
    async with client.post(
        f"{rig.base}/logout", data={"csrf": await csrf_of(client, rig)}, allow_redirects=False
    ) as response:
        assert response.status == 303
    async with client.get(rig.base + "/", allow_redirects=False) as response:
        assert response.status == 401


async def test_an_open_redirect_after_login_is_refused(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    async with client.post(
        f"{rig.base}/login",
        data={"token": TOKEN, "next": "//evil.example/"},
        allow_redirects=False,
    ) as response:
        assert response.headers["Location"] == "/"


async def test_a_post_with_the_cookie_needs_the_csrf_token_and_our_origin(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    await login(client, rig)
    pause = f"{rig.base}/storytellers/{rig.watch_id}/pause"
    async with client.post(pause, data={}, allow_redirects=False) as response:
        assert response.status == 403
        assert "CSRF" in (await response.json())["error"]
    csrf = await csrf_of(client, rig)
    async with client.post(
        pause, data={"csrf": csrf}, headers={"Origin": "http://evil.example"}, allow_redirects=False
    ) as response:
        assert response.status == 403
    assert (await rig.store.storytellers.get(rig.watch_id)).paused is False
    async with client.post(pause, data={"csrf": csrf}, allow_redirects=False) as response:
        assert response.status == 303
    assert (await rig.store.storytellers.get(rig.watch_id)).paused is True
    [entry] = await rig.store.audit.list(action="pause")
    assert (entry.actor, entry.subject) == ("dashboard", f"storyteller {rig.watch_id}")
    api = f"{rig.base}/api/storytellers/{rig.watch_id}/resume"
    async with client.post(api, headers={"X-CSRF-Token": csrf}) as response:
        assert response.status == 200
        assert (await response.json())["paused"] is False


async def test_pause_through_the_api_stops_the_storyteller_at_once(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    await rig.one_turn()
    url = f"{rig.base}/api/storytellers/{rig.watch_id}/pause"
    async with client.post(url, headers=BEARER) as response:  # a script: no CSRF token needed
        assert response.status == 200
        assert await response.json() == {
            "id": rig.watch_id,
            "name": "Harbour Ward Watch",
            "paused": True,
        }
    turns = rig.turns()
    rig.world.emote(2003, "grabs another purse and runs!")
    # the intake drops it at the pause stage, before the backlog
    await rig.until(lambda: rig.runtime.stats.dropped["pause"] >= 1)
    assert rig.turns() == turns
    async with client.get(f"{rig.base}/api/overview", headers=BEARER) as response:
        overview = await response.json()
    assert overview["daemon"]["dropped_at_intake"]["pause"] >= 1
    assert [s["status"] for s in overview["storytellers"] if s["id"] == rig.watch_id] == ["paused"]


async def test_world_text_is_escaped_on_every_page_and_plain_in_the_api(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    await rig.one_turn(SCRIPT_ECHO)
    runs = await RunRepository(rig.store.db).list()
    assert {r.kind for r in runs} == {"attention", "turn"}
    for path in ["/timeline", "/runs", *(f"/runs/{r.id}" for r in runs)]:
        async with client.get(rig.base + path, headers=BEARER) as response:
            assert response.status == 200, path
            page = await response.text()
        assert "<script>window.__pwned" not in page, path
        assert "<img src=x" not in page, path
        if path != "/runs":
            assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page, path
    for path in ["/", "/costs", "/situations?q=quay", "/memories", "/runs?run=turn"]:
        async with client.get(rig.base + path, headers=BEARER) as response:
            assert response.status == 200, path
    async with client.get(f"{rig.base}/api/timeline", headers=BEARER) as response:
        entries = (await response.json())["entries"]
    texts = [e["text"] for entry in entries for e in entry["events"]]
    assert any("<script>window.__pwned = 1</script>" in t for t in texts)


async def test_the_run_inspector_shows_the_turn_and_its_tool_calls(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    await rig.one_turn()
    turn = next(r for r in await RunRepository(rig.store.db).list() if r.kind == "turn")
    async with client.get(f"{rig.base}/api/runs/{turn.id}", headers=BEARER) as response:
        detail = await response.json()
    assert detail["replay"] == f"storyteller runs replay {turn.id}"
    names = [c["name"] for r in detail["rounds"] for c in r["calls"]]
    assert names == ["CreateSituation", "EchoToRoom", "Noop"]
    assert detail["run"]["usage"]["input_tokens"] == 2400
    assert [r["kind"] for r in detail["related"]] == ["attention"]
    async with client.get(f"{rig.base}/runs/{turn.id}", headers=BEARER) as response:
        page = await response.text()
    assert "Cutpurse on the quay" in page and "EchoToRoom" in page
    assert f"storyteller runs replay {turn.id}" in page


async def test_the_policy_page_shows_who_tried_to_dictate_what(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    # The scripted turn echoes "A watch whistle shrills along the quay.": said first by a
    # player, the echo repeats their words and the policy refuses it.
    await rig.one_turn("cups her hands: a watch whistle shrills along the quay, I swear!")
    async with client.get(f"{rig.base}/api/policy?hours=6", headers=BEARER) as response:
        report = await response.json()
    assert (report["hours"], report["refused"], report["parked"]) == (6, 1, 0)
    assert report["by_rule"] == {"dictated": 1} and report["by_tool"] == {"EchoToRoom": 1}
    assert report["by_storyteller"] == {"Harbour Ward Watch": 1}
    assert report["by_character"] == {"#2003": {"refused": 1, "rules": {"dictated": 1}}}
    async with client.get(f"{rig.base}/policy", headers=BEARER) as response:
        page = await response.text()
    assert response.status == 200 and "#2003" in page and "dictated 1" in page


async def test_bad_input_is_one_line_naming_the_problem(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    cases = {
        "/api/runs?before=soon": "'before' must be a whole number",
        "/api/costs?hours=9999": "'hours' must be between 1 and 336",
        "/api/runs?run=dance": "'run' must be one of attention, turn",
        "/api/runs/999999": "No run with id 999999",
    }
    for path, message in cases.items():
        async with client.get(rig.base + path, headers=BEARER) as response:
            assert response.status in (400, 404), path
            assert message in (await response.json())["error"], path
    async with client.post(f"{rig.base}/api/kill-switch", headers=BEARER, data="[]") as response:
        assert response.status == 400


async def test_the_live_stream_sends_a_new_run_without_asking_again(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    url = f"{rig.base}/api/timeline/stream"
    async with client.get(url, headers=BEARER) as response:
        assert response.headers["Content-Type"] == "text/event-stream"
        assert await response.content.readline() == b": stream open\n"
        await response.content.readline()
        await rig.one_turn()
        lines = []
        while not any(line.startswith(b"data: ") for line in lines):
            lines.append(await asyncio.wait_for(response.content.readline(), 5))
    data = json.loads(next(line for line in lines if line.startswith(b"data: "))[6:])
    assert data["kind"] == "attention" and data["events"][0]["decision"] == "interested"


async def test_without_a_token_only_a_loopback_host_name_is_answered(tmp_path: object) -> None:
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    rig = await start_rig(tmp_path, token="")
    try:
        async with aiohttp.ClientSession() as session:
            async with session.get(rig.base + "/") as response:
                assert response.status == 200
            rebound = {"Host": f"attacker.example:{rig.base.rpartition(':')[2]}"}
            async with session.get(rig.base + "/api/overview", headers=rebound) as response:
                assert response.status == 403
            async with session.get(rig.base + "/healthz", headers=rebound) as response:
                assert response.status in (200, 503)  # machines' routes answer as before
            pause = f"{rig.base}/api/storytellers/{rig.watch_id}/pause"
            async with session.post(pause) as response:  # no token: the CSRF token is the guard
                assert response.status == 403
    finally:
        await stop_rig(rig)


@pytest.mark.parametrize("path", ["/static/dashboard.css", "/static/timeline.js"])
async def test_assets_come_from_the_package(
    rig: Rig, client: aiohttp.ClientSession, path: str
) -> None:
    async with client.get(rig.base + path) as response:
        assert response.status == 200
        assert len(await response.read()) > 500


async def test_the_kill_switch_file_flag_is_flipped_from_the_api(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    kill_file = rig.db_path.with_suffix(".kill")
    url = f"{rig.base}/api/kill-switch"
    async with client.post(url, headers=BEARER, json={"on": True}) as response:
        assert await response.json() == {"on": True, "by_setting": False, "switchable": True}
    assert kill_file.exists()
    assert await rig.runtime.store.flags.on("kill_switch")  # every daemon of the database
    assert rig.runtime.runner is not None
    async with client.get(f"{rig.base}/api/overview", headers=BEARER) as response:
        assert (await response.json())["kill_switch"]["on"] is True
    async with client.post(url, headers=BEARER, json={"on": False}) as response:
        assert (await response.json())["on"] is False
    assert not kill_file.exists()
    assert not await rig.runtime.store.flags.on("kill_switch")
    async with client.post(url, headers=BEARER, json={"on": "yes"}) as response:
        assert response.status == 400


async def test_the_overview_shows_the_daemons_sharing_the_database(
    rig: Rig, client: aiohttp.ClientSession
) -> None:
    async with client.get(f"{rig.base}/api/overview", headers=BEARER) as response:
        assert (await response.json())["cluster"] is None  # no daemon ever joined a cluster
    leases = rig.runtime.store.leases
    await leases.sync()
    await leases.join("st-1", 60)
    await leases.take("st-1", 1, 60)
    async with client.get(f"{rig.base}/api/overview", headers=BEARER) as response:
        cluster = (await response.json())["cluster"]
    assert [(d["name"], d["live"], d["leases"]) for d in cluster["instances"]] == [
        ("st-1", True, 1)
    ]
    async with client.get(f"{rig.base}/", headers=BEARER) as response:
        page = await response.text()
    assert "Daemons sharing this database" in page and "st-1" in page
