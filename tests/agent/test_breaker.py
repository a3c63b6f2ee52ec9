"""The circuit breaker: a model the endpoint refused is not called again until a pause ends."""

from __future__ import annotations

import pytest

from storyteller_daemon.agent.models.breaker import CircuitBreaker
from storyteller_daemon.agent.models.interface import ModelRequest
from storyteller_daemon.errors import ModelFatalError, ModelTransientError
from storyteller_daemon.testing import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text

PAUSE = 300.0


def request(model: str = "gpt-5") -> ModelRequest:
    return ModelRequest(model=model, input=[])


def refused(status: int) -> ModelFatalError:
    return ModelFatalError(f"endpoint: HTTP {status}: no", status=status)


async def test_a_refused_key_pauses_the_model_then_one_request_tries_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock()
    endpoint = ScriptedModel(refused(401), text("ok"), text("ok"))
    breaker = CircuitBreaker(endpoint, pause_seconds=PAUSE, clock=clock)
    with pytest.raises(ModelFatalError, match="HTTP 401"):
        await breaker.respond(request())
    assert breaker.paused("gpt-5") == PAUSE
    await clock.advance(100.0)
    with pytest.raises(ModelFatalError, match="not sent: requests for gpt-5 are paused for 200 s"):
        await breaker.respond(request())
    assert [r.model for r in endpoint.requests] == ["gpt-5"]  # the second one never left
    assert (await breaker.respond(request("gpt-5-mini"))).output_text == "ok"  # other models go
    await clock.advance(PAUSE - clock.monotonic())
    assert (await breaker.respond(request())).output_text == "ok"  # tried again, and closed
    assert breaker.paused("gpt-5") == 0
    messages = [r.getMessage() for r in caplog.records]
    assert sum("paused for 300 s" in m for m in messages) == 1
    assert any("accepts requests for gpt-5 again" in m for m in messages)


async def test_a_refusal_after_the_pause_opens_it_again() -> None:
    clock = FakeClock()
    endpoint = ScriptedModel(refused(404), refused(404))
    breaker = CircuitBreaker(endpoint, pause_seconds=PAUSE, clock=clock)
    for moment in (0.0, PAUSE):
        await clock.advance(moment - clock.monotonic())
        with pytest.raises(ModelFatalError):
            await breaker.respond(request())
    assert breaker.paused("gpt-5") == PAUSE and len(endpoint.requests) == 2


@pytest.mark.parametrize(
    "error",
    [
        ModelFatalError("endpoint: HTTP 400: too long", status=400),
        ModelFatalError("endpoint: not a Responses-API response"),
        ModelTransientError("endpoint: HTTP 503"),
    ],
)
async def test_refusals_of_one_request_and_outages_do_not_pause(error: Exception) -> None:
    endpoint = ScriptedModel(error, text("ok"))
    breaker = CircuitBreaker(endpoint, pause_seconds=PAUSE, clock=FakeClock())
    with pytest.raises(type(error)):
        await breaker.respond(request())
    assert breaker.paused("gpt-5") == 0
    assert (await breaker.respond(request())).output_text == "ok"


async def test_a_zero_pause_never_pauses() -> None:
    endpoint = ScriptedModel(refused(401), text("ok"))
    breaker = CircuitBreaker(endpoint, pause_seconds=0, clock=FakeClock())
    with pytest.raises(ModelFatalError):
        await breaker.respond(request())
    assert (await breaker.respond(request())).output_text == "ok"
    assert len(endpoint.requests) == 2


async def test_a_401_over_http_pauses_the_model_and_sends_nothing_more() -> None:
    """The Responses adapter names the status, so a real refusal opens the breaker."""
    from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
    from storyteller_daemon.testing.responses_answers import Fault
    from storyteller_daemon.testing.responses_server import ScriptedResponsesServer

    async with ScriptedResponsesServer() as server:
        server.enqueue(Fault.status(401))
        adapter = OpenAIResponsesModel(
            api_key="sk-test-0123456789", base_url=server.base_url, max_retries=0
        )
        try:
            breaker = CircuitBreaker(adapter, pause_seconds=PAUSE, clock=FakeClock())
            for _ in range(3):
                with pytest.raises(ModelFatalError) as caught:
                    await breaker.respond(ModelRequest(model="gpt-5", input=[]))
                assert caught.value.status == 401
        finally:
            await adapter.close()
        assert len(server.requests) == 1
