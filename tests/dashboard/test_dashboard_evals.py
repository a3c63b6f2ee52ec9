"""The dashboard's Evals page in headless Chromium: each storyteller's latest eval results and
the trend of its evaluations, from what ``storyteller eval`` kept in the database."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dashboard_rig import TOKEN, Rig
from playwright.async_api import Browser, BrowserContext, expect
from test_dashboard_browser import (  # the module's one daemon, browser and window
    PHONE,
    browser,
    desktop,
    fits_the_window,
    rig,
    shots,
)

from storyteller_daemon.domain.eval_results import EvalResult

pytestmark = pytest.mark.asyncio(loop_scope="module")
__all__ = ["browser", "desktop", "rig", "shots"]  # fixtures, imported to be found

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
WATCH = "Harbour Ward Watch"
SNEAKY = "a scenario <script>window.__pwned = 3</script>"


def _result(scenario: str, day: int, *, passed: bool = True, skipped: bool = False) -> EvalResult:
    return EvalResult(
        storyteller=WATCH,
        pack="harbour-ward",
        scenario=scenario,
        model="gpt-5-mini on [model]",
        evaluated_at=T0 + timedelta(days=day),
        runs=5,
        threshold=0.8,
        pass_rate=1.0 if passed else 0.6,
        passed=passed and not skipped,
        skipped=skipped,
        tokens=14210.0,
        usd=0.0061,
        seconds=9.8,
    )


async def test_the_evals_page_shows_the_latest_results_and_their_trend(
    rig: Rig, browser: Browser, desktop: BrowserContext, shots: Path
) -> None:
    page = await desktop.new_page()
    await page.goto(f"{rig.base}/evals")
    await expect(page.locator("#no-evals")).to_be_visible()  # nothing kept yet
    kept = rig.store.eval_results
    await kept.add([_result("thief", 0), _result(SNEAKY, 0)])
    await kept.add([_result("thief", 1), _result(SNEAKY, 1, passed=False)])
    await kept.add(
        [
            _result("thief", 2),
            _result(SNEAKY, 2, passed=False),
            _result("judgement", 2, skipped=True),
        ]
    )
    await page.reload()
    card = page.locator("section.eval").first
    await expect(card.locator("h2")).to_have_text(WATCH)
    await expect(card.locator(".eval-summary")).to_contain_text(
        "1 passed, 1 failed, 1 skipped against gpt-5-mini on [model] on 2026-11-22 09:00:00 UTC"
    )
    rows = card.locator("table.eval-scenarios tbody tr")
    await expect(rows).to_have_count(3)
    await expect(rows.nth(0)).to_contain_text(SNEAKY)  # as text, never markup
    await expect(rows.nth(0)).to_contain_text("failed")
    await expect(rows.nth(0)).to_contain_text("60%")
    await expect(rows.nth(1)).to_contain_text("skipped")
    await expect(rows.nth(2)).to_contain_text("passed")
    assert await page.evaluate("window.__pwned === undefined")
    # the trend: one bar per evaluation, oldest first; red where a scenario failed
    bars = card.locator("svg.eval-trend rect.trend-bar")
    await expect(bars).to_have_count(3)
    classes = [await bars.nth(i).get_attribute("class") for i in range(3)]
    assert classes == ["trend-bar", "trend-bar some-failed", "trend-bar some-failed"]
    heights = [float(await bars.nth(i).get_attribute("height") or 0) for i in range(3)]
    assert heights[0] == pytest.approx(2 * heights[1]) and heights[1] == heights[2]
    await expect(bars.nth(1).locator("title")).to_have_text(
        "2026-11-21 09:00 UTC, gpt-5-mini on [model]: 1 of 2 passed"
    )
    assert await fits_the_window(page)
    await page.screenshot(path=shots / "evals.png", full_page=True)
    await page.close()
    phone = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        await phone.add_cookies(await desktop.cookies())
        small = await phone.new_page()
        response = await small.goto(f"{rig.base}/evals")
        assert response is not None and response.status == 200
        assert await fits_the_window(small)
    finally:
        await phone.close()
    # the API gives the same data
    answer = await desktop.request.get(
        f"{rig.base}/api/evals", headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert answer.status == 200
    (watch,) = (await answer.json())["storytellers"]
    assert (watch["storyteller"], watch["passed"], watch["failed"]) == (WATCH, 1, 1)
    assert [s["scenario"] for s in watch["scenarios"]] == [SNEAKY, "judgement", "thief"]
    assert len(watch["trend"]["bars"]) == 3
