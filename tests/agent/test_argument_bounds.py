"""Tool-call arguments are bounded before they are parsed, and texts before they are kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from agent_doubles import ScriptedModel, calls, execute

from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.records import TurnOutcome
from storyteller_daemon.agent.tools.arguments import MalformedArguments, parse_arguments
from storyteller_daemon.agent.tools.base import MAX_ERROR_CHARS, Tool, check_text_limits, invoke
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.argument_limits import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_DEPTH,
    TEXT_CHARS,
    TITLE_CHARS,
    nesting_depth,
)
from storyteller_daemon.domain.story_plans import PlanStep
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.errors import ToolError, ValidationError
from storyteller_daemon.testing.clock import FakeClock

DEEP = '{"Title": ' + "[" * 10_000 + "]" * 10_000 + "}"


def nested(depth: int) -> str:
    """An object whose one value is an array `depth - 1` levels deep (`depth` in all)."""
    return '{"a": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


def test_the_configured_defaults_are_the_bounds_the_parser_applies() -> None:
    limits = LimitsConfig()
    assert (limits.max_argument_chars, limits.max_argument_depth) == (
        DEFAULT_MAX_CHARS,
        DEFAULT_MAX_DEPTH,
    )


@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        ("{}", 1),
        ('{"a": [1, {"b": [2]}]}', 4),
        ('{"a": "[[[[{{{{"}', 1),
        ('{"a": "\\"[[[["}', 1),
        ('{"a": "\\\\", "b": [[1]]}', 3),
        ("[[[", 3),  # not JSON, still measured without recursion
        (DEEP, 10_001),
    ],
)
def test_nesting_is_measured_outside_string_literals(raw: str, depth: int) -> None:
    assert nesting_depth(raw) == depth


def test_ten_thousand_levels_are_refused_before_the_parser_sees_them() -> None:
    with pytest.raises(MalformedArguments, match="nest 10001 levels deep; at most 32"):
        parse_arguments(DEEP)


def test_depth_at_the_bound_parses_and_one_more_is_refused() -> None:
    assert parse_arguments(nested(32)) == {"a": json.loads(nested(32))["a"]}
    with pytest.raises(MalformedArguments, match="nest 33 levels"):
        parse_arguments(nested(33))
    assert parse_arguments(nested(5), max_depth=5)
    with pytest.raises(MalformedArguments):
        parse_arguments(nested(5), max_depth=4)


def test_size_is_checked_first() -> None:
    raw = json.dumps({"Title": "x" * 300_000})
    with pytest.raises(MalformedArguments, match=f"characters long; at most {DEFAULT_MAX_CHARS}"):
        parse_arguments(raw)
    assert parse_arguments('{"a": "xxxx"}', max_chars=13) == {"a": "xxxx"}
    with pytest.raises(MalformedArguments, match="14 characters long; at most 13"):
        parse_arguments('{"a": "xxxxx"}', max_chars=13)


@pytest.mark.parametrize("raw", ["", " ", "\n\t "])
def test_empty_arguments_are_malformed(raw: str) -> None:
    with pytest.raises(MalformedArguments, match="empty"):
        parse_arguments(raw)


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ('{"a": 1e400}', "too large"),
        ('{"a": 1' + "0" * 5000 + "}", "a number has too many digits to read"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"a": ', "Expecting value"),
    ],
)
def test_numbers_a_game_cannot_hold_and_non_objects_are_malformed(raw: str, why: str) -> None:
    with pytest.raises(MalformedArguments, match=why):
        parse_arguments(raw)


async def test_a_deep_call_in_a_turn_is_a_counted_tool_error_not_a_crash(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    model = ScriptedModel(
        calls(("CreateSituation", DEEP)), calls(("Noop", "")), calls(("Noop", {}))
    )
    loop = ToolLoop(model, LimitsConfig(), FakeClock())
    trigger = Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )
    record = await loop.run(storyteller, trigger, "Something happened.", ctx, turn_key="turn-9")
    assert record.outcome is TurnOutcome.NOOP
    assert [c.malformed for c in record.calls] == [True, True]
    first, second = (c.envelope for c in record.calls)
    assert first == {
        "ok": False,
        "error": "Malformed tool-call JSON: the arguments nest 10001 levels deep; at most 32",
    }
    assert second["error"].endswith("the arguments are empty; send a JSON object ({} for none)")
    assert await ctx.services.situations.open_universal(ctx.storyteller_id, limit=10) == []


async def test_the_configured_bounds_reach_the_turn(
    storyteller: Storyteller, ctx: ToolContext
) -> None:
    call = ("CreateSituation", {"Title": "t", "Description": "d" * 100})
    model = ScriptedModel(calls(call), calls(("Noop", {})))
    limits = LimitsConfig(max_argument_chars=80)
    trigger = Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )
    record = await ToolLoop(model, limits, FakeClock()).run(
        storyteller, trigger, "Something happened.", ctx, turn_key="turn-9"
    )
    assert record.calls[0].malformed
    assert "at most 80" in record.calls[0].envelope["error"]


# ---------------------------------------------------------------- text lengths


def _texts(properties: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every string-typed property of a schema, by limit path (``Steps[].Intent``)."""
    found: dict[str, dict[str, Any]] = {}
    for name, prop in properties.items():
        kinds = prop.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        path = f"{prefix}{name}"
        if "string" in kinds:
            found[path] = prop
        if "object" in kinds:
            found.update(_texts(prop["properties"], f"{path}."))
        if "array" in kinds and "object" in (prop["items"].get("type") or []):
            found.update(_texts(prop["items"]["properties"], f"{path}[]."))
    return found


