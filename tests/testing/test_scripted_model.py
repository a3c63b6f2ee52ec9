"""The shipped scripted model: answers in order, then its `then` step; faults, latency on the
given clock, held answers, waiting for requests, fresh ids for a response given twice."""

from __future__ import annotations

import asyncio

import pytest

import storyteller_daemon.testing
from storyteller_daemon.agent.models.interface import ModelRequest, ModelResponse
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


async def test_then_answers_every_request_after_the_script() -> None:
    model = ScriptedModel(text("first"), then=calls(("Noop", {})))
    assert (await model.respond(ask())).output_text == "first"
    for _ in range(3):
        assert [c.name for c in (await model.respond(ask())).function_calls] == ["Noop"]
    assert model.remaining == 0 and len(model.requests) == 4
    model.add(text("added"))
    assert (await model.respond(ask())).output_text == "added"  # the script goes first
    failing = ScriptedModel(then=ModelTransientError("HTTP 503"))
    for _ in range(2):
        with pytest.raises(ModelTransientError):
            await failing.respond(ask())


async def test_a_response_given_again_has_fresh_ids() -> None:
    noop = calls(("Noop", {}), ("Look", {"Id": 1}), reasoning=True)
    model = ScriptedModel(noop, then=noop)
    first, second = await model.respond(ask()), await model.respond(ask())
    assert first is noop
    assert second.id != first.id
    assert [c.name for c in second.function_calls] == ["Noop", "Look"]
    assert [c.arguments for c in second.function_calls] == [
        c.arguments for c in noop.function_calls
    ]
    ids = [c.call_id for c in second.function_calls]
    assert not set(ids) & {c.call_id for c in first.function_calls}
    reasoning, *echoed = second.continuation
    assert reasoning == first.continuation[0]  # not a call: kept as it was
    assert [item["call_id"] for item in echoed] == ids


def test_reasoning_puts_an_encrypted_reasoning_item_first() -> None:
    [reasoning, call] = calls(("Noop", {}), reasoning=True).continuation
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    assert call["type"] == "function_call"
    [reasoning, message] = text("hm", reasoning=True).continuation
    assert reasoning["type"] == "reasoning" and message["type"] == "message"
    assert text("", reasoning=True).continuation[0]["type"] == "reasoning"
    assert calls(("Noop", {})).continuation[0]["type"] == "function_call"


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


async def test_latency_can_change_between_requests() -> None:
    clock = FakeClock()
    model = ScriptedModel(then=text("ok"), sleep=clock.advance)  # each answer moves the clock
    for seconds in (1.5, 0.25):
        model.latency = seconds
        await model.respond(ask())
    assert clock.monotonic() == 1.75


async def test_held_requests_are_answered_on_release() -> None:
    model = ScriptedModel(then=text("ok"))
    model.hold()
    answers = [asyncio.create_task(model.respond(ask())) for _ in range(3)]
    async with asyncio.timeout(5):
        await model.wait_for_requests(3)
    await settle()
    assert not any(a.done() for a in answers)
    model.release()
    assert [(await a).output_text for a in answers] == ["ok"] * 3
    assert (await model.respond(ask())).output_text == "ok"  # released for good


async def test_waiting_for_requests_returns_once_enough_have_come() -> None:
    model = ScriptedModel(then=text("ok"))
    waiting = asyncio.create_task(model.wait_for_requests(2))
    await model.respond(ask())
    await settle()
    assert not waiting.done()
    await model.respond(ask())
    async with asyncio.timeout(5):
        await waiting


def test_every_double_is_exported_from_the_package() -> None:
    exported = storyteller_daemon.testing.__all__
    assert "ScriptedModel" in exported and "InstrumentedWorld" in exported
    assert all(getattr(storyteller_daemon.testing, name) for name in exported)
