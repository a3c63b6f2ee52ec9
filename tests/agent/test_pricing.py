"""One price table reader: every cost in the code, the bench's included, comes from
`agent.models.pricing`, which never bills a negative uncached input."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import storyteller_daemon
from storyteller_daemon.agent.models import pricing
from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.bench import stream_report
from storyteller_daemon.bench.stand_ins import LIST_PRICES
from storyteller_daemon.config import ModelPrice

PACKAGE = Path(storyteller_daemon.__file__).parent
PRICES = {name: ModelPrice(**price) for name, price in LIST_PRICES.items()}


def _definitions(name: str) -> list[str]:
    """The modules (relative paths) defining a function called `name` (a property of that name,
    such as a run's total `cost_usd`, is a sum of bills, not a price calculation)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == name
            and not any(_is_property(d) for d in node.decorator_list)
            for node in ast.walk(tree)
        ):
            found.append(path.relative_to(PACKAGE).as_posix())
    return found


def _is_property(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "property"


def test_the_price_functions_are_defined_once() -> None:
    assert _definitions("cost_usd") == ["agent/models/pricing.py"]
    assert _definitions("price_for") == ["agent/models/pricing.py"]


def test_the_bench_prices_with_the_one_cost_function() -> None:
    assert stream_report.cost_usd is pricing.cost_usd


def test_more_cached_than_input_tokens_bills_no_negative_input() -> None:
    # A provider reporting more cached tokens than input tokens: the uncached share is 0, not
    # negative, so the bill is the cached tokens at the cached price (and never below 0).
    odd = Usage(input_tokens=100, cached_tokens=150, output_tokens=0)
    cost = stream_report.cost_usd(PRICES, "gpt-5", odd)
    assert cost == pytest.approx(150 * 0.125 / 1_000_000)
    assert pricing.cost_usd(PRICES, "gpt-5", odd, "flex") == pytest.approx(cost / 2)


def test_a_dated_model_takes_its_family_price_and_an_unknown_one_costs_nothing() -> None:
    usage = Usage(input_tokens=1_000_000, cached_tokens=0, output_tokens=1_000_000)
    assert pricing.cost_usd(PRICES, "gpt-5-mini-2025-08-07", usage) == pytest.approx(2.25)
    assert pricing.cost_usd(PRICES, "llama3.2", usage) == 0.0