@pytest.mark.parametrize("name", sorted(BUILTIN_TOOLS))
def test_every_text_of_a_built_in_has_one_limit_in_its_schema_and_its_check(name: str) -> None:
    tool = BUILTIN_TOOLS[name]
    texts = _texts(tool.parameters["properties"])
    assert set(tool.text_limits) == set(texts)
    for path, prop in texts.items():
        if "enum" not in prop:
            assert prop["description"].endswith(f"At most {tool.text_limits[path]} characters.")


@pytest.mark.parametrize(
    ("tool", "arguments", "error"),
    [
        (
            "CreateSituation",
            {"Title": "x" * 300_000, "Description": "d", "CharacterId": None, "RoomId": None},
            f"Property 'Title' is 300000 characters long; at most {TITLE_CHARS} are allowed.",
        ),
        (
            "CreateSituation",
            {"Title": "t", "Description": "d" * (TEXT_CHARS + 1)},
            f"Property 'Description' is {TEXT_CHARS + 1} characters long; at most {TEXT_CHARS}",
        ),
        (
            "CreateSituation",
            {"Title": ["x" * 199], "Description": "d"},  # kept as its JSON text: 203 characters
            "Property 'Title' is 203 characters long",
        ),
        (
            "CreateMemory",
            {"Id": 1001, "Title": "t", "Details": "d" * 4001, "Importance": None},
            "Property 'Details' is 4001 characters long; at most 4000",
        ),
        (
            "ClaimScene",
            {"RoomId": 101, "Minutes": None, "Reason": "r" * 201},
            "Property 'Reason' is 201 characters long; at most 200",
        ),
        (
            "SearchReferenceDocuments",
            {"Query": "q" * 5000},
            "Property 'Query' is 5000 characters long; at most 200",
        ),
    ],
)
async def test_a_text_past_its_limit_is_a_one_line_error_and_nothing_is_kept(
    tool: str, arguments: dict[str, Any], error: str, ctx: ToolContext
) -> None:
    envelope = await invoke(BUILTIN_TOOLS[tool], arguments, ctx)  # parsed, as past the bounds
    assert envelope["ok"] is False
    assert envelope["error"].startswith(error)
    assert "\n" not in envelope["error"]
    assert await ctx.services.situations.open_universal(ctx.storyteller_id, limit=10) == []
    assert await ctx.services.memories.list(ctx.storyteller_id, 1001) == []


async def test_a_text_at_its_limit_is_kept_whole(ctx: ToolContext) -> None:
    title, text = "t" * TITLE_CHARS, "d" * TEXT_CHARS
    envelope = await execute(ctx, "CreateSituation", {"Title": title, "Description": text})
    assert envelope["ok"] is True
    stored = await ctx.services.situations.get(ctx.storyteller_id, envelope["result"]["Id"])
    assert (stored.title, stored.text) == (title, text)


def test_nested_texts_are_named_by_their_place() -> None:
    steps = [
        {"Tool": "Noop", "Intent": "wait", "Arguments": None, "WaitFor": None},
        {"Tool": "Noop", "Intent": "i" * 301, "Arguments": None, "WaitFor": None},
    ]
    tool = BUILTIN_TOOLS["CreateStoryPlan"]
    with pytest.raises(
        ToolError, match=r"'Steps\[1\]\.Intent' is 301 characters long; at most 300"
    ):
        check_text_limits(tool, {"Goal": "g", "Steps": steps})
    steps[1] = {"Tool": "Noop", "Intent": "i", "WaitFor": {"Words": "w" * 250}}
    with pytest.raises(ToolError, match=r"'Steps\[1\]\.WaitFor\.Words' is 250"):
        check_text_limits(tool, {"Goal": "g", "Steps": steps})


def test_a_plan_steps_arguments_are_bounded_too() -> None:
    deep = '{"a": ' + "[" * 900 + "]" * 900 + "}"
    with pytest.raises(ValidationError, match="JSON object's text"):
        PlanStep("Noop", "wait", arguments=deep)


async def test_a_tool_error_reaches_the_model_as_one_short_line(ctx: ToolContext) -> None:
    async def echoes(arguments: dict[str, Any], ctx: ToolContext) -> None:
        raise ToolError(f"'{arguments['Text']}' is not a mud datetime:\n  expected never.")

    tool = Tool.define("Echoes", "Quotes its argument back.", echoes, {"Text": {"type": "string"}})
    short = await invoke(tool, {"Text": "soon"}, ctx)
    assert short == {"ok": False, "error": "'soon' is not a mud datetime: expected never."}
    long = await invoke(tool, {"Text": "x" * 50_000}, ctx)
    assert len(long["error"]) == MAX_ERROR_CHARS and long["error"].endswith("xxx...")
