"""Percentiles for summaries and benchmarks come from `statistics.quantiles`."""

from __future__ import annotations

import pytest

from storyteller_daemon.runtime.stats import Distribution, percentile


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([], 0.95, 0.0),
        ([7.0], 0.95, 7.0),
        ([1.0, 2.0, 3.0, 4.0, 5.0], 0.5, 3.0),
        (list(map(float, range(1, 101))), 0.95, 95.05),
        ([3.0, 1.0, 2.0], 0.5, 2.0),  # order does not matter
    ],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_a_distribution_gives_percentiles_of_its_recent_observations() -> None:
    waits = Distribution((1.0, 10.0))
    for value in range(1, 21):
        waits.observe(float(value))
    assert waits.percentile(0.5) == pytest.approx(10.5)
    assert waits.counts == [1, 9, 10] and waits.count == 20
