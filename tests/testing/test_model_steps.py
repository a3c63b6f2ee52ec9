"""The ready-made steps of the scripted model: attention verdicts, routing by request kind,
cycles and a model that never answers; read back by the daemon's own verdict parser."""

from __future__ import annotations

import asyncio
import json

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec
from storyteller_daemon.agent.verdicts import parse_batch, verdict_format
from storyteller_daemon.errors import ModelTransientError
from storyteller_daemon.testing.clock import settle
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.steps import (
    IGNORED_WHY,
    attend_all,
    by_kind,
    cycle,
    event_lines,
    hang,
    verdict_json,
)

BATCH = (
    "Judge these events.\n"
    '[1] "Maren Tidewell" says: "Meet me at dusk."\n'
    '[2] "Dockhand Per" emotes: "waves."\n'
    "not an event [3]\n"
    '[4] "Wren" shouts: "thief!"'
)
NOOP_TOOL = ToolSpec("Noop", "Do nothing.", {"type": "object", "properties": {}})


def gate_request(*, debug_reasons: bool = False) -> ModelRequest:
    return ModelRequest(
        model="gpt-5-nano",
        input=[{"role": "user", "content": BATCH}],
        text_format=verdict_format(debug_reasons=debug_reasons),
    )


def turn_request(*, after_tools: bool = False) -> ModelRequest:
    items = [{"role": "user", "content": "Something happened."}]
    if after_tools:
        items += [
            {"type": "function_call", "call_id": "c1", "name": "Noop", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "{}"},
        ]
    return ModelRequest(model="gpt-5", input=items, tools=(NOOP_TOOL,))


def test_event_lines_are_read_from_request_items_and_bodies() -> None:
    lines = event_lines([{"role": "user", "content": BATCH}, {"type": "reasoning"}])
    assert [n for n, _ in lines] == [1, 2, 4]
    assert lines[2] == (4, '"Wren" shouts: "thief!"')
    assert event_lines([{"role": "user", "content": [{"type": "input_text"}]}]) == []


def test_verdicts_are_written_as_the_request_asks() -> None:
    plain = json.loads(verdict_json({1: "why"}, [2, 3, 4, 7], verdict_format()))
    assert plain == {"attend": [{"id": 1, "why": "why"}], "ignore": "2-4,7"}
    reasoned = json.loads(verdict_json({}, [2], verdict_format(debug_reasons=True)))
    assert reasoned == {"attend": [], "ignore": [{"id": 2, "why": IGNORED_WHY}]}
    assert json.loads(verdict_json({5: "x"})) == {"attend": [{"id": 5, "why": "x"}], "ignore": ""}


@pytest.mark.parametrize("debug_reasons", [False, True])
async def test_attend_all_attends_to_every_event_of_the_batch(debug_reasons: bool) -> None:
    answer = await attend_all(why="It matters.")(gate_request(debug_reasons=debug_reasons))
    reply = parse_batch(answer.output_text, ["1", "2", "4"])
    assert reply.problems == [] and reply.unresolved == []
    assert {i: (v.interested, v.reason) for i, v in reply.verdicts.items()} == {
        "1": (True, "It matters."),
        "2": (True, "It matters."),
        "4": (True, "It matters."),
    }


@pytest.mark.parametrize("debug_reasons", [False, True])
async def test_attend_all_can_pick_events_and_ignore_the_rest(debug_reasons: bool) -> None:
    picked = attend_all(why="a theft", only=lambda line: "thief" in line)
    answer = await picked(gate_request(debug_reasons=debug_reasons))
    reply = parse_batch(answer.output_text, ["1", "2", "4"])
    assert reply.problems == [] and reply.unresolved == []
    assert {i: v.interested for i, v in reply.verdicts.items()} == {
        "1": False,
        "2": False,
        "4": True,
    }
    assert reply.verdicts["4"].reason == "a theft"


async def test_by_kind_routes_attention_turns_and_later_rounds() -> None:
    model = ScriptedModel(
        then=by_kind(attention=attend_all(), turn=calls(("Noop", {})), follow_up=text("done"))
    )
    assert json.loads((await model.respond(gate_request())).output_text)["attend"]
    assert (await model.respond(turn_request())).function_calls[0].name == "Noop"
    assert (await model.respond(turn_request(after_tools=True))).output_text == "done"
    without = ScriptedModel(then=by_kind(attention=text("gate"), turn=text("turn")))
    assert (await without.respond(turn_request(after_tools=True))).output_text == "turn"
    assert (await without.respond(gate_request())).output_text == "gate"


async def test_cycle_takes_its_steps_in_turn() -> None:
    model = ScriptedModel(then=cycle(text("a"), text("b"), ModelTransientError("HTTP 503")))
    seen = []
    for _ in range(6):
        try:
            seen.append((await model.respond(turn_request())).output_text)
        except ModelTransientError:
            seen.append("fault")
    assert seen == ["a", "b", "fault"] * 2
    with pytest.raises(ValueError, match="at least one step"):
        cycle()


async def test_hang_never_answers_until_cancelled() -> None:
    model = ScriptedModel(text("first"), hang())
    await model.respond(turn_request())
    waiting = asyncio.create_task(model.respond(turn_request()))
    await settle()
    assert not waiting.done() and len(model.requests) == 2
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
