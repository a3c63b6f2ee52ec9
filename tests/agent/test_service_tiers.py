"""Work that can wait at the flex tier, and the default tier when flex is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.agent.models.service_tiers import TierFallback
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.errors import ModelFatalError, ModelTransientError
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text

FLEX = ModelRequest(model="gpt-5-mini", input=[], service_tier="flex")


async def test_a_request_without_a_tier_passes_untouched() -> None:
    model = ScriptedModel(text("ok"))
    await TierFallback(model, FakeClock()).respond(replace(FLEX, service_tier=None))
    assert [r.service_tier for r in model.requests] == [None]


@pytest.mark.parametrize(
    "refusal",
    [ModelFatalError("HTTP 400: unknown parameter service_tier"), ModelTransientError("HTTP 429")],
)
async def test_a_refused_tier_is_sent_again_at_the_default_tier_then_paused(
    refusal: Exception,
) -> None:
    clock = FakeClock()
    model = ScriptedModel(refusal, then=text("a digest"))
    tiers = TierFallback(model, clock, pause_seconds=600)
    assert (await tiers.respond(FLEX)).output_text == "a digest"
    await tiers.respond(FLEX)  # within the pause: no tier asked
    await clock.advance(601)
    await tiers.respond(FLEX)  # tried again
    assert [r.service_tier for r in model.requests] == ["flex", None, None, "flex"]


async def test_a_failure_at_the_default_tier_reaches_the_caller() -> None:
    model = ScriptedModel(ModelTransientError("HTTP 503"), ModelTransientError("HTTP 503"))
    with pytest.raises(ModelTransientError):
        await TierFallback(model, FakeClock()).respond(FLEX)


def test_the_flex_tier_costs_half() -> None:
    prices = {"gpt-5-mini": ModelPrice(input=0.25, cached_input=0.025, output=2.0)}
    usage = Usage(1000, 200, 100)
    full = cost_usd(prices, "gpt-5-mini", usage)
    assert cost_usd(prices, "gpt-5-mini", usage, "flex") == pytest.approx(full / 2)
    assert cost_usd(prices, "gpt-5-mini", usage, "default") == pytest.approx(full)
