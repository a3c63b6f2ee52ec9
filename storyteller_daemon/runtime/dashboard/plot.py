"""The cost plots' geometry: stacked hourly bars, computed here and drawn as SVG by a template.

Server-rendered SVG needs no script and no charting library, works without network, and its
labels go through the same autoescaping as the rest of the page. Coordinates are in the SVG's
own units (`WIDTH` × `HEIGHT`); the browser scales the drawing to the window.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from storyteller_daemon.domain.eval_results import EvalRound
from storyteller_daemon.storage.dashboard_queries import HourSpend

WIDTH = 960
HEIGHT = 260
LEFT = 64
"""Room for the USD axis labels."""
BOTTOM = 24
"""Room for the hour labels."""
TOP = 8
SERIES_COLOURS = 8
"""Series beyond this many share colours (the legend still names each)."""


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 × 10^n at or above `value` (the top of the axis)."""
    if value <= 0:
        return 1.0
    base = 10.0 ** math.floor(math.log10(value))
    return next(base * f for f in (1, 2, 5, 10) if base * f >= value * (1 - 1e-9))


def _plot(
    title: str,
    spend: Sequence[HourSpend],
    start: datetime,
    hours: int,
    series_of: Callable[[HourSpend], str],
) -> dict[str, Any]:
    buckets = [(start + timedelta(hours=i)).strftime("%Y-%m-%d %H") for i in range(hours)]
    index = {hour: i for i, hour in enumerate(buckets)}
    cost: dict[tuple[int, str], float] = defaultdict(float)
    totals: dict[str, float] = defaultdict(float)
    for line in spend:
        if line.hour in index:
            cost[(index[line.hour], series_of(line))] += line.cost_usd
            totals[series_of(line)] += line.cost_usd
    names = sorted(totals, key=lambda name: (-totals[name], name))
    per_hour = [sum(cost.get((i, n), 0.0) for n in names) for i in range(hours)]
    top = _nice_ceiling(max(per_hour, default=0.0))
    plot_height = HEIGHT - TOP - BOTTOM
    slot = (WIDTH - LEFT) / hours
    bars = []
    for i, hour in enumerate(buckets):
        y = float(HEIGHT - BOTTOM)
        segments = []
        for number, name in enumerate(names):
            usd = cost.get((i, name), 0.0)
            if usd <= 0:
                continue
            height = usd / top * plot_height
            y -= height
            segments.append(
                {
                    "y": round(y, 2),
                    "height": round(max(height, 0.5), 2),
                    "colour": number % SERIES_COLOURS,
                    "label": f"{hour}:00 UTC, {name}: ${usd:.4f}",
                }
            )
        bars.append(
            {
                "x": round(LEFT + i * slot + slot * 0.1, 2),
                "width": round(slot * 0.8, 2),
                "segments": segments,
            }
        )
    label_every = max(1, hours // 8)
    return {
        "title": title,
        "width": WIDTH,
        "height": HEIGHT,
        "left": LEFT,
        "baseline": HEIGHT - BOTTOM,
        "bars": bars,
        "series": [
            {"name": n, "colour": i % SERIES_COLOURS, "usd": totals[n]} for i, n in enumerate(names)
        ],
        "y_ticks": [
            {"y": round(HEIGHT - BOTTOM - f * plot_height, 2), "label": f"${top * f:.4g}"}
            for f in (0.0, 0.5, 1.0)
        ],
        "x_ticks": [
            {"x": round(LEFT + i * slot + slot / 2, 2), "label": buckets[i][11:] + "h"}
            for i in range(0, hours, label_every)
        ],
    }


def cost_plots(spend: Sequence[HourSpend], start: datetime, hours: int) -> list[dict[str, Any]]:
    """Two plots of the same hours: stacked by storyteller, and by attention against turns."""
    return [
        _plot(
            "By storyteller",
            spend,
            start,
            hours,
            lambda s: s.storyteller_name or f"#{s.storyteller_id}",
        ),
        _plot("By purpose", spend, start, hours, lambda s: s.purpose),
    ]


TREND_WIDTH = 480
TREND_HEIGHT = 120


def eval_trend(rounds: Sequence[EvalRound]) -> dict[str, Any]:
    """One bar per evaluation, oldest first, as high as the share of scenarios that passed
    (a full bar: every scenario run passed; an evaluation that ran none is a stub)."""
    plot_height = TREND_HEIGHT - TOP - BOTTOM
    slot = (TREND_WIDTH - LEFT) / max(len(rounds), 1)
    bars = []
    for i, one in enumerate(rounds):
        share = one.share
        height = max((share or 0.0) * plot_height, 1.0)
        ran = one.passed + one.failed
        bars.append(
            {
                "x": round(LEFT + i * slot + slot * 0.15, 2),
                "y": round(TREND_HEIGHT - BOTTOM - height, 2),
                "width": round(slot * 0.7, 2),
                "height": round(height, 2),
                "all_passed": share == 1.0,
                "label": f"{one.evaluated_at:%Y-%m-%d %H:%M} UTC, {one.model}: {one.passed} of "
                f"{ran} passed" + (f", {one.skipped} skipped" if one.skipped else ""),
            }
        )
    return {
        "width": TREND_WIDTH,
        "height": TREND_HEIGHT,
        "left": LEFT,
        "bars": bars,
        "y_ticks": [
            {"y": round(TREND_HEIGHT - BOTTOM - f * plot_height, 2), "label": f"{f:.0%}"}
            for f in (0.0, 0.5, 1.0)
        ],
    }
