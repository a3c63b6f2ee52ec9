"""The overview's events by stage: ignored events settled by the verdict memory are counted."""

from __future__ import annotations

from collections import Counter

from storyteller_daemon.runtime.dashboard.views import _stages


def test_events_settled_by_the_verdict_memory_are_counted_among_the_ignored() -> None:
    counts: Counter[tuple[str, str | None]] = Counter(
        {
            ("ignored", None): 5,
            ("ignored", "repeat_of:12"): 3,
            ("ignored", "repeat_of:40"): 2,
            ("ignored", "heard_elsewhere"): 4,
            ("done", "fail_open"): 1,
            ("filtered", "rule:hour-bell"): 6,
        }
    )
    stages = _stages(counts)
    assert (stages["ignored"], stages["settled"], stages["interested"]) == (14, 5, 1)
    assert stages["dropped"] == {"rule:hour-bell": 6}
