"""The shipped scripted model: answers in order, faults, latency on the given clock."""

from __future__ import annotations

import asyncio

import pytest

from storyteller_daemon.agent.model import ModelRequest, ModelResponse
from storyteller_daemon.errors import ModelTransientError
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.model import ScriptedModel, calls, text


def ask(model: str = "gpt-5") -> ModelRequest:
    return ModelRequest(model=model, input=[{"role": "user", "content": "hello"}])


async def test_steps_answer_in_order_and_every_request_is_kept() -> None:
    async def echo(request: ModelRequest) -> ModelResponse:
        return text(f"you asked {request.model}")

    model = ScriptedModel(calls(("Noop", {})), ModelTransientError("HTTP 503"), echo)
    first = await model.respond(ask())
    assert [c.name for c in first.function_calls] == ["Noop"]
    with pytest.raises(ModelTransientError):
        await model.respond(ask())
    assert (await model.respond(ask("gpt-5-mini"))).output_text == "you asked gpt-5-mini"
    assert [r.model for r in model.requests] == ["gpt-5", "gpt-5", "gpt-5-mini"]
    with pytest.raises(AssertionError, match="unscripted request #4"):
        await model.respond(ask())


async def test_latency_passes_on_the_given_clock() -> None:
    clock = FakeClock()
    model = ScriptedModel(text("slow"), latency=1.5, sleep=clock.sleep)
    answer = asyncio.create_task(model.respond(ask()))
    await settle()
    assert not answer.done()
    await clock.advance(1.4)
    assert not answer.done()
    await clock.advance(0.1)
    assert (await answer).output_text == "slow"
    assert model.remaining == 0
