"""Every rule of the tool loop, with a scripted model and a manual clock."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from agent_doubles import ScriptedModel, calls, text

from storyteller_daemon.agent.dispatch import SKIPPED_ERROR
from storyteller_daemon.agent.loop import MALFORMED_FEEDBACK, MISSING_CALL_FEEDBACK, ToolLoop
from storyteller_daemon.agent.models.interface import ModelRequest, ModelResponse, Usage
from storyteller_daemon.agent.records import TurnOutcome, TurnRecord
from storyteller_daemon.agent.tools import registry
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import (
    CustomTool,
    Heartbeat,
    ReasoningEffort,
    Storyteller,
)
from storyteller_daemon.errors import BudgetExceeded, ModelFatalError, ModelTransientError
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.steps import hang
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.sim import SimWorld

MAREN = 1001
USER = {"role": "user", "content": "Something happened."}


def heartbeat() -> Trigger:
    return Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )


def situation(title: str) -> tuple[str, dict[str, Any]]:
    return (
        "CreateSituation",
        {"Title": title, "Description": "d", "CharacterId": None, "RoomId": None},
    )


async def run(
    model: ScriptedModel,
    storyteller: Storyteller,
    ctx: ToolContext,
    *,
    trigger: Trigger | None = None,
    limits: LimitsConfig | None = None,
    clock: FakeClock | None = None,
    **options: Any,
) -> TurnRecord:
    loop = ToolLoop(model, limits or LimitsConfig(), clock or FakeClock(), **options)
    return await loop.run(
        storyteller, trigger or heartbeat(), "Something happened.", ctx, turn_key="turn-1"
    )


def outputs(request: ModelRequest) -> list[dict[str, Any]]:
    return [i for i in request.input if i.get("type") == "function_call_output"]


def envelope(item: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(item["output"]))


@pytest.mark.parametrize("names", [["Noop"], ["Noop", "noop"]])
async def test_a_noop_only_batch_ends_the_turn(
    names: list[str], storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(calls(*((n, {}) for n in names)))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.NOOP
    assert record.rounds == 1
    assert [c.envelope for c in record.calls] == [
        {"ok": True, "result": {"message": "No action taken."}},
        *([{"ok": False, "error": SKIPPED_ERROR}] if len(names) > 1 else []),
    ]


async def test_a_batch_with_more_than_noop_continues(
    storyteller: Storyteller, ctx: ToolContext, sqlite_store: Store
) -> None:
    model = ScriptedModel(calls(("Noop", {}), situation("Feud")), text("All done."))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.COMPLETED
    assert record.rounds == 2
    assert [s.title for s in await sqlite_store.situations.list(ctx.storyteller_id)] == ["Feud"]
    assert record.requests[1].response is not None
    assert record.requests[1].response["output_text"] == "All done."


async def test_noop_after_acts_that_succeeded_ends_the_turn_without_another_round(
    storyteller: Storyteller, ctx: ToolContext, sqlite_store: Store
) -> None:
    model = ScriptedModel(calls(situation("Feud"), ("noop", {})), calls(("Noop", {})))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.COMPLETED
    assert record.rounds == 1 and model.remaining == 1
    assert [s.title for s in await sqlite_store.situations.list(ctx.storyteller_id)] == ["Feud"]


@pytest.mark.parametrize(
    "first",
    [
        ("OnlinePlayers", {}),  # a look-up is made to be read
        ("ShowSituation", {"Id": 999}),  # a look-up that fails
        ("ResolveSituation", {"Id": 999, "Title": "t", "Description": "d"}),  # an act that fails
    ],
)
async def test_noop_after_a_look_up_or_a_failed_call_goes_on_to_the_next_round(
    first: tuple[str, dict[str, Any]], storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(calls(first, ("Noop", {})), calls(("Noop", {})))
    record = await run(model, storyteller, ctx)
    assert record.rounds == 2 and model.remaining == 0
    assert [envelope(o)["ok"] for o in outputs(model.requests[1])][-1] is True


async def test_missing_calls_are_retried_exactly_twice_then_the_turn_stops(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(
        text("Hmm."), text("I think..."), text("Nothing to do."), calls(("Noop", {}))
    )
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.NO_TOOL_CALL
    assert record.rounds == 3 and model.remaining == 1
    assert model.requests[0].input == [USER]
    feedback = {"role": "user", "content": MISSING_CALL_FEEDBACK}
    assert model.requests[1].input == [USER, feedback]
    assert model.requests[2].input == [USER, feedback, feedback]
    assert [r.tool_choice for r in model.requests] == ["required"] * 3
    assert [r.response["output_text"] for r in record.requests if r.response] == [
        "Hmm.", "I think...", "Nothing to do."
    ]  # fmt: skip


async def test_a_call_after_a_missing_call_retry_resets_the_count(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(text(""), text(""), calls(situation("A")), text(""))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.COMPLETED
    assert record.rounds == 4


async def test_tool_choice_is_required_until_a_call_then_auto(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(text(""), calls(situation("A")), calls(situation("B")), text(""))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.COMPLETED
    assert [r.tool_choice for r in model.requests] == ["required", "required", "auto", "auto"]
    assert all(r.parallel_tool_calls is True for r in model.requests)


async def test_malformed_json_gets_an_error_output_and_one_feedback_message(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    first = calls(("CreateSituation", "{"))
    model = ScriptedModel(first, calls(("Noop", {})))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.NOOP
    [bad, _] = record.calls
    assert bad.malformed and bad.envelope["ok"] is False
    assert bad.envelope["error"].startswith("Malformed tool-call JSON: ")
    second_input = model.requests[1].input
    appended = second_input[1 + len(first.continuation) :]
    assert len(appended) == 2
    assert appended[0]["type"] == "function_call_output" and envelope(appended[0]) == bad.envelope
    assert appended[1] == {"role": "user", "content": MALFORMED_FEEDBACK}


async def test_the_fourth_malformed_batch_in_a_row_ends_the_turn(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(*(calls(("CreateSituation", "{'bad': json}")) for _ in range(5)))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.MALFORMED_BUDGET
    assert record.rounds == 4
    feedback = [i for i in model.requests[3].input if i.get("content") == MALFORMED_FEEDBACK]
    assert len(feedback) == 3


async def test_a_malformed_noop_still_ends_the_turn(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(calls(("Noop", "{")))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.NOOP
    assert record.calls[0].malformed


async def test_a_clean_batch_resets_the_malformed_count(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    malformed = [calls(("CreateSituation", "not json")) for _ in range(5)]
    model = ScriptedModel(malformed[0], calls(situation("A")), *malformed[1:4], calls(("Noop", {})))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.COMPLETED
    assert record.rounds == 6


async def test_the_round_cap_ends_the_turn(storyteller: Storyteller, ctx: ToolContext) -> None:
    model = ScriptedModel(*(calls(situation(f"Thread {i}")) for i in range(20)))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.ROUND_BUDGET
    assert record.rounds == 16 and len(model.requests) == 16


async def test_the_time_budget_is_checked_before_each_round(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    clock = FakeClock()

    def slow(response: ModelResponse) -> Any:
        async def answer(request: ModelRequest) -> ModelResponse:
            await clock.advance(20)
            return response

        return answer

    model = ScriptedModel(*(slow(calls(situation(f"T{i}"))) for i in range(5)))
    record = await run(model, storyteller, ctx, clock=clock)
    assert record.outcome is TurnOutcome.TIME_BUDGET
    assert record.rounds == 2
    assert record.duration_seconds == 40


async def test_each_request_is_bounded_by_the_remaining_time(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    # The deadline runs on the injected clock: a fake one expires it without real waiting.
    clock = FakeClock()
    model = ScriptedModel(calls(situation("A")), hang())
    turn = asyncio.create_task(run(model, storyteller, ctx, clock=clock))
    await model.wait_for_requests(2)
    await clock.advance(LimitsConfig().turn_seconds)
    record = await asyncio.wait_for(turn, 5)
    assert record.outcome is TurnOutcome.TIME_BUDGET
    assert record.rounds == 2
    assert record.requests[1].error is not None and record.requests[1].error.startswith(
        "TimeoutError"
    )


async def test_a_repeated_call_is_skipped_and_an_all_skipped_round_ends_the_turn(
    storyteller: Storyteller, ctx: ToolContext, sqlite_store: Store
) -> None:
    a, b = situation("A"), situation("B")
    model = ScriptedModel(calls(a), calls(a, b), calls(b, a), calls(("Noop", {})))
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.COMPLETED
    assert record.rounds == 3 and model.remaining == 1
    assert [s.title for s in await sqlite_store.situations.list(ctx.storyteller_id)] == ["A", "B"]
    assert [(c.round, c.skipped) for c in record.calls] == [
        (1, False), (2, True), (2, False), (3, True), (3, True)
    ]  # fmt: skip
    assert record.calls[1].envelope == {"ok": False, "error": "skipped: already done in this turn"}


async def test_tools_not_offered_are_refused(
    storyteller: Storyteller, ctx: ToolContext, world: SimWorld
) -> None:
    shout = CustomTool(
        "ShoutFromCrowd", "Shout.", "CrowdShout", True, (("Room", "r"), ("Text", "t"))
    )
    broken = CustomTool("Broken", "Broken.", "BrokenProg", False, (("Text", "t"),))
    teller = replace(storyteller, custom_tools=(shout, broken))
    crime = Trigger.from_event(world.commit_crime(2004, "Theft", victim_id=MAREN))
    before = len(world.output_of(MAREN))
    model = ScriptedModel(
        calls(
            ("ShoutFromCrowd", {"Room": 101, "Text": "Thief!"}),
            ("Broken", {"Text": "x"}),
            ("Teleport", {}),
        ),
        calls(("Noop", {})),
    )
    record = await run(model, teller, ctx, trigger=crime)
    assert record.outcome is TurnOutcome.NOOP
    assert all(c.refused for c in record.calls[:3])
    assert [c.envelope["error"] for c in record.calls[:3]] == [
        "Custom tool 'ShoutFromCrowd' is offered only for room echoes and speech.",
        "Custom tool 'Broken' is invalid because its prog does not compile.",
        "Unknown function 'Teleport'.",
    ]
    assert len(world.output_of(MAREN)) == before
    offered = [t.name for t in model.requests[0].tools]
    assert "ShoutFromCrowd" not in offered and "Broken" not in offered


async def test_a_built_in_of_another_profile_is_refused(
    storyteller: Storyteller, ctx: ToolContext, world: SimWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def plans(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        raise AssertionError("must not run in an event-focused turn")

    full_only = Tool.define("CharacterPlans", "Plans.", plans)
    monkeypatch.setattr(
        registry, "BUILTIN_TOOLS", {**registry.BUILTIN_TOOLS, "CharacterPlans": full_only}
    )
    echo = Trigger.from_event(world.emote(MAREN, "waves."))
    model = ScriptedModel(calls(("CharacterPlans", {})), calls(("Noop", {})))
    record = await run(model, storyteller, ctx, trigger=echo)
    assert record.calls[0].refused
    assert (
        record.calls[0].envelope["error"]
        == "Tool 'CharacterPlans' is not available for this trigger."
    )
    assert "CharacterPlans" not in [t.name for t in model.requests[0].tools]
    heartbeat_model = ScriptedModel(calls(("Noop", {})))
    await run(heartbeat_model, storyteller, ctx)
    assert "CharacterPlans" in [t.name for t in heartbeat_model.requests[0].tools]


async def test_outputs_follow_the_calls_in_order_with_their_call_ids(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    batch = calls(
        ("OnlinePlayers", {}, "call_c"),
        (*situation("A"), "call_a"),
        ("ShowSituation", {"Id": 999}, "call_b"),
    )
    model = ScriptedModel(batch, text(""))
    await run(model, storyteller, ctx)
    second = model.requests[1].input
    assert second[: 1 + len(batch.continuation)] == [USER, *batch.continuation]
    outs = outputs(model.requests[1])
    assert [o["call_id"] for o in outs] == ["call_c", "call_a", "call_b"]
    assert [envelope(o)["ok"] for o in outs] == [True, True, False]
    assert second.index(outs[0]) > max(second.index(i) for i in batch.continuation)


async def test_a_call_without_id_or_item_gets_both(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(calls(("OnlinePlayers", {}, ""), echo_items=False), text(""))
    record = await run(model, storyteller, ctx)
    call_id = record.calls[0].call_id
    assert call_id.startswith("call_")
    second = model.requests[1].input
    assert [i.get("type") for i in second[1:]] == ["function_call", "function_call_output"]
    assert second[1]["call_id"] == second[2]["call_id"] == call_id


async def test_handler_bugs_become_error_envelopes(
    storyteller: Storyteller, ctx: ToolContext, world: SimWorld
) -> None:
    broken = InstrumentedWorld(world).fail(
        "character", RuntimeError("database password is hunter2")
    )
    model = ScriptedModel(
        calls(("CreateMemory", {"Id": MAREN, "Title": "t", "Details": "d"})), text("")
    )
    record = await run(
        model, storyteller, replace(ctx, services=replace(ctx.services, world=broken))
    )
    assert record.outcome is TurnOutcome.COMPLETED
    assert record.calls[0].envelope == {"ok": False, "error": "Tool handler error: RuntimeError."}


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (
            ModelTransientError("HTTP 429 (gave up after 2 retries)"),
            TurnOutcome.MODEL_TRANSIENT_ERROR,
        ),
        (ModelFatalError("HTTP 401: the API key was rejected"), TurnOutcome.MODEL_FATAL_ERROR),
    ],
)
async def test_model_errors_end_the_turn_with_their_outcome(
    error: Exception, outcome: TurnOutcome, storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(calls(situation("A")), error)
    record = await run(model, storyteller, ctx)
    assert record.outcome is outcome
    assert record.error == f"{type(error).__name__}: {error}"
    assert record.requests[1].error == record.error
    assert record.rounds == 2


async def test_a_request_the_budget_refuses_ends_the_turn_and_is_not_a_round(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    # The budget's door is the model seam (`MeteredModel`): a refused request raises there.
    refusal = BudgetExceeded("daily token budget of 1000 reached")
    model = ScriptedModel(calls(situation("A")), refusal)
    record = await run(model, storyteller, ctx)
    assert record.outcome is TurnOutcome.BUDGET_EXCEEDED
    assert record.rounds == 1 and len(record.requests) == 1
    assert record.error == "BudgetExceeded: daily token budget of 1000 reached"


async def test_scope_settings_per_trigger(
    storyteller: Storyteller, ctx: ToolContext, world: SimWorld
) -> None:
    teller = replace(
        storyteller,
        model="gpt-event",
        time_model="gpt-time",
        reasoning_effort=ReasoningEffort.HIGH,
        time_reasoning_effort=ReasoningEffort.LOW,
        system_prompt="You narrate the harbour.",
        time_system_prompt="You review the harbour every hour.",
    )
    hourly = ScriptedModel(calls(("Noop", {})))
    await run(hourly, teller, ctx)
    echo = ScriptedModel(calls(("Noop", {})))
    await run(echo, teller, ctx, trigger=Trigger.from_event(world.emote(MAREN, "waves.")))
    [time_request], [event_request] = hourly.requests, echo.requests
    assert (time_request.model, time_request.reasoning_effort) == ("gpt-time", "low")
    assert (event_request.model, event_request.reasoning_effort) == ("gpt-event", "high")
    assert time_request.instructions is not None and event_request.instructions is not None
    assert time_request.instructions.startswith("You review the harbour every hour.")
    assert event_request.instructions.startswith("You narrate the harbour.")
    assert "prefer Noop" in event_request.instructions
    assert "prefer Noop" not in time_request.instructions
    assert time_request.max_output_tokens == 1200


async def test_the_record_is_json_and_sums_usage(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(
        calls(situation("A"), usage=Usage(100, 20, 30, 10)),
        calls(("Noop", {}), usage=Usage(150, 100, 5, 0)),
    )
    record = await run(model, storyteller, ctx)
    assert record.usage == Usage(250, 120, 35, 10)
    data = json.loads(json.dumps(record.to_dict()))
    assert data["outcome"] == "completed" and data["rounds"] == 2
    assert data["turn_key"] == "turn-1" and data["trigger_label"] == "Heartbeat 1h"
    assert data["requests"][0]["request"]["tool_choice"] == "required"
    assert data["requests"][0]["request"]["store"] is False
    assert data["requests"][1]["usage"] == {
        "input_tokens": 150, "cached_tokens": 100, "output_tokens": 5, "reasoning_tokens": 0
    }  # fmt: skip
    assert data["calls"][0]["name"] == "CreateSituation"
    assert data["calls"][0]["envelope"]["ok"] is True


async def test_a_storyteller_without_id_or_a_blank_key_is_a_caller_error(
    storyteller: Storyteller, services: ToolContext
) -> None:
    loop = ToolLoop(ScriptedModel(), LimitsConfig(), FakeClock())
    with pytest.raises(ValueError, match="no id"):
        await loop.run(Storyteller(name="Unsaved"), heartbeat(), "x", services, turn_key="k")
    with pytest.raises(ValueError, match="turn_key"):
        await loop.run(storyteller, heartbeat(), "x", services, turn_key=" ")
