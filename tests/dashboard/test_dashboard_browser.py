"""The dashboard in a real headless Chromium (Debian's, driven by Playwright) against a daemon on
the sim world with the scripted model.

One daemon and one browser serve the whole module; each test makes the world events it needs.
Screenshots of every page are taken at 1280×800 and at phone width; with
``STORYTELLER_SCREENSHOTS=DIR`` they are kept in DIR (``docs/dashboard`` holds the ones the
operations docs show), otherwise in a temporary folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from dashboard_rig import SCRIPT_ECHO, TOKEN, Rig, start_rig, stop_rig
from playwright.async_api import Browser, BrowserContext, Page, async_playwright, expect

from storyteller_daemon.storage.runs import RunRepository

CHROMIUM = "/usr/bin/chromium"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
WAIT_MS = 10_000

pytestmark = pytest.mark.asyncio(loop_scope="module")

if not Path(CHROMIUM).exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: `make test` installs Debian's chromium")
    pytest.skip(f"{CHROMIUM} is missing (`make test` installs it)", allow_module_level=True)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def rig(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Rig]:
    running = await start_rig(tmp_path_factory.mktemp("browser"))
    try:
        yield running
    finally:
        await stop_rig(running)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--no-proxy-server"]
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def desktop(browser: Browser, rig: Rig) -> AsyncIterator[BrowserContext]:
    """A window at 1280×800, logged in once through the form."""
    context = await browser.new_context(viewport=DESKTOP)
    page = await context.new_page()
    response = await page.goto(f"{rig.base}/costs")
    assert response is not None and response.status == 401
    await page.fill("#token", TOKEN)
    await page.click("button[type=submit]")
    await expect(page.locator("h1")).to_have_text("Costs")
    assert page.url == f"{rig.base}/costs"
    await page.close()
    try:
        yield context
    finally:
        await context.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get("STORYTELLER_SCREENSHOTS")
    folder = Path(wanted) if wanted else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def fits_the_window(page: Page) -> bool:
    """Whether the page needs no sideways scrolling (wide tables scroll inside themselves)."""
    return bool(
        await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")
    )


async def test_the_timeline_shows_a_new_decision_without_reload(
    rig: Rig, desktop: BrowserContext, shots: Path
) -> None:
    page = await desktop.new_page()
    await page.goto(f"{rig.base}/timeline")
    await expect(page.locator("#live-state")).to_contain_text(
        "new decisions appear", timeout=WAIT_MS
    )
    await page.evaluate("window.__sameDocument = true")
    before = await page.locator("li.entry").count()
    await rig.one_turn("slips a hand into Maren Tidewell's purse and runs!")
    # the attention call and the turn arrive over the stream, newest at the top
    await expect(page.locator("li.entry")).to_have_count(before + 2, timeout=WAIT_MS)
    newest = page.locator("li.entry").first
    await expect(newest).to_contain_text("EchoToRoom")
    await expect(newest.locator(".prog")).to_have_text([re.compile(r"^prog \w+$")])  # EchoToRoom's
    await expect(page.locator("li.entry.attention").first).to_contain_text("interested")
    await expect(page.locator("li.entry.attention").first).to_contain_text("a theft on the quay")
    assert await page.evaluate("window.__sameDocument") is True  # no reload happened
    await newest.locator("a").first.click()
    await expect(page.locator("h1")).to_contain_text("turn of Harbour Ward Watch")
    await page.goto(f"{rig.base}/timeline")
    await page.screenshot(path=shots / "timeline.png", full_page=True)
    await page.close()


async def test_the_run_inspector_shows_a_turns_tool_calls(
    rig: Rig, desktop: BrowserContext, shots: Path
) -> None:
    await rig.one_turn()
    turn = next(r for r in await RunRepository(rig.store.db).list() if r.kind == "turn")
    page = await desktop.new_page()
    await page.goto(f"{rig.base}/runs/{turn.id}")
    await expect(page.locator(".tool-name")).to_have_text(["CreateSituation", "EchoToRoom", "Noop"])
    await expect(page.locator(".tool-call").nth(1)).to_contain_text(
        "A watch whistle shrills along the quay."
    )
    await expect(page.locator("#replay")).to_have_text(f"storyteller runs replay {turn.id}")
    await expect(page.locator("#outcome")).to_have_text("completed")
    await page.screenshot(path=shots / "run.png", full_page=True)
    await page.close()


async def test_the_cost_plot_draws(rig: Rig, desktop: BrowserContext, shots: Path) -> None:
    await rig.one_turn()
    page = await desktop.new_page()
    await page.goto(f"{rig.base}/costs")
    bars = page.locator("svg.cost-plot").first.locator("rect.bar")
    assert await bars.count() >= 1
    box = await bars.first.bounding_box()
    assert box is not None and box["height"] > 0 and box["width"] > 0
    await expect(page.locator(".legend").first).to_contain_text("Harbour Ward Watch")
    await expect(page.locator(".legend").nth(1)).to_contain_text("attention")
    await expect(page.locator("#cached-share")).to_have_text("33%")  # 400 of 1200 per request
    await page.screenshot(path=shots / "costs.png", full_page=True)
    await page.close()


async def test_a_script_tag_in_an_echo_is_shown_as_text(
    rig: Rig, desktop: BrowserContext, shots: Path
) -> None:
    page = await desktop.new_page()
    await page.goto(f"{rig.base}/timeline")
    await expect(page.locator("#live-state")).to_contain_text(
        "new decisions appear", timeout=WAIT_MS
    )
    await rig.one_turn(SCRIPT_ECHO)
    shown = page.locator(".event-text", has_text="<script>window.__pwned = 1</script>")
    await expect(shown.first).to_be_visible(timeout=WAIT_MS)  # added live, by the script
    await page.reload()  # and rendered by the server
    await expect(shown.first).to_be_visible()
    turn = next(r for r in await RunRepository(rig.store.db).list() if r.kind == "turn")
    await page.goto(f"{rig.base}/runs/{turn.id}")
    await expect(page.locator(".event-text").first).to_contain_text("<script>")
    assert await page.evaluate("window.__pwned === undefined")
    assert await page.locator("main script, main img").count() == 0
    await page.close()


async def test_every_page_fits_a_desktop_and_a_phone(
    rig: Rig, browser: Browser, desktop: BrowserContext, shots: Path
) -> None:
    cookies = await desktop.cookies()
    phone = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    await phone.add_cookies(cookies)
    try:
        for name, path in [
            ("overview", "/"),
            ("situations", "/situations"),
            ("memories", "/memories"),
            ("runs", "/runs"),
        ]:
            page = await desktop.new_page()
            await page.goto(rig.base + path)
            assert await fits_the_window(page), path
            await page.screenshot(path=shots / f"{name}.png", full_page=True)
            await page.close()
        for name, path in [("overview", "/"), ("timeline", "/timeline"), ("costs", "/costs")]:
            page = await phone.new_page()
            response = await page.goto(rig.base + path)
            assert response is not None and response.status == 200
            assert await fits_the_window(page), path
            await page.screenshot(path=shots / f"{name}-phone.png", full_page=True)
            await page.close()
    finally:
        await phone.close()


async def test_pause_from_the_page_stops_the_storyteller(rig: Rig, desktop: BrowserContext) -> None:
    page = await desktop.new_page()
    await page.goto(f"{rig.base}/")
    card = page.locator(f"#storyteller-{rig.watch_id}")
    await expect(card.locator("[data-status]")).to_have_text("running")
    await card.locator("button[data-control]").click()
    await expect(card.locator("[data-status]")).to_have_text("paused")
    assert (await rig.store.storytellers.get(rig.watch_id)).paused is True
    turns, dropped = rig.turns(), rig.runtime.stats.dropped["pause"]
    rig.world.emote(2003, "snatches a purse from the fish stall!")
    await rig.until(lambda: rig.runtime.stats.dropped["pause"] > dropped)
    assert rig.turns() == turns
    await card.locator("button[data-control]").click()  # and resume, from the page too
    await expect(card.locator("[data-status]")).to_have_text("running")
    await rig.one_turn()
    assert rig.turns() == turns + 1
    await page.close()
